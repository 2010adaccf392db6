// Webhook URLs as customers give them (untrusted input): a strict parser for http(s) URLs,
// and the address ranges a delivery must never reach unless the operator allows them
// (loopback, private, link-local and the like: a webhook must not be a way into the
// platform's own network).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

namespace gpurent::webhooks {

inline constexpr std::size_t kMaxUrlBytes = 2048;

struct WebhookUrl {
  bool https = false;
  std::string host;  // lower case; an IPv6 literal without its brackets
  std::uint16_t port = 0;
  std::string target;  // path and query, "/" at least
  // The host is an IP literal (v4 or v6), not a name to resolve.
  bool host_is_ip = false;

  // Back to text, normalised (scheme and host lower case, default port left out).
  std::string text() const;
};

struct UrlError {
  std::string reason;  // a sentence for details.reason; never echoes the URL
};

// Accepts `http://` or `https://` (any case), a host name (letters, digits, '-', '.'; at most
// 253 bytes, labels of 1 to 63), a dotted-quad IPv4 or a bracketed IPv6 literal, an optional
// port 1..65535, and an optional path and query of visible ASCII. Refuses user information
// (credentials in URLs end up in logs), fragments, spaces, control and non-ASCII bytes, and
// anything longer than kMaxUrlBytes.
std::variant<WebhookUrl, UrlError> parse_webhook_url(std::string_view text);

// An address as the resolver returns it.
struct IpAddress {
  bool v6 = false;
  std::array<std::uint8_t, 16> bytes{};  // v4 uses the first four

  static IpAddress v4_of(std::uint8_t a, std::uint8_t b, std::uint8_t c, std::uint8_t d);
};

// Parses a literal: dotted-quad IPv4 (exactly four decimal parts, no leading zeros) or IPv6
// (inet_pton's syntax). Nullopt otherwise.
std::optional<IpAddress> parse_ip(std::string_view text);

// True for the addresses a delivery must not reach: unspecified, loopback, private
// (10/8, 172.16/12, 192.168/16, fc00::/7), link-local (169.254/16, fe80::/10), shared
// address space (100.64/10), IETF protocol assignments (192.0.0/24), benchmarking
// (198.18/15), documentation, multicast, reserved (240/4) and broadcast, and IPv4 mapped,
// compatible, NAT64 or 6to4 forms of any of them.
bool is_internal_address(const IpAddress& address);

}  // namespace gpurent::webhooks
