// Fuzz target: webhook URLs as customers type them (untrusted input stored and later
// connected to). The input is one URL. A URL either parses into parts that keep the
// documented rules and round-trips through its normalised text, or is refused with a
// printable reason that never echoes the input. Literal hosts are judged by the internal
// address table without crashing.
#include "webhooks/webhook_url.h"

#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <variant>

namespace {

bool printable(std::string_view s) {
  for (unsigned char c : s) {
    if (c < 0x20 || c >= 0x7f) return false;
  }
  return !s.empty();
}

void check(std::string_view input) {
  using namespace gpurent::webhooks;
  auto parsed = parse_webhook_url(input);
  if (auto* error = std::get_if<UrlError>(&parsed)) {
    if (!printable(error->reason) || error->reason.size() > 100) abort();
    return;
  }
  const auto& url = std::get<WebhookUrl>(parsed);
  if (input.size() > kMaxUrlBytes) abort();
  if (url.host.empty() || url.port == 0 || url.target.empty() || url.target[0] != '/') abort();
  if (url.target.find('#') != std::string::npos) abort();
  if (url.host.find_first_of("@/\\?# ") != std::string::npos) abort();
  for (char c : url.host) {
    if (c >= 'A' && c <= 'Z') abort();  // hosts are kept lower case
  }
  if (url.host_is_ip) {
    auto ip = parse_ip(url.host);
    if (!ip) abort();
    (void)is_internal_address(*ip);
  }
  // The normalised text is a fixed point: it parses to the same parts and prints the same.
  std::string text = url.text();
  auto again = parse_webhook_url(text);
  auto* same = std::get_if<WebhookUrl>(&again);
  if (!same) abort();
  if (same->https != url.https || same->host != url.host || same->port != url.port ||
      same->target != url.target || same->host_is_ip != url.host_is_ip || same->text() != text) {
    abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  check(std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
