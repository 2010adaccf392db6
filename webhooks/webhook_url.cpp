// The webhook URL parser and the internal address ranges.
#include "webhooks/webhook_url.h"

#include <arpa/inet.h>

#include <charconv>

namespace gpurent::webhooks {
namespace {

char lower(char c) {
  return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
}

bool starts_with_ci(std::string_view text, std::string_view prefix) {
  if (text.size() < prefix.size()) return false;
  for (std::size_t i = 0; i < prefix.size(); ++i) {
    if (lower(text[i]) != prefix[i]) return false;
  }
  return true;
}

bool is_host_name(std::string_view host) {
  if (host.empty() || host.size() > 253) return false;
  std::size_t label = 0;
  for (std::size_t i = 0; i < host.size(); ++i) {
    char c = host[i];
    if (c == '.') {
      if (label == 0) return false;
      label = 0;
      continue;
    }
    bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
    if (!ok || ++label > 63) return false;
    // A label neither starts nor ends with '-'.
    if (c == '-' && (label == 1 || i + 1 == host.size() || host[i + 1] == '.')) return false;
  }
  // A trailing dot (an absolute name) is allowed; an empty last label otherwise is not.
  return true;
}

bool all_digits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

bool in_v4(const IpAddress& a, std::uint8_t b0, std::uint8_t b1, int prefix_bits) {
  std::uint32_t addr = (std::uint32_t(a.bytes[0]) << 24) | (std::uint32_t(a.bytes[1]) << 16) |
                       (std::uint32_t(a.bytes[2]) << 8) | a.bytes[3];
  std::uint32_t net = (std::uint32_t(b0) << 24) | (std::uint32_t(b1) << 16);
  std::uint32_t mask = prefix_bits == 0 ? 0 : ~std::uint32_t(0) << (32 - prefix_bits);
  return (addr & mask) == (net & mask);
}

bool internal_v4(const IpAddress& a) {
  const auto& b = a.bytes;
  return in_v4(a, 0, 0, 8) ||                           // "this network"
         in_v4(a, 10, 0, 8) ||                          // private
         in_v4(a, 100, 64, 10) ||                       // shared address space
         in_v4(a, 127, 0, 8) ||                         // loopback
         in_v4(a, 169, 254, 16) ||                      // link-local (cloud metadata)
         in_v4(a, 172, 16, 12) ||                       // private
         (b[0] == 192 && b[1] == 0 && b[2] == 0) ||     // IETF protocol assignments
         (b[0] == 192 && b[1] == 0 && b[2] == 2) ||     // documentation
         in_v4(a, 192, 168, 16) ||                      // private
         in_v4(a, 198, 18, 15) ||                       // benchmarking
         (b[0] == 198 && b[1] == 51 && b[2] == 100) ||  // documentation
         (b[0] == 203 && b[1] == 0 && b[2] == 113) ||   // documentation
         b[0] >= 224;                                   // multicast, reserved, broadcast
}

IpAddress embedded_v4(const IpAddress& a, std::size_t offset) {
  return IpAddress::v4_of(a.bytes[offset], a.bytes[offset + 1], a.bytes[offset + 2],
                          a.bytes[offset + 3]);
}

}  // namespace

IpAddress IpAddress::v4_of(std::uint8_t a, std::uint8_t b, std::uint8_t c, std::uint8_t d) {
  IpAddress out;
  out.bytes[0] = a;
  out.bytes[1] = b;
  out.bytes[2] = c;
  out.bytes[3] = d;
  return out;
}

std::optional<IpAddress> parse_ip(std::string_view text) {
  if (text.empty() || text.size() > 45) return std::nullopt;
  if (text.find(':') != std::string_view::npos) {
    std::string s(text);
    IpAddress out;
    out.v6 = true;
    if (inet_pton(AF_INET6, s.c_str(), out.bytes.data()) != 1) return std::nullopt;
    return out;
  }
  // inet_pton's AF_INET accepts only dotted quads too, but decides leading zeros by libc;
  // parsed by hand, so "010.0.0.1" is refused everywhere rather than read as octal by some.
  IpAddress out;
  std::size_t start = 0;
  for (int part = 0; part < 4; ++part) {
    std::size_t end = text.find('.', start);
    if ((part < 3) != (end != std::string_view::npos)) return std::nullopt;
    if (end == std::string_view::npos) end = text.size();
    std::string_view digits = text.substr(start, end - start);
    if (!all_digits(digits) || digits.size() > 3 || (digits.size() > 1 && digits[0] == '0')) {
      return std::nullopt;
    }
    int value = 0;
    std::from_chars(digits.data(), digits.data() + digits.size(), value);
    if (value > 255) return std::nullopt;
    out.bytes[part] = static_cast<std::uint8_t>(value);
    start = end + 1;
  }
  return out;
}

bool is_internal_address(const IpAddress& a) {
  if (!a.v6) return internal_v4(a);
  const auto& b = a.bytes;
  bool first10_zero = true;
  for (int i = 0; i < 10; ++i) first10_zero = first10_zero && b[i] == 0;
  bool first12_zero = first10_zero && b[10] == 0 && b[11] == 0;
  // ::ffff:a.b.c.d (mapped) and ::a.b.c.d (compatible, which covers :: and ::1): judged as
  // the IPv4 address they carry.
  if (first10_zero && b[10] == 0xff && b[11] == 0xff) return internal_v4(embedded_v4(a, 12));
  if (first12_zero) return true;
  // 64:ff9b::/96 (NAT64) reaches the IPv4 address it carries.
  if (b[0] == 0x00 && b[1] == 0x64 && b[2] == 0xff && b[3] == 0x9b) {
    bool zeros = true;
    for (int i = 4; i < 12; ++i) zeros = zeros && b[i] == 0;
    if (zeros) return internal_v4(embedded_v4(a, 12));
  }
  // 2002::/16 (6to4) carries an IPv4 address in bytes 2..5.
  if (b[0] == 0x20 && b[1] == 0x02) return internal_v4(embedded_v4(a, 2));
  if ((b[0] & 0xfe) == 0xfc) return true;                  // unique local fc00::/7
  if (b[0] == 0xfe && (b[1] & 0xc0) == 0x80) return true;  // link-local fe80::/10
  if (b[0] == 0xfe && (b[1] & 0xc0) == 0xc0) return true;  // site-local fec0::/10 (deprecated)
  if (b[0] == 0xff) return true;                           // multicast
  if (b[0] == 0x20 && b[1] == 0x01 && b[2] == 0x0d && b[3] == 0xb8) return true;  // docs
  if (b[0] == 0x01 && b[1] == 0x00 && b[2] == 0 && b[3] == 0 && b[4] == 0 && b[5] == 0 &&
      b[6] == 0 && b[7] == 0) {
    return true;  // discard-only 100::/64
  }
  return false;
}

std::string WebhookUrl::text() const {
  std::string out = https ? "https://" : "http://";
  bool v6 = host.find(':') != std::string::npos;
  out += v6 ? "[" + host + "]" : host;
  if (port != (https ? 443 : 80)) out += ":" + std::to_string(port);
  out += target;
  return out;
}

std::variant<WebhookUrl, UrlError> parse_webhook_url(std::string_view text) {
  if (text.empty()) return UrlError{"must not be empty"};
  if (text.size() > kMaxUrlBytes) return UrlError{"must be at most 2048 bytes"};
  for (unsigned char c : text) {
    if (c <= 0x20 || c >= 0x7f) {
      return UrlError{"must be ASCII without spaces or control characters"};
    }
  }
  WebhookUrl url;
  std::string_view rest;
  if (starts_with_ci(text, "https://")) {
    url.https = true;
    rest = text.substr(8);
  } else if (starts_with_ci(text, "http://")) {
    rest = text.substr(7);
  } else {
    return UrlError{"must be an http:// or https:// URL"};
  }
  if (text.find('#') != std::string_view::npos) return UrlError{"must not have a fragment"};
  std::size_t authority_end = rest.find_first_of("/?");
  std::string_view authority = rest.substr(0, authority_end);
  std::string_view target =
      authority_end == std::string_view::npos ? std::string_view() : rest.substr(authority_end);
  if (authority.find('@') != std::string_view::npos) {
    return UrlError{"must not carry a user name or password"};
  }
  if (authority.find('\\') != std::string_view::npos) return UrlError{"has an invalid host"};
  std::string_view host;
  std::string_view port_text;
  if (!authority.empty() && authority.front() == '[') {
    auto close = authority.find(']');
    if (close == std::string_view::npos) return UrlError{"has an unclosed IPv6 literal"};
    host = authority.substr(1, close - 1);
    std::string_view after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') return UrlError{"has an invalid host"};
      port_text = after.substr(1);
      if (port_text.empty()) return UrlError{"has an empty port"};
    }
    // A zone id ("%eth0") names an interface of this host: never a customer's endpoint.
    if (host.find('%') != std::string_view::npos) return UrlError{"has an invalid IPv6 literal"};
    auto ip = parse_ip(host);
    if (!ip || !ip->v6) return UrlError{"has an invalid IPv6 literal"};
    url.host_is_ip = true;
  } else {
    auto colon = authority.find(':');
    host = authority.substr(0, colon);
    if (colon != std::string_view::npos) {
      port_text = authority.substr(colon + 1);
      if (port_text.empty()) return UrlError{"has an empty port"};
    }
    if (host.empty()) return UrlError{"has no host"};
  }
  std::string lowered;
  for (char c : host) lowered.push_back(lower(c));
  if (!url.host_is_ip) {
    if (parse_ip(lowered)) {
      url.host_is_ip = true;
    } else {
      // A name made only of digits and dots that is not a dotted quad ("127.1", "2130706433")
      // is an address to some resolvers: refused rather than guessed at.
      bool numeric = true;
      for (char c : lowered) numeric = numeric && ((c >= '0' && c <= '9') || c == '.');
      if (numeric) return UrlError{"has an invalid IPv4 address"};
      if (!is_host_name(lowered)) return UrlError{"has an invalid host name"};
      // The last label of a name is never all digits (RFC 3986 reads it as an address).
      std::string_view trimmed = lowered;
      if (!trimmed.empty() && trimmed.back() == '.') trimmed.remove_suffix(1);
      auto dot = trimmed.rfind('.');
      std::string_view last = dot == std::string_view::npos ? trimmed : trimmed.substr(dot + 1);
      if (all_digits(last)) return UrlError{"has an invalid host name"};
    }
  }
  url.host = lowered;
  url.port = url.https ? 443 : 80;
  if (!port_text.empty()) {
    if (!all_digits(port_text) || port_text.size() > 5) return UrlError{"has an invalid port"};
    int port = 0;
    std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
    if (port < 1 || port > 65535) return UrlError{"has a port outside 1 to 65535"};
    url.port = static_cast<std::uint16_t>(port);
  }
  url.target = target.empty() ? "/" : std::string(target);
  if (url.target.front() == '?') url.target.insert(url.target.begin(), '/');
  return url;
}

}  // namespace gpurent::webhooks
