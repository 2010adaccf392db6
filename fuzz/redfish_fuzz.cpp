// Fuzz target: a BMC's Redfish bodies (ComputerSystem, the Systems collection, ActionInfo, the
// error body), untrusted JSON from vendor firmware. Any input is either read within the
// readers' limits (strings and lists bounded, paths on the BMC) or refused with a RedfishError
// whose message is printable ASCII; nothing else is thrown and nothing crashes.
#include "bmc/redfish.h"

#include <cstdint>
#include <cstdlib>
#include <string_view>

namespace {

void check_message(const char* what) {
  for (unsigned char c : std::string_view(what)) {
    if (c < 0x20 || c > 0x7e) abort();
  }
}

void check_path(const std::string& path) {
  if (path.size() < 2 || path.size() > gpurent::bmc::kMaxRedfishStringBytes || path[0] != '/' ||
      path[1] == '/') {
    abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace gpurent::bmc;
  std::string_view body(reinterpret_cast<const char*>(data), size);
  try {
    auto s = parse_computer_system(body);
    if (s.id.empty() || s.id.size() > kMaxRedfishStringBytes) abort();
    if (s.reset) {
      check_path(s.reset->target);
      if (s.reset->action_info) check_path(*s.reset->action_info);
      std::size_t listed = s.reset->other_allowable.size();
      if (s.reset->allowable) listed += s.reset->allowable->size();
      if (listed > kMaxRedfishListItems) abort();
      if (!s.reset->allowable && !s.reset->other_allowable.empty()) abort();
    }
  } catch (const RedfishError& e) {
    check_message(e.what());
  }
  try {
    auto members = parse_system_collection(body);
    if (members.size() > kMaxRedfishListItems) abort();
    for (const auto& m : members) check_path(m);
  } catch (const RedfishError& e) {
    check_message(e.what());
  }
  try {
    auto types = parse_reset_action_info(body);
    if (types && types->size() > kMaxRedfishListItems) abort();
  } catch (const RedfishError& e) {
    check_message(e.what());
  }
  try {
    check_message(redfish_error_sentence(body).c_str());
  } catch (const RedfishError& e) {
    check_message(e.what());
  }
  return 0;
}
