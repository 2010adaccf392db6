// NVIDIA cuda-samples' p2pBandwidthLatencyTest output as typed results: the devices it lists,
// its P2P Connectivity Matrix, and every bandwidth (GB/s) and latency (us) matrix, in order.
#pragma once

#include "agent_proto/burn_in/parse_error.h"

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpurent::burn_in {

inline constexpr std::size_t kMaxP2pGpus = 256;
// One run prints 6 matrices (8 with --p2p_read); 16 leaves room for two runs pasted together.
inline constexpr std::size_t kMaxP2pMatrices = 16;
inline constexpr double kMaxP2pValue = 1e7;  // GB/s or us; HBM copies are ~3000 GB/s
inline constexpr std::size_t kMaxP2pTextBytes = 160;

struct P2pDevice {
  int index = 0;
  std::string name;  // "NVIDIA H100 80GB HBM3"
  // The bus number as printed, in hex without leading zeros ("18", "c1", "1"); absent when the
  // line has no "pciBusID:".
  std::optional<std::string> pci_bus_id;

  bool operator==(const P2pDevice&) const = default;
};

struct P2pMatrix {
  std::string
      title;  // as printed: "Unidirectional P2P=Enabled Bandwidth (P2P Writes) Matrix (GB/s)"
  std::string unit;                  // the last parenthesised word: "GB/s", "us"
  std::vector<std::string> columns;  // "0", "1", ...
  // "0", "1", ...; a latency matrix's second block, timed on the CPU (printed under a "CPU"
  // header after a blank line), follows as "CPU 0", "CPU 1", ...
  std::vector<std::string> rows;
  std::vector<std::vector<std::optional<double>>> cells;  // rows x columns; "N/A" is nullopt

  bool operator==(const P2pMatrix&) const = default;
};

struct P2pBandwidthResult {
  std::vector<P2pDevice> devices;              // in the order listed
  std::vector<std::vector<int>> connectivity;  // the P2P Connectivity Matrix (1/0), when printed
  std::vector<P2pMatrix> matrices;             // in order

  // The first matrix whose title starts with `prefix` ("Unidirectional P2P=Enabled Bandwidth"),
  // or null.
  const P2pMatrix* find(std::string_view prefix) const;

  bool operator==(const P2pBandwidthResult&) const = default;
};

// Parses one p2pBandwidthLatencyTest run (or runs of one machine pasted one after another: a
// device listed again must be listed the same, a connectivity matrix printed again must be the
// same). Lines that are none of its parts are skipped, so a log around the output reads too.
// Every matrix is square, its columns and rows 0 to N-1 in order, N the number of devices listed
// (when listed). Throws ParseError when no matrix is found, a row does not match its header, a
// matrix is left unfinished, or bounds are passed (more than kMaxP2pGpus GPUs or kMaxP2pMatrices
// matrices; a value not finite, negative or kMaxP2pValue or more; a title or device name over
// kMaxP2pTextBytes). CRLF line ends are accepted.
P2pBandwidthResult parse_p2p_bandwidth(std::string_view text);

}  // namespace gpurent::burn_in
