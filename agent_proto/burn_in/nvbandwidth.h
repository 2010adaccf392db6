// NVIDIA nvbandwidth's output as typed results: per test case ("Running
// host_to_device_memcpy_ce.") its matrices (CPU or GPU rows by GPU columns, "N/A" where a pair
// is not measured) and the SUM line nvbandwidth prints for it.
#pragma once

#include "agent_proto/burn_in/parse_error.h"

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpurent::burn_in {

inline constexpr std::size_t kMaxNvbandwidthTestCases = 256;
inline constexpr std::size_t kMaxNvbandwidthMatrixSide = 256;
inline constexpr std::size_t kMaxNvbandwidthMatricesPerCase = 8;
inline constexpr std::size_t kMaxNvbandwidthTextBytes = 160;

struct NvbandwidthMatrix {
  // The title line as printed: "memcpy CE CPU(row) -> GPU(column) bandwidth (GB/s)".
  std::string title;
  std::string unit;                  // the last parenthesised word of the title: "GB/s", "ns"
  std::vector<std::string> columns;  // column labels: "0", "1", ...
  std::vector<std::string> rows;     // row labels
  // rows x columns; nullopt where nvbandwidth printed "N/A" (a GPU with itself, a pair
  // without peer access).
  std::vector<std::vector<std::optional<double>>> cells;
  // The SUM line right after this matrix ("SUM device_to_device_bidirectional_memcpy_read_ce_read1
  // 31945.78"), when there is one.
  std::optional<std::string> sum_name;
  std::optional<double> sum;

  bool operator==(const NvbandwidthMatrix&) const = default;
};

struct NvbandwidthTestCase {
  std::string name;  // "host_to_device_memcpy_ce"
  std::vector<NvbandwidthMatrix> matrices;
  // "SUM <name> <value>", or for the bidirectional tests, which print one SUM per direction
  // and a total, "SUM <name>_total <value>". Absent when the run printed neither.
  std::optional<double> sum;

  bool operator==(const NvbandwidthTestCase&) const = default;
};

struct NvbandwidthResult {
  std::optional<std::string> version;         // "nvbandwidth Version: v0.10.0"
  std::optional<std::string> driver_version;  // "Driver Version: 595.71.05"
  std::vector<NvbandwidthTestCase> test_cases;

  bool operator==(const NvbandwidthResult&) const = default;
};

// Parses one or several concatenated nvbandwidth runs. A test case named twice (two runs of
// the same test) is kept twice, in order. Throws ParseError when no test case has a matrix or
// a sum, a matrix row does not match its header, or the output is implausibly large.
NvbandwidthResult parse_nvbandwidth(std::string_view text);

}  // namespace gpurent::burn_in
