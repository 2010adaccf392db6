// Fuzz target: the agent protocol decoder (agent_proto/messages.h), which reads what the
// other end of an agent connection sends. Any input either decodes into a message that
// encodes and decodes back to itself, or is refused with a ProtocolError whose path names
// a type (or "message") and whose text is printable ASCII (it is logged and sent back).
#include "agent_proto/messages.h"

#include <cstdint>
#include <cstdlib>
#include <string_view>

namespace {

using namespace gpurent::agent_proto;

bool printable_ascii(std::string_view s) {
  for (unsigned char c : s) {
    if (c < 0x20 || c > 0x7e) return false;
  }
  return !s.empty();
}

bool names_a_type(std::string_view path) {
  for (std::string_view root :
       {"message", "hello", "heartbeat", "task", "task_progress", "task_result", "ack", "error"}) {
    if (path == root ||
        (path.starts_with(root) && (path[root.size()] == '.' || path[root.size()] == '['))) {
      return true;
    }
  }
  return false;
}

void check_round_trip(const Message& message) {
  std::string text;
  try {
    text = encode(message);
  } catch (const ProtocolError& e) {
    // Numbers may be written longer than they were read ("1e2" as "100.0"), so a message
    // near the limit can outgrow it; nothing else may stop the encoder.
    if (e.path() != type_name(message.body)) abort();
    return;
  }
  try {
    if (!(decode(text) == message)) abort();
  } catch (...) {
    abort();  // encode() checked it already; a refusal now means the two disagree
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    check_round_trip(decode(text));
  } catch (const ProtocolError& e) {
    if (!names_a_type(e.path()) || !printable_ascii(e.what())) abort();
  } catch (...) {
    abort();
  }
  return 0;
}
