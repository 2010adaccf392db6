// Driver, CUDA and compute-capability rules behind the incompatible_image check.
#include "inventory/compatibility.h"

#include <algorithm>
#include <array>
#include <cassert>
#include <cstddef>
#include <utility>

namespace gpurent::inventory {
namespace {

constexpr int kMaxVersionPart = 99999;
constexpr std::size_t kMaxVersionParts = 3;

// A run of ASCII digits no greater than max_value; nullopt for anything else, including an
// empty run (which is how "1..2" and "1." are refused).
std::optional<int> parse_number(std::string_view digits, int max_value) {
  if (digits.empty()) return std::nullopt;
  int value = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') return std::nullopt;
    value = value * 10 + (c - '0');
    if (value > max_value) return std::nullopt;  // stops before int can overflow
  }
  return value;
}

// The table entries are literals checked by the tests; a typo here is a programming error.
Version known_version(std::string_view text) {
  return parse_version(text).value();
}

// Transcribed from shared/reference/cuda_min_driver_linux.csv (NVIDIA CUDA Toolkit Release
// Notes, "Table 3 CUDA Toolkit and Corresponding Driver Versions", Linux x86_64 column).
struct CudaRow {
  int major;
  int minor;
  int update;
  std::string_view min_driver;
};
constexpr std::array<CudaRow, 20> kCudaRows{{
    {11, 8, 0, "520.61.05"}, {12, 0, 0, "525.60.13"},  {12, 0, 1, "525.85.12"},
    {12, 1, 0, "530.30.02"}, {12, 2, 0, "535.54.03"},  {12, 2, 2, "535.104.05"},
    {12, 3, 0, "545.23.06"}, {12, 4, 0, "550.54.14"},  {12, 4, 1, "550.54.15"},
    {12, 5, 0, "555.42.02"}, {12, 6, 0, "560.28.03"},  {12, 6, 3, "560.35.05"},
    {12, 8, 0, "570.26"},    {12, 8, 1, "570.124.06"}, {12, 9, 0, "575.51.03"},
    {12, 9, 1, "575.57.08"}, {13, 0, 0, "580.65.06"},  {13, 0, 2, "580.95.05"},
    {13, 1, 0, "590.44.01"}, {13, 2, 0, "595.45.04"},
}};

// Minor version compatibility (the CSV header): within a major, an application built with
// any minor runs on the major's first GA driver or newer, so unlisted minors get this floor.
struct CudaMajorFloor {
  int major;
  std::string_view min_driver;
};
constexpr std::array<CudaMajorFloor, 3> kCudaMajorFloors{{
    {11, "450.80.02"},
    {12, "525.60.13"},
    {13, "580.65.06"},
}};

// The compute capabilities a CUDA major.minor builds for (gpus.md): each row holds from its
// minor until the next row of the same major. Later minors of a major never drop a target,
// so a minor past the last listed one keeps that row.
struct CcSpan {
  int major;
  int from_minor;
  ComputeCapability lowest;
  ComputeCapability highest;
};
constexpr std::array<CcSpan, 6> kCcSpans{{
    {11, 0, {3, 5}, {8, 0}},
    {11, 1, {3, 5}, {8, 6}},
    {11, 8, {3, 5}, {9, 0}},   // sm_89 and sm_90 arrive
    {12, 0, {5, 0}, {9, 0}},   // sm_35/sm_37 dropped
    {12, 8, {5, 0}, {12, 0}},  // Blackwell sm_100/sm_120 arrive
    {13, 0, {7, 5}, {12, 0}},  // Turing onwards only: no Volta
}};

constexpr std::array<std::string_view, 6> kArchitectureNames{"Volta", "Turing", "Ampere",
                                                             "Ada",   "Hopper", "Blackwell"};

// "CUDA 12.4" for messages: the version as the image declared it.
std::string cuda_name(const Version& cuda) {
  return "CUDA " + cuda.str();
}

}  // namespace

std::strong_ordering operator<=>(const Version& a, const Version& b) {
  const std::size_t n = std::max(a.parts.size(), b.parts.size());
  for (std::size_t i = 0; i < n; ++i) {
    if (auto order = a.part(i) <=> b.part(i); order != 0) return order;
  }
  return std::strong_ordering::equal;
}

std::string Version::str() const {
  if (!spelling.empty()) return spelling;
  std::string out;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (i > 0) out += '.';
    out += std::to_string(parts[i]);
  }
  return out;
}

std::optional<Version> parse_version(std::string_view text) {
  Version version;
  std::string_view rest = text;
  while (true) {
    const std::size_t dot = rest.find('.');
    const auto part = parse_number(rest.substr(0, dot), kMaxVersionPart);
    if (!part || version.parts.size() == kMaxVersionParts) return std::nullopt;
    version.parts.push_back(*part);
    if (dot == std::string_view::npos) break;
    rest.remove_prefix(dot + 1);
  }
  version.spelling = std::string(text);
  return version;
}

std::string ComputeCapability::str() const {
  return std::to_string(major) + "." + std::to_string(minor);
}

std::optional<ComputeCapability> parse_compute_capability(std::string_view text) {
  const std::size_t dot = text.find('.');
  if (dot == std::string_view::npos || dot > 2) return std::nullopt;
  const std::string_view minor_text = text.substr(dot + 1);
  if (minor_text.size() != 1) return std::nullopt;
  const auto major = parse_number(text.substr(0, dot), 99);
  const auto minor = parse_number(minor_text, 9);
  if (!major || !minor) return std::nullopt;
  return ComputeCapability{*major, *minor};
}

std::string_view to_string(Architecture arch) {
  const auto index = static_cast<std::size_t>(arch);
  assert(index < kArchitectureNames.size());
  return kArchitectureNames[index];
}

std::optional<Architecture> parse_architecture(std::string_view text) {
  for (std::size_t i = 0; i < kArchitectureNames.size(); ++i) {
    if (kArchitectureNames[i] == text) return static_cast<Architecture>(i);
  }
  return std::nullopt;
}

const std::vector<CudaRelease>& cuda_releases() {
  static const std::vector<CudaRelease> releases = [] {
    std::vector<CudaRelease> out;
    out.reserve(kCudaRows.size());
    for (const CudaRow& row : kCudaRows) {
      std::string label = std::to_string(row.major) + "." + std::to_string(row.minor);
      label += row.update == 0 ? " GA" : " Update " + std::to_string(row.update);
      out.push_back(
          {row.major, row.minor, row.update, std::move(label), known_version(row.min_driver)});
    }
    return out;
  }();
  return releases;
}

std::optional<Version> min_driver_for_cuda(const Version& cuda) {
  const int major = cuda.part(0);
  const int minor = cuda.part(1);
  const int update = cuda.part(2);
  const CudaRelease* best = nullptr;
  for (const CudaRelease& release : cuda_releases()) {
    if (release.major == major && release.minor == minor && release.update <= update &&
        (best == nullptr || release.update > best->update)) {
      best = &release;
    }
  }
  if (best != nullptr) return best->min_driver;
  for (const CudaMajorFloor& floor : kCudaMajorFloors) {
    if (floor.major == major) return known_version(floor.min_driver);
  }
  return std::nullopt;
}

bool cuda_supports(const Version& cuda, ComputeCapability cc) {
  const CcSpan* span = nullptr;
  for (const CcSpan& candidate : kCcSpans) {
    if (candidate.major == cuda.part(0) && candidate.from_minor <= cuda.part(1)) {
      span = &candidate;  // rows are ordered, so the last match is the right one
    }
  }
  return span != nullptr && span->lowest <= cc && cc <= span->highest;
}

int min_driver_branch(Architecture arch) {
  switch (arch) {
    case Architecture::kVolta:
      return 384;
    case Architecture::kTuring:
      return 410;
    case Architecture::kAmpere:
      return 450;
    case Architecture::kAda:
      return 525;
    case Architecture::kHopper:
      return 525;
    case Architecture::kBlackwell:
      return 570;
  }
  assert(false && "unknown Architecture");
  return 0;
}

Verdict driver_runs_cuda(const Version& driver, const Version& cuda) {
  const std::optional<Version> needed = min_driver_for_cuda(cuda);
  if (!needed) {
    return {false, cuda_name(cuda) + " is not a known release; images may use CUDA 11, 12 or 13"};
  }
  if (driver < *needed) {
    return {false, cuda_name(cuda) + " needs driver " + needed->str() +
                       " or newer; the image has " + driver.str()};
  }
  return {};
}

Verdict image_runs_on(const Version& driver, const Version& cuda, const GpuFacts& gpu) {
  if (Verdict verdict = driver_runs_cuda(driver, cuda); !verdict) return verdict;
  if (!cuda_supports(cuda, gpu.compute_capability)) {
    return {false, cuda_name(cuda) + " cannot build for " + gpu.name + " (compute capability " +
                       gpu.compute_capability.str() + ")"};
  }
  const int branch = min_driver_branch(gpu.architecture);
  if (driver.part(0) < branch) {
    return {false, gpu.name + " (" + std::string(to_string(gpu.architecture)) +
                       ") needs driver branch R" + std::to_string(branch) +
                       " or newer; the image has " + driver.str()};
  }
  return {};
}

bool supports_bf16(ComputeCapability cc) {
  return cc >= ComputeCapability{8, 0};
}

bool supports_fp8(ComputeCapability cc) {
  return cc >= ComputeCapability{8, 9};
}

}  // namespace gpurent::inventory
