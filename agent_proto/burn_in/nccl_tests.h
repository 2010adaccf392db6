// nccl-tests' `all_reduce_perf` output (the same table the other *_perf tests print) as typed
// results: the devices each rank ran on, one row per message size with out-of-place and
// in-place bus bandwidth, the out-of-bounds count and the average bus bandwidth.
#pragma once

#include "agent_proto/burn_in/parse_error.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpurent::burn_in {

// Ranks, rows and the longest strings kept; beyond them the output is refused as not real.
inline constexpr std::size_t kMaxNcclRanks = 4096;
inline constexpr std::size_t kMaxNcclRows = 4096;
inline constexpr std::size_t kMaxNcclNameBytes = 128;

// "#  Rank  0 Group  0 Pid 1623025 on host device  0 [0x1b] NVIDIA H100 80GB HBM3".
struct NcclDevice {
  int rank = 0;
  std::optional<int> group;  // older nccl-tests print no group
  std::int64_t pid = 0;
  std::string host;
  int device = 0;      // the CUDA device index on that host
  std::string bus_id;  // as printed inside the brackets: "0x1b", "0000:02:00"
  std::string model;   // "NVIDIA H100 80GB HBM3"

  bool operator==(const NcclDevice&) const = default;
};

// One half of a row: out-of-place or in-place.
struct NcclMeasurement {
  double time_us = 0;
  double algbw_gbps = 0;
  double busbw_gbps = 0;
  // The "#wrong" column: values that differed from the expected result. Absent when the run
  // did not check (-c 0 prints "N/A") or when an old nccl-tests printed the largest error as a
  // fraction ("0e+00") instead of a count.
  std::optional<std::int64_t> wrong;

  bool operator==(const NcclMeasurement&) const = default;
};

struct NcclRow {
  std::int64_t size_bytes = 0;
  std::int64_t count = 0;            // elements
  std::string type;                  // "float", "half", "bfloat16", ...
  std::optional<std::string> redop;  // "sum"; absent in the oldest layout
  std::optional<int> root;           // -1 for all_reduce; absent in older layouts
  NcclMeasurement out_of_place;
  NcclMeasurement in_place;

  bool operator==(const NcclRow&) const = default;
};

struct NcclPerfResult {
  std::vector<NcclDevice> devices;
  std::vector<NcclRow> rows;
  // "# Out of bounds values : 0 OK"; absent when the line is missing.
  std::optional<std::int64_t> out_of_bounds_values;
  double avg_bus_bandwidth_gbps = 0;  // "# Avg bus bandwidth    : 448.212"

  // Sum of the rows' #wrong counts (rows without a count add nothing).
  std::int64_t wrong_total() const;

  bool operator==(const NcclPerfResult&) const = default;
};

// Parses the output of `all_reduce_perf` (and the other *_perf tests), also as mpirun tags it
// (`[1,0]<stdout>:`), skipping NCCL INFO and other interleaved lines. Throws ParseError when
// the run did not finish (no "# Avg bus bandwidth" line, no rows), a row is malformed, or the
// output is implausibly large.
NcclPerfResult parse_nccl_perf(std::string_view text);

}  // namespace gpurent::burn_in
