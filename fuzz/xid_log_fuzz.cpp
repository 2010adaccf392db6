// Fuzz target: the kernel-log XID parser (lines an agent reads from a log a tenant's code can
// write to). Any input is either skipped or yields events the control plane accepts: the JSON
// form of every event reads back equal.
#include "agent_proto/xid_log.h"

#include <cstdint>
#include <cstdlib>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace gpurent::agent_proto;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  for (const KernelLogClock& clock : {KernelLogClock{2026, std::chrono::minutes(0)},
                                      KernelLogClock{1970, std::chrono::minutes(-720)},
                                      KernelLogClock{9998, std::chrono::minutes(840)}}) {
    for (const auto& event : parse_xid_log(text, clock)) {
      if (event.xid < 1 || event.message.size() > kMaxXidMessageBytes) abort();
      try {
        auto json = nlohmann::json::parse(to_json(event).dump());
        if (!(xid_event_from_json(json, "e") == event)) abort();
      } catch (const std::exception&) {
        abort();
      }
    }
  }
  return 0;
}
