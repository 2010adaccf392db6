// Reads `nvidia-smi --query-gpu=<fields> --format=csv[,noheader][,nounits]` output into
// per-GPU telemetry.
#pragma once

#include "agent_proto/telemetry.h"

#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace gpurent::agent_proto {

// A full query of every field on a 64-GPU node is a few hundred KiB; more is not nvidia-smi.
inline constexpr std::size_t kMaxQueryGpuTextBytes = 4 * 1024 * 1024;
inline constexpr std::size_t kMaxQueryGpuRows = 1024;

// Output that is not a query-gpu table (an nvidia-smi error message, a short row, a value that
// is not what its column holds). what() is one line of printable ASCII naming the row and the
// column, quoting nvidia-smi's first line when it printed an error instead of a table.
class QueryGpuParseError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// `--format=csv` output: a header line naming the fields (with units, `power.draw [W]`, unless
// `nounits` was given), then one row per GPU. Fields may come in any order and subset; the
// ones the agent knows fill GpuTelemetry (see nvidia_smi_query.cpp for the mapping) and the
// rest are ignored. `[N/A]`, `N/A`, `[Not Supported]` and other bracketed notes leave a field
// absent. Without an `index` column GPUs are numbered in row order. A header with no rows
// is a node without GPUs. Every GPU passes gpu_telemetry_from_json's checks.
std::vector<GpuTelemetry> parse_query_gpu_csv(std::string_view text);

// `--format=csv,noheader[,nounits]` output of a query for exactly `fields` (names as passed to
// --query-gpu, without units), which is how the agent asks. Empty output is a node without GPUs.
std::vector<GpuTelemetry> parse_query_gpu_csv(std::string_view text,
                                              const std::vector<std::string>& fields);

}  // namespace gpurent::agent_proto
