// Whether a node's burn-in passes (DESIGN.md "Health", issue "Hardware you can trust"): each
// measured figure beside what the model promises and what the fleet's other nodes of the
// model measured. Pure; the lifecycle applies the verdict (a failed handover drains the node
// and moves the rental, a failed release burn-in alerts the operator).
//
// What each figure is held to:
// - a GPU's matmul throughput (gpu_burn's Gflop/s): the node's own median and the fleet's median
//   for the model, whichever is higher; gpu_burn's figure depends on its build and flags, so it
//   has no nominal value to meet, but one GPU far below its siblings is the classic slow GPU;
// - a GPU pair's peer copy bandwidth on an NVSwitch board: the model's NVLink bandwidth per
//   direction (the catalog's per-GPU figure halved), and the node's and the fleet's medians;
// - NCCL all-reduce bus bandwidth: the same nominal figure and the fleet's median; any wrong or
//   out-of-bounds value fails;
// - a GPU's fp16 tensor GEMM (dcgmproftester -t 1004) and memory copy bandwidth (nvbandwidth's
//   device_local_copy): the node's and the fleet's medians, as gpu_burn's;
// - a GPU's NVLinks: fewer links up than the most any GPU of the node has fails it (all down
//   too); error counters above zero are a warning;
// - gpu_burn's FAULTY or a dead worker fails the GPU, a DCGM test that failed fails, one that
//   warned is reported; an output that did not parse fails (a tool that ran and printed garbage
//   is not a healthy node).
#pragma once

#include "agent_proto/burn_in/figures.h"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

namespace gpurent::inventory {

// What the model promises, from the catalog.
struct BurnInNominal {
  // Peer bandwidth per direction between any two GPUs, GB/s; only on boards where every pair
  // is NVLinked (NVSwitch). Absent: pairs are held to the medians only.
  std::optional<double> link_gbps;
  bool all_pairs_nvlinked = false;
};

// The medians of the latest passed burn-ins of the model's other nodes; absent with none.
struct BurnInMedians {
  std::optional<double> gflops;
  std::optional<double> link_gbps;
  std::optional<double> nccl_bus_gbps;
  std::optional<double> tensor_tflops;
  std::optional<double> memory_gbps;
};

struct BurnInThresholds {
  double of_nominal = 0.7;  // a figure below this share of the nominal one fails
  double of_median = 0.8;   // a figure below this share of its median fails
};

struct BurnInFinding {
  std::string check;    // "gpu_throughput", "gpu_tensor_throughput", "gpu_memory_bandwidth",
                        // "gpu_burn", "nvlink", "nvlink_errors", "peer_bandwidth",
                        // "nccl_bus_bandwidth", "nccl_correctness", "dcgm", "tool_output",
                        // "measured"
  std::string subject;  // "gpu3", "gpu1-gpu2", "node", a DCGM test's name
  bool failed = false;
  bool warning = false;
  std::optional<double> measured;
  std::optional<double> expected;  // the figure it was held to
  std::string unit;                // of measured and expected: "Gflop/s", "GB/s"; "" for none
  std::string detail;              // one sentence for the operator and the tenant

  bool operator==(const BurnInFinding&) const = default;
};

struct BurnInVerdict {
  bool passed = true;
  std::vector<BurnInFinding> findings;  // failures and warnings first, then what passed
  // The failures in one line ("gpu3 matmul 20000 Gflop/s, below 32000 (0.8 of the median
  // 40000); …"), empty when it passed.
  std::string summary() const;
};

BurnInVerdict judge_burn_in(const burn_in::BurnInFigures& figures, const BurnInNominal& nominal,
                            const BurnInMedians& medians, const BurnInThresholds& thresholds = {});

// The GPUs' memory errors during the burn-in, from the node's telemetry (one object per GPU,
// agent_proto/telemetry.h) before it started and when it was judged: an uncorrectable error
// that appeared, or a row remap that failed, fails the GPU; corrected errors that appeared are
// a warning. Added to `verdict` (which fails when any of them does). GPUs missing from either
// side are not judged.
void add_ecc_findings(BurnInVerdict& verdict, const nlohmann::json& before,
                      const nlohmann::json& after);

// The median of `values`, absent when empty.
std::optional<double> median_of(std::vector<double> values);

}  // namespace gpurent::inventory
