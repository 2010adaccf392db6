// Fuzz target: NVIDIA nvbandwidth's output (a captured burn-in run, written on a node a tenant
// had). Any input either parses into a result within the parser's limits whose JSON form dumps
// (printable strings, finite numbers), or is refused with a ParseError whose message is printable
// ASCII.
#include "agent_proto/burn_in/burn_in_report.h"

#include <cstdint>
#include <cstdlib>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace gpurent::burn_in;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    auto r = parse_nvbandwidth(text);
    if (r.test_cases.empty() || r.test_cases.size() > kMaxNvbandwidthTestCases) abort();
    for (const auto& c : r.test_cases) {
      if (c.matrices.empty() && !c.sum) abort();
      for (const auto& m : c.matrices) {
        if (m.columns.size() > kMaxNvbandwidthMatrixSide || m.rows.size() != m.cells.size())
          abort();
        for (const auto& row : m.cells) {
          if (row.size() != m.columns.size()) abort();
        }
      }
    }
    auto dumped = to_json(r).dump();
    if (nlohmann::json::parse(dumped) != to_json(r)) abort();
  } catch (const ParseError& e) {
    for (unsigned char c : std::string_view(e.what())) {
      if (c < 0x20 || c > 0x7e) abort();
    }
  }
  return 0;
}
