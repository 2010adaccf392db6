// `dcgmi diag -r N`'s boxed table as typed results: per test its verdict, the GPUs it failed
// on, and the warnings DCGM printed for it. Both layouts are read: DCGM 2.x/3.x ("| GPU Memory
// | Fail - GPU: 0 |", "Pass - All") and DCGM 4.x (a verdict line, then "GPU0: Pass" lines).
#pragma once

#include "agent_proto/burn_in/parse_error.h"

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpurent::burn_in {

inline constexpr std::size_t kMaxDiagTests = 256;
inline constexpr std::size_t kMaxDiagGpus = 1024;    // per test
inline constexpr std::size_t kMaxDiagMessages = 64;  // per test
inline constexpr std::size_t kMaxDiagMessageBytes = 2048;
inline constexpr int kMaxDiagGpuIndex = 1023;

// Ordered from best to worst: a test's verdict is the worst of its own and its GPUs'.
enum class DiagVerdict { kSkip, kPass, kWarn, kFail };

// "skip", "pass", "warn", "fail".
std::string_view to_string(DiagVerdict verdict);

struct DiagGpuVerdict {
  int gpu = 0;  // the DCGM GPU id
  DiagVerdict verdict = DiagVerdict::kPass;

  bool operator==(const DiagGpuVerdict&) const = default;
};

struct DiagMessage {
  std::string kind;  // "warning", "error" or "info", as DCGM labels it
  std::string text;  // the wrapped cell joined back into one line

  bool operator==(const DiagMessage&) const = default;
};

struct DiagTest {
  std::string name;      // as printed: "GPU Memory", "memory", "Targeted Power"
  std::string category;  // the section it is in: "Deployment", "Hardware", "Integration", ...
  DiagVerdict verdict = DiagVerdict::kPass;
  bool all_gpus = false;             // the verdict was given for all GPUs at once ("Fail - All")
  std::vector<DiagGpuVerdict> gpus;  // per-GPU verdicts, in the order printed
  std::vector<DiagMessage> messages;

  // The GPUs with a fail verdict, ascending.
  std::vector<int> failing_gpus() const;

  bool operator==(const DiagTest&) const = default;
};

struct DcgmDiagResult {
  std::optional<std::string> dcgm_version;    // "| DCGM Version | 4.2.3 |"
  std::optional<std::string> driver_version;  // "| Driver Version Detected | ... |"
  std::vector<std::string> gpu_device_ids;    // "26b9, 26b9" or "2330,2330"
  std::vector<DiagTest> tests;

  // No test failed or warned (skipped tests do not count against a run).
  bool passed() const;

  bool operator==(const DcgmDiagResult&) const = default;
};

// Parses the table; lines around it ("Successfully ran diagnostic for group.") are skipped.
// Throws ParseError when there is no test row (dcgmi printed an error instead: its first line
// is quoted), or the output is implausibly large.
DcgmDiagResult parse_dcgmi_diag(std::string_view text);

}  // namespace gpurent::burn_in
