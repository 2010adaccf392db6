// Fuzz target: `nvidia-smi nvlink -s` and `-e` output (captured on a node a tenant had), each
// input through both parsers. Any input either parses into GPUs within the parsers' limits (GPU
// and link numbers unique and in bounds, printable names, speeds finite and >= 0, counts >= 0,
// no links beside a one-line answer), or is refused with a ParseError whose message is printable
// ASCII.
#include "agent_proto/burn_in/nvlink_status.h"

#include <bitset>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string_view>

namespace {

using namespace gpurent::burn_in;

void check_printable(std::string_view s) {
  for (unsigned char c : s) {
    if (c < 0x20 || c > 0x7e) abort();
  }
}

// GPU numbers unique and in bounds, names printable and bounded, link numbers unique per GPU.
template <typename Gpu>
void check_gpus(const std::vector<Gpu>& gpus) {
  if (gpus.empty() || gpus.size() > kMaxNvlinkGpus) abort();
  std::bitset<kMaxNvlinkGpus> seen;
  for (const auto& g : gpus) {
    if (g.gpu < 0 || g.gpu >= static_cast<int>(kMaxNvlinkGpus) || seen[g.gpu]) abort();
    seen[g.gpu] = true;
    if (g.name.size() > kMaxNvlinkNameBytes) abort();
    check_printable(g.name);
    if (g.links.size() > kMaxNvlinkLinksPerGpu) abort();
    std::bitset<kMaxNvlinkLinksPerGpu> links;
    for (const auto& l : g.links) {
      if (l.link < 0 || l.link >= static_cast<int>(kMaxNvlinkLinksPerGpu) || links[l.link]) abort();
      links[l.link] = true;
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    auto gpus = parse_nvlink_status(text);
    check_gpus(gpus);
    for (const auto& g : gpus) {
      if ((g.all_inactive || g.unsupported) && !g.links.empty()) abort();
      for (const auto& l : g.links) {
        if (l.gbps && (!std::isfinite(*l.gbps) || *l.gbps < 0 || *l.gbps >= kMaxNvlinkLinkGbps)) {
          abort();
        }
      }
    }
  } catch (const ParseError& e) {
    check_printable(e.what());
  }
  try {
    auto gpus = parse_nvlink_errors(text);
    check_gpus(gpus);
    for (const auto& g : gpus) {
      for (const auto& l : g.links) {
        if (l.counters.empty() || l.counters.size() > kMaxNvlinkCountersPerLink) abort();
        for (const auto& [name, count] : l.counters) {
          if (name.empty() || name.size() > kMaxNvlinkCounterNameBytes || count < 0) abort();
          check_printable(name);
        }
      }
    }
  } catch (const ParseError& e) {
    check_printable(e.what());
  }
  return 0;
}
