// gpu_burn's output as typed results: per GPU the last Gflop/s, error count and temperature
// its progress lines reported, and the OK / FAULTY verdict it prints when it ends.
#pragma once

#include "agent_proto/burn_in/parse_error.h"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpurent::burn_in {

inline constexpr std::size_t kMaxBurnGpus = 256;
inline constexpr std::size_t kMaxBurnNameBytes = 128;

enum class BurnVerdict { kOk, kFaulty };

// "OK", "FAULTY": as gpu_burn prints them.
std::string_view to_string(BurnVerdict verdict);

struct BurnGpu {
  int index = 0;
  std::optional<std::string> name;  // "NVIDIA GeForce RTX 4090", from "GPU 0: ... (UUID: ...)"
  // From the last progress line ("100.0%  proc'd: 636 (2085 Gflop/s)   errors: 0 ...").
  std::optional<double> gflops;
  std::optional<std::int64_t> errors;  // as printed; gpu_burn prints garbage (negative) when a
                                       // worker died
  std::optional<int> temperature_c;
  bool died = false;                   // a progress line marked the GPU "(DIED!)"
  std::optional<BurnVerdict> verdict;  // from "GPU 0: OK" / "GPU 0: FAULTY" after "Tested N GPUs:"

  bool operator==(const BurnGpu&) const = default;
};

struct GpuBurnResult {
  std::vector<BurnGpu> gpus;               // by index, 0..n-1
  bool finished = false;                   // the "Tested N GPUs:" summary was printed
  std::optional<double> progress_percent;  // of the last progress line

  bool operator==(const GpuBurnResult&) const = default;
};

// Parses gpu_burn's output, progress lines repainted with '\r' included. Throws ParseError when
// there is neither a progress line nor a verdict, a line is malformed, or the output is
// implausibly large.
GpuBurnResult parse_gpu_burn(std::string_view text);

}  // namespace gpurent::burn_in
