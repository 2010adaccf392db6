// Fuzz target: p2pBandwidthLatencyTest's output (a captured burn-in run, written on a node a tenant
// had). Any input either parses into a result within the parser's limits (square matrices labelled
// 0 to N-1, a CPU block at most, every value finite, >= 0 and below the bound, printable titles,
// devices 0 to N-1 in order, a 1/0 connectivity matrix), or is refused with a ParseError whose
// message is printable ASCII.
#include "agent_proto/burn_in/p2p_bandwidth.h"

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

namespace {

void check_printable(std::string_view s, std::size_t max_bytes) {
  if (s.size() > max_bytes) abort();
  for (unsigned char c : s) {
    if (c < 0x20 || c > 0x7e) abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace gpurent::burn_in;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    auto r = parse_p2p_bandwidth(text);
    if (r.devices.size() > kMaxP2pGpus) abort();
    for (std::size_t i = 0; i < r.devices.size(); ++i) {
      if (r.devices[i].index != static_cast<int>(i)) abort();
      if (r.devices[i].name.empty()) abort();
      check_printable(r.devices[i].name, kMaxP2pTextBytes);
      if (r.devices[i].pci_bus_id) check_printable(*r.devices[i].pci_bus_id, 4);
    }
    auto n_conn = r.connectivity.size();
    if (n_conn > kMaxP2pGpus) abort();
    if (!r.devices.empty() && n_conn != 0 && n_conn != r.devices.size()) abort();
    for (const auto& row : r.connectivity) {
      if (row.size() != n_conn) abort();
      for (int v : row) {
        if (v != 0 && v != 1) abort();
      }
    }
    if (r.matrices.empty() || r.matrices.size() > kMaxP2pMatrices) abort();
    for (const auto& m : r.matrices) {
      check_printable(m.title, kMaxP2pTextBytes);
      check_printable(m.unit, kMaxP2pTextBytes);
      if (r.find(m.title) == nullptr) abort();
      auto n = m.columns.size();
      if (n == 0 || n > kMaxP2pGpus) abort();
      if (!r.devices.empty() && n != r.devices.size()) abort();
      if (m.rows.size() != n && m.rows.size() != 2 * n) abort();
      if (m.cells.size() != m.rows.size()) abort();
      for (std::size_t i = 0; i < n; ++i) {
        if (m.columns[i] != std::to_string(i)) abort();
      }
      for (std::size_t i = 0; i < m.rows.size(); ++i) {
        auto label = (i < n ? "" : "CPU ") + std::to_string(i % n);
        if (m.rows[i] != label) abort();
        if (m.cells[i].size() != n) abort();
        for (const auto& v : m.cells[i]) {
          if (v && (!std::isfinite(*v) || *v < 0 || *v >= kMaxP2pValue)) abort();
        }
      }
    }
  } catch (const ParseError& e) {
    check_printable(e.what(), 1024);
  }
  return 0;
}
