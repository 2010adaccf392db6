// Fuzz target: the OpenSSH public key parser (text customers paste). Any input either
// parses into a key whose canonical line parses back to the same key, or is refused with
// invalid_request naming `public_key` — never another exception, a crash or a leak.
#include "core/error.h"
#include "identity/ssh_public_key.h"

#include <cstdint>
#include <cstdlib>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace gpurent;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    auto key = identity::parse_ssh_public_key(text);
    auto again = identity::parse_ssh_public_key(key.canonical());
    if (again.fingerprint != key.fingerprint || again.type != key.type || again.bits != key.bits) {
      abort();
    }
    if (key.fingerprint.rfind("SHA256:", 0) != 0) abort();
  } catch (const Error& e) {
    if (e.code() != ErrorCode::kInvalidRequest) abort();
    if (e.details().value("field", "") != "public_key") abort();
  }
  return 0;
}
