// Fuzz target: dcgmproftester's output (a captured burn-in run, written on a node a tenant had).
// Any input either parses into a result within the parser's limits (one worker per GPU and
// instance, every figure finite, >= 0 and below the bound, a printable metric), or is refused
// with a ParseError whose message is printable ASCII.
#include "agent_proto/burn_in/dcgmproftester.h"

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <set>
#include <string_view>
#include <utility>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace gpurent::burn_in;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    auto r = parse_dcgmproftester(text);
    if (r.workers.empty() || r.workers.size() > kMaxProftesterWorkers) abort();
    if (r.metric.empty() || r.metric.size() > kMaxProftesterMetricBytes) abort();
    for (unsigned char c : r.metric) {
      if (c < 0x20 || c > 0x7e) abort();
    }
    std::set<std::pair<int, int>> seen;
    for (const auto& w : r.workers) {
      if (!seen.insert({w.gpu, w.instance.value_or(-1)}).second) abort();
      if (w.gflops.empty() || w.gflops.size() > kMaxProftesterSamples) abort();
      for (double g : w.gflops) {
        if (!std::isfinite(g) || g < 0 || g >= kMaxProftesterGflops) abort();
      }
    }
  } catch (const ParseError& e) {
    for (unsigned char c : std::string_view(e.what())) {
      if (c < 0x20 || c > 0x7e) abort();
    }
  }
  return 0;
}
