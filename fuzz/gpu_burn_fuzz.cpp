// Fuzz target: gpu_burn's output (a captured burn-in run, written on a node a tenant had). Any
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
    auto r = parse_gpu_burn(text);
    if (r.gpus.size() > kMaxBurnGpus) abort();
    for (std::size_t i = 0; i < r.gpus.size(); ++i) {
      if (r.gpus[i].index != static_cast<int>(i)) abort();
      if (r.gpus[i].gflops && *r.gpus[i].gflops < 0) abort();
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
