// Which rentals fit a sized workload: the GPU models that compute in its precision, the
// smallest GPU count of each that holds it (over NVLink when training spans several GPUs),
// priced and dated from what is on offer, cheapest first; and why each other model is left
// out. Pure: catalog records and offers in, advice out (tests/recommend_test.cpp).
#pragma once

#include "advisor/sizing.h"
#include "core/clock.h"
#include "core/money.h"
#include "inventory/records.h"

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace gpurent::advisor {

// A rental shape on sale at one site (as GET /v1/offers lists it), with its earliest start
// for the interconnect a booking of it would ask.
struct Offering {
  std::string gpu_model;
  int gpu_count = 0;
  std::string interconnect;  // the nodes' shape: nvswitch | nvlink-pairs | pcie
  Money price_per_day{0, "XXX"};
  bool available_now = false;
  std::optional<Timestamp> earliest_start;  // none within the booking horizon
  std::string site;
  // The site's first bookable date (scheduler::Offer's); last, so the tests' tables that list
  // offerings in order keep their meaning.
  std::optional<std::string> earliest_date;
};

// Compute capability "8.9" as 89; 0 when it does not parse.
int compute_capability(const inventory::GpuModelRecord& model);

// Why the model cannot compute in `p`, or nullopt when it can: bf16 needs compute
// capability 8.0 (Ampere) and fp8 8.9 (Ada, Hopper), and the catalog's flag must agree.
std::optional<std::string> precision_unsupported(const inventory::GpuModelRecord& model,
                                                 Precision p);

// Whether every pair of the offering's GPUs has an NVLink path: one GPU, an NVSwitch
// board, or a bridged pair.
bool nvlink_connected(const Offering& o);

struct Recommendation {
  std::string gpu_model;
  int gpu_count = 0;
  std::string interconnect;          // as the offering's
  std::string booking_interconnect;  // what POST /v1/rentals asks: nvlink | any
  Money price_per_day{0, "XXX"};
  bool available_now = false;
  std::optional<Timestamp> earliest_start;
  std::optional<std::string> earliest_date;
  std::string site;
  int vram_per_gpu_gb = 0;
  double required_per_gpu_gb = 0;
  bool sharding_required = false;  // more than one GPU
  std::string why;
};

// A model (and the largest GPU count tried, when one was) that does not fit, and why.
struct Exclusion {
  std::string gpu_model;
  std::optional<int> gpu_count;
  std::string why;
};

struct Advice {
  std::vector<Recommendation> recommendations;  // cheapest first
  std::vector<Exclusion> excluded;              // by model name
  // No GPU of the catalog that computes in the precision holds the job alone.
  bool sharding_required = false;
};

Advice advise(const Estimate& estimate, const std::vector<inventory::GpuModelRecord>& models,
              const std::vector<Offering>& offerings, std::size_t limit = 10);

}  // namespace gpurent::advisor
