// The figures a burn-in measured, in the compact form an agent reports in its burn_in task's
// result and the server judges (inventory/burn_in_rules.h): per GPU its matmul throughput and
// gpu_burn's verdict, per GPU pair its peer copy bandwidth, the NCCL all-reduce bus bandwidth
// and its wrong values, DCGM's verdict per test, and what did not parse. Made on the node
// from the tools' parsed outputs; read back on the server strictly, as any agent input.
#pragma once

#include "agent_proto/burn_in/burn_in_report.h"
#include "agent_proto/burn_in/dcgmi_diag.h"
#include "agent_proto/burn_in/nvlink_status.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gpurent::burn_in {

// Bounds of the wire form (a task result is at most 64 KiB).
inline constexpr int kMaxFigureGpus = 64;
inline constexpr std::size_t kMaxFigureLinks = 64 * 63 / 2;
inline constexpr std::size_t kMaxFigureDiagTests = 64;
inline constexpr std::size_t kMaxFigureProblems = 8;
inline constexpr std::size_t kMaxFigureTextBytes = 300;

struct GpuFigure {
  int index = 0;
  std::optional<double> gflops;  // gpu_burn's last Gflop/s
  std::optional<bool> burn_ok;   // gpu_burn's verdict OK and no worker died
  // dcgmproftester's half-precision tensor-core GEMM (-t 1004), TFLOP/s: the median of its
  // per-second samples (a MIG GPU: its instances' medians added up).
  std::optional<double> tensor_tflops;
  // nvbandwidth's device_local_copy: a copy within the GPU's own memory, GB/s.
  std::optional<double> memory_gbps;

  bool operator==(const GpuFigure&) const = default;
};

// Peer copy bandwidth between two GPUs, GB/s, the lower of the two directions of nvbandwidth's
// device_to_device_memcpy_read_ce (or _write_ce) matrix, or without it of
// p2pBandwidthLatencyTest's unidirectional P2P=Enabled matrix; a < b.
struct LinkFigure {
  int a = 0;
  int b = 0;
  double gbps = 0;

  bool operator==(const LinkFigure&) const = default;
};

// A GPU's NVLinks as `nvidia-smi nvlink -s` and `-e` showed them (GPUs without NVLink, or in
// MIG mode, have none).
struct NvlinkFigure {
  int gpu = 0;
  int active = 0;             // links up
  std::vector<int> inactive;  // the links printed "<inactive>"
  bool all_down = false;      // the driver's "all links are inActive" answer
  // The error counters summed over its links (replay, recovery, CRC, …; see nvlink_errors());
  // absent without an `nvlink -e` capture of the GPU.
  std::optional<std::int64_t> errors;

  bool operator==(const NvlinkFigure&) const = default;
};

struct DiagFigure {
  std::string test;  // "memory", "GPU Memory"
  DiagVerdict verdict = DiagVerdict::kPass;
  std::vector<int> failing_gpus;

  bool operator==(const DiagFigure&) const = default;
};

struct BurnInFigures {
  // The outputs read: "gpu_burn", "nvbandwidth", "nccl", "dcgmi", "dcgmproftester", "nvlink",
  // "p2p_bandwidth".
  std::vector<std::string> tools;
  std::vector<GpuFigure> gpus;          // by index
  std::vector<LinkFigure> links;        // by (a, b)
  std::optional<double> nccl_bus_gbps;  // all_reduce_perf's average bus bandwidth
  std::int64_t nccl_wrong = 0;          // wrong and out-of-bounds values
  std::vector<DiagFigure> diag;
  std::vector<NvlinkFigure> nvlink;   // by GPU
  std::vector<std::string> problems;  // an output that did not parse, naming its file

  bool operator==(const BurnInFigures&) const = default;
};

// The figures of the captured outputs; one that does not parse is a problem, not an error.
BurnInFigures figures_of(const BurnInInputs& inputs);

// {"tools": [...], "gpus": [{"index", "gflops"?, "burn_ok"?, "tensor_tflops"?, "memory_gbps"?}],
//  "links": [{"a", "b", "gbps"}], "nccl_bus_gbps"?, "nccl_wrong", "diag": [{"test", "verdict",
//  "failing_gpus"}], "nvlink"?: [{"gpu", "active", "inactive", "all_down", "errors"?}],
//  "problems": [...]}. "nvlink" is left out when empty, so a server that predates it reads the
//  figures of an agent that measured none.
nlohmann::json to_json(const BurnInFigures& figures);

// The wire form back, as the server reads an agent's report: throws ParseError naming the
// member for anything to_json would not have written (unknown members, out-of-range indices,
// a pair twice, negative or non-finite figures, more than the bounds above).
BurnInFigures figures_from_json(const nlohmann::json& json);

// The error counters of one `nvidia-smi nvlink -e` link summed: replay, recovery, CRC and the
// newer drivers' error counters (malformed packets, receive errors, buffer overruns, …), not
// its packet or event counts.
std::int64_t nvlink_errors(const NvlinkLinkErrors& link);

}  // namespace gpurent::burn_in
