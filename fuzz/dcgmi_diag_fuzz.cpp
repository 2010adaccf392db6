// Fuzz target: `dcgmi diag`'s table (a captured burn-in run, written on a node a tenant had). Any
// input either parses into a result within the parser's limits whose JSON form dumps (printable
// strings, finite numbers), or is refused with a ParseError whose message is printable ASCII.
#include "agent_proto/burn_in/burn_in_report.h"

#include <cstdint>
#include <cstdlib>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace gpurent::burn_in;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    auto r = parse_dcgmi_diag(text);
    if (r.tests.empty() || r.tests.size() > kMaxDiagTests) abort();
    for (const auto& t : r.tests) {
      if (t.gpus.size() > kMaxDiagGpus || t.messages.size() > kMaxDiagMessages) abort();
      for (const auto& m : t.messages) {
        if (m.text.size() > kMaxDiagMessageBytes) abort();
      }
      for (int gpu : t.failing_gpus()) {
        if (gpu < 0 || gpu > kMaxDiagGpuIndex || t.verdict != DiagVerdict::kFail) abort();
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
