// Fuzz target: a burn_in task's result as the server reads it from an agent
// (burn_in::figures_from_json). Any JSON is either read into figures within the bounds that
// write back to the same JSON and read again to the same figures, or refused with a
// ParseError whose message is printable ASCII (it becomes the task's message and a log line).
#include "agent_proto/burn_in/figures.h"

#include <cstdint>
#include <cstdlib>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace gpurent::burn_in;
  auto json = nlohmann::json::parse(reinterpret_cast<const char*>(data),
                                    reinterpret_cast<const char*>(data) + size, nullptr, false);
  if (json.is_discarded()) return 0;
  try {
    auto f = figures_from_json(json);
    if (f.gpus.size() > static_cast<std::size_t>(kMaxFigureGpus) ||
        f.links.size() > kMaxFigureLinks || f.diag.size() > kMaxFigureDiagTests ||
        f.problems.size() > kMaxFigureProblems) {
      abort();
    }
    for (const auto& l : f.links) {
      if (l.a >= l.b || l.a < 0 || l.b >= kMaxFigureGpus || !(l.gbps >= 0)) abort();
    }
    if (figures_from_json(nlohmann::json::parse(to_json(f).dump())) != f) abort();
  } catch (const ParseError& e) {
    for (unsigned char c : std::string_view(e.what())) {
      if (c < 0x20 || c > 0x7e) abort();
    }
  }
  return 0;
}
