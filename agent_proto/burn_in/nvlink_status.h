// `nvidia-smi nvlink -s` (each link's state and speed) and `nvidia-smi nvlink -e` (each link's
// error counters) as typed results, per GPU, as the driver prints them.
#pragma once

#include "agent_proto/burn_in/parse_error.h"

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpurent::burn_in {

// Bounds on counts and on the numbers themselves: a GPU numbered 1024 or a link numbered 64 is
// refused like a 1025th GPU or a 65th link.
inline constexpr std::size_t kMaxNvlinkGpus = 1024;
inline constexpr std::size_t kMaxNvlinkLinksPerGpu = 64;
inline constexpr std::size_t kMaxNvlinkCountersPerLink = 16;
inline constexpr std::size_t kMaxNvlinkNameBytes = 200;        // GPU names
inline constexpr std::size_t kMaxNvlinkCounterNameBytes = 64;  // counter names, as keys
inline constexpr double kMaxNvlinkLinkGbps = 10000;            // per link; NVLink 5 is ~50

struct NvlinkLinkState {
  int link = 0;
  std::optional<double> gbps;  // nullopt: "<inactive>"

  bool operator==(const NvlinkLinkState&) const = default;
};

struct NvlinkGpuStatus {
  int gpu = 0;       // "GPU N:"
  std::string name;  // "NVIDIA H100 80GB HBM3", printable ASCII, at most kMaxNvlinkNameBytes
  std::vector<NvlinkLinkState> links;  // as printed, in order
  // The driver's one-line answers instead of links (a GPU with one has no links): all links
  // inactive ("Unable to retrieve NVLink information as all links are inActive"), no NVLink on
  // the device ("Device does not have or support Nvlink"), MIG mode ("... not supported ... MIG
  // mode").
  bool all_inactive = false;
  bool unsupported = false;

  bool operator==(const NvlinkGpuStatus&) const = default;
};

// Parses `nvidia-smi nvlink -s` for one or several GPUs ("GPU N: NAME (UUID: ...)" then
// "Link L: 25.781 GB/s" or "Link L: <inactive>" lines, indented with a tab and a space or with
// spaces). Other lines (shell loop banners, a poster's "...") are skipped; a GPU whose paste was
// cut keeps the links printed so far. Throws ParseError when there is no "GPU N:" header, a link
// line is malformed or comes before any header, a GPU or a link of one GPU is printed twice, a
// GPU has both links and a one-line answer, or a bound above is passed.
std::vector<NvlinkGpuStatus> parse_nvlink_status(std::string_view text);

struct NvlinkLinkErrors {
  int link = 0;
  // By the printed counter name, lower-cased, each run of other characters than letters and
  // digits as one '_', without a trailing "_errors": "replay", "recovery", "crc" (older drivers);
  // "malformed_packet", "rx", "tx_discards", "link_recovery_successful_events" (newer ones).
  std::map<std::string, std::int64_t> counters;

  bool operator==(const NvlinkLinkErrors&) const = default;
};

struct NvlinkGpuErrors {
  int gpu = 0;
  std::string name;
  std::vector<NvlinkLinkErrors> links;  // as printed, in order

  bool operator==(const NvlinkGpuErrors&) const = default;
};

// Parses `nvidia-smi nvlink -e` for one or several GPUs ("GPU N: NAME (UUID: ...)" then one
// "Link L: NAME: COUNT" line per counter, a link's lines together). A GPU that printed one of
// the one-line answers above has no links. Throws ParseError when there is no "GPU N:" header, a
// link line is malformed or comes before any header, a count is not a whole number >= 0, a GPU, a
// link of one GPU (its lines apart) or a counter of one link is printed twice, or a bound above is
// passed.
std::vector<NvlinkGpuErrors> parse_nvlink_errors(std::string_view text);

}  // namespace gpurent::burn_in
