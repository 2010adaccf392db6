// Fuzz target: nccl-tests' all_reduce_perf output (a captured burn-in run, written on a node a
// tenant had). Any input either parses into a result within the parser's limits whose JSON form
// dumps (printable strings, finite numbers), or is refused with a ParseError whose message is
// printable ASCII.
#include "agent_proto/burn_in/burn_in_report.h"

#include <cstdint>
#include <cstdlib>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace gpurent::burn_in;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    auto r = parse_nccl_perf(text);
    if (r.rows.empty() || r.rows.size() > kMaxNcclRows || r.devices.size() > kMaxNcclRanks) abort();
    if (r.avg_bus_bandwidth_gbps < 0) abort();
    for (const auto& d : r.devices) {
      if (d.host.size() > kMaxNcclNameBytes || d.model.size() > kMaxNcclNameBytes) abort();
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
