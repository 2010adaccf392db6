// Which GPU models a request can take: the model it names, or every model of the catalog
// that meets its constraints (minimum memory, bf16, fp8, architecture), cheapest first.
// Pure rules over catalog records, so the order a booking tries models in is table-tested
// without a database (scheduler/tests/model_choice_test.cpp).
#pragma once

#include "inventory/records.h"

#include <optional>
#include <string>
#include <vector>

namespace gpurent::scheduler {

// What a request asks of a GPU instead of naming a model. Absent or false: no demand.
struct ModelConstraints {
  std::optional<int> min_vram_gb;
  bool bf16 = false;                        // true: the model must compute in bf16
  bool fp8 = false;                         // true: the model must compute in fp8
  std::optional<std::string> architecture;  // "Hopper"; compared without regard to case

  bool empty() const { return !min_vram_gb && !bf16 && !fp8 && !architecture; }
};

bool meets(const inventory::GpuModelRecord& model, const ModelConstraints& constraints);

// A model with its price per day for the requested GPU count (minor units).
struct PricedModel {
  inventory::GpuModelRecord model;
  long long price_per_day_minor = 0;
};

// The models meeting the constraints, in the order a booking tries them: the cheapest rental
// first; at one price, the smaller memory (what is left suits bigger requests), then the name,
// so the order never depends on the catalog's row order.
std::vector<PricedModel> models_meeting(const ModelConstraints& constraints,
                                        std::vector<PricedModel> priced);

}  // namespace gpurent::scheduler
