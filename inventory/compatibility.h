// Whether an image (driver + CUDA release) can run on a GPU model: pure rules over the
// reference facts in shared/reference/gpus.md and cuda_min_driver_linux.csv.
#pragma once

#include <compare>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpurent::inventory {

// A dotted numeric version: drivers ("535.104.05", "570.26", "580") and CUDA ("12.4",
// "12.2.2"). Compared numerically part by part, a missing part counting as 0, so
// 580 == 580.0.0 and 570.26 < 570.124.06.
struct Version {
  std::vector<int> parts;
  // The text it was parsed from. Driver versions zero-pad ("535.104.05") and messages
  // shown to admins must repeat what they typed; empty when built from parts.
  std::string spelling;

  // Part i, or 0 when the version has fewer parts.
  int part(std::size_t i) const { return i < parts.size() ? parts[i] : 0; }
  // The spelling when there is one, else the parts joined with '.'.
  std::string str() const;

  friend std::strong_ordering operator<=>(const Version& a, const Version& b);
  friend bool operator==(const Version& a, const Version& b) { return (a <=> b) == 0; }
};

// 1 to 3 parts of ASCII digits, each 0..99999, separated by single dots; no signs, spaces
// or empty parts. Leading zeros are allowed ("05"). nullopt otherwise.
std::optional<Version> parse_version(std::string_view text);

struct ComputeCapability {
  int major = 0;
  int minor = 0;

  auto operator<=>(const ComputeCapability&) const = default;
  std::string str() const;  // "9.0"
};

// "major.minor": a major of 1-2 digits and a single-digit minor ("9.0", "12.0").
std::optional<ComputeCapability> parse_compute_capability(std::string_view text);

enum class Architecture { kVolta, kTuring, kAmpere, kAda, kHopper, kBlackwell };

std::string_view to_string(Architecture arch);  // "Volta", ..., "Blackwell"
// Exact, case-sensitive names as to_string writes them.
std::optional<Architecture> parse_architecture(std::string_view text);

// One CUDA toolkit release and the oldest Linux x86_64 driver it runs with.
struct CudaRelease {
  int major = 0;
  int minor = 0;
  int update = 0;     // "12.2 Update 2" -> 2; GA -> 0
  std::string label;  // as NVIDIA names it: "12.2 Update 2", "12.4 GA"
  Version min_driver;
};

// The rows of cuda_min_driver_linux.csv, oldest first.
const std::vector<CudaRelease>& cuda_releases();

// The minimum driver for CUDA "M.m" or "M.m.u": the listed release with the same
// major.minor and the greatest update <= u. A minor that is not listed (11.0-11.7, 12.7,
// 13.3) gets its major's minor-version-compatibility floor: 11.x 450.80.02, 12.x 525.60.13,
// 13.x 580.65.06. nullopt for a major outside 11..13.
std::optional<Version> min_driver_for_cuda(const Version& cuda);

// Whether a CUDA release can build for a compute capability (gpus.md "Which CUDA builds for
// which architecture"). False for a major outside 11..13.
bool cuda_supports(const Version& cuda, ComputeCapability cc);

// The oldest driver branch (the driver's first part) that supports an architecture; a
// conservative choice, since NVIDIA publishes no single table.
int min_driver_branch(Architecture arch);

struct GpuFacts {
  std::string name;  // catalog key, "H100-SXM5-80GB"
  Architecture architecture = Architecture::kVolta;
  ComputeCapability compute_capability;
};

// A verdict with a sentence for admins when not ok (the 422 incompatible_image details).
struct Verdict {
  bool ok = true;
  std::string reason;

  explicit operator bool() const { return ok; }
};

// Rule 1: the driver is at least the CUDA release's minimum driver. An unknown CUDA major
// is refused.
Verdict driver_runs_cuda(const Version& driver, const Version& cuda);

// Rules 1 (driver vs CUDA), 2 (CUDA builds for the GPU's compute capability) and 3 (the
// driver branch supports the GPU's architecture), checked in that order; the reason is the
// first rule that fails.
Verdict image_runs_on(const Version& driver, const Version& cuda, const GpuFacts& gpu);

bool supports_bf16(ComputeCapability cc);  // compute capability >= 8.0
bool supports_fp8(ComputeCapability cc);   // compute capability >= 8.9

}  // namespace gpurent::inventory
