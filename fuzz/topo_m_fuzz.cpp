// Fuzz target: the `nvidia-smi topo -m` parser (text admins paste and agents report). Any
// input either parses into a well-formed matrix that survives the JSON round trip, or is
// refused with a ParseError whose message is printable ASCII (it goes into a 400 body).
#include "agent_proto/topology.h"

#include <cstdint>
#include <cstdlib>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace gpurent::topology;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    Matrix m = parse_topo_m(text);
    if (m.gpus < 1 || m.gpus > kMaxGpus || static_cast<int>(m.links.size()) != m.gpus) abort();
    for (int i = 0; i < m.gpus; ++i) {
      if (static_cast<int>(m.links[i].size()) != m.gpus || m.links[i][i] != "X") abort();
      for (int j = 0; j < m.gpus; ++j) {
        if (m.links[i][j] != m.links[j][i] || !is_link_kind(m.links[i][j])) abort();
      }
    }
    if (!(matrix_from_json(to_json(m)) == m)) abort();
  } catch (const ParseError& e) {
    for (unsigned char c : std::string_view(e.what())) {
      if (c < 0x20 || c > 0x7e) abort();
    }
  }
  return 0;
}
