// NVIDIA dcgmproftester's (dcgmproftester11/12) per-second samples of a tensor-core test (-t 1004
// FP16 GEMM; 1005/1006/1007/1008 other precisions) as typed results, in GFLOP/s, per worker.
#pragma once

#include "agent_proto/burn_in/parse_error.h"

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpurent::burn_in {

inline constexpr std::size_t kMaxProftesterWorkers = 256;
inline constexpr std::size_t kMaxProftesterSamples = 100000;  // per worker
inline constexpr double kMaxProftesterGflops = 1e8;           // no GPU comes near 100 PFLOP/s
inline constexpr std::size_t kMaxProftesterMetricBytes = 64;
// A worker's GPU, MIG instance and test numbers above this are not ones DCGM prints.
inline constexpr int kMaxProftesterNumber = 99999;

// One worker process of dcgmproftester: one GPU, or with MIG one GPU instance of it.
struct ProftesterWorker {
  int gpu = 0;                  // "Worker G:I" -> G; 0 when the layout has no worker prefix
  std::optional<int> instance;  // I, when printed
  // Every sample of this worker alone, in order, as printed ("(250362.2 gflops)", "1.89e+05").
  // With MIG each instance is its own worker: a GPU's throughput is the sum of its instances'.
  std::vector<double> gflops;

  bool operator==(const ProftesterWorker&) const = default;
};

struct ProftesterResult {
  std::optional<int> test_id;  // the [1004] of the worker prefix, when printed
  std::string metric;          // "TensorEngineActive" etc., as printed on the sample lines
  std::vector<ProftesterWorker> workers;  // in order of first appearance

  bool operator==(const ProftesterResult&) const = default;
};

// Parses one run of dcgmproftester. A sample is a line ending in "(<N> gflops)" (a '.' may follow):
//   "Worker 0:1[1004]: TensorEngineActive: generated ???, dcgm 0.000 (102659.8 gflops)"
//   "Worker 0:0 [1004]: TensorEngineActive: generated ???, dcgm 0 (1.89e+05 gflops)."
//   "TensorEngineActive: generated ???, dcgm 0.000 (27450.3 gflops)"  (no worker prefix)
// Lines that are not samples are skipped. Throws ParseError when no sample line with a gflops
// figure is found (dcgmproftester prints none for some tests: no reading, not zero), a sample is
// malformed, the samples mix tests, metrics or layouts, or on implausible input (more than
// kMaxProftesterWorkers workers or kMaxProftesterSamples samples of one; a figure that is not
// finite, negative, or kMaxProftesterGflops or more).
ProftesterResult parse_dcgmproftester(std::string_view text);

}  // namespace gpurent::burn_in
