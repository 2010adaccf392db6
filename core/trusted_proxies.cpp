// TrustedProxies: CIDR matching over inet_pton's bytes, and the X-Forwarded-For walk.
#include "core/trusted_proxies.h"

#include <arpa/inet.h>

#include <algorithm>
#include <charconv>
#include <optional>
#include <stdexcept>

namespace gpurent {
namespace {

struct Address {
  bool v6 = false;
  std::array<std::uint8_t, 16> bytes{};
};

std::string_view trim_view(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

std::optional<Address> parse_address(std::string_view text) {
  // inet_pton reads up to a NUL, so "10.0.0.3\0, 6.6.6.6" would pass, whole, as 10.0.0.3.
  if (text.empty() || text.size() > 45 || text.find('\0') != std::string_view::npos) {
    return std::nullopt;
  }
  std::string s(text);
  Address a;
  if (inet_pton(AF_INET, s.c_str(), a.bytes.data()) == 1) return a;
  if (inet_pton(AF_INET6, s.c_str(), a.bytes.data()) == 1) {
    a.v6 = true;
    // An IPv4-mapped IPv6 address (::ffff:a.b.c.d) is that IPv4 address.
    static constexpr std::uint8_t kMapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    if (std::equal(kMapped, kMapped + 12, a.bytes.begin())) {
      Address v4;
      std::copy(a.bytes.begin() + 12, a.bytes.end(), v4.bytes.begin());
      return v4;
    }
    return a;
  }
  return std::nullopt;
}

bool prefix_matches(const std::array<std::uint8_t, 16>& a, const std::array<std::uint8_t, 16>& b,
                    int prefix) {
  int full = prefix / 8;
  for (int i = 0; i < full; ++i) {
    if (a[i] != b[i]) return false;
  }
  int rest = prefix % 8;
  if (rest == 0) return true;
  auto mask = static_cast<std::uint8_t>(0xff << (8 - rest));
  return (a[full] & mask) == (b[full] & mask);
}

}  // namespace

TrustedProxies TrustedProxies::parse(std::string_view list) {
  TrustedProxies out;
  while (!list.empty()) {
    auto comma = list.find(',');
    std::string_view entry = trim_view(list.substr(0, comma));
    list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
    if (entry.empty()) continue;
    auto slash = entry.find('/');
    auto address = parse_address(entry.substr(0, slash));
    if (!address)
      throw std::invalid_argument("not an IP address or CIDR block: " + std::string(entry));
    int max_prefix = address->v6 ? 128 : 32;
    int prefix = max_prefix;
    if (slash != std::string_view::npos) {
      auto digits = entry.substr(slash + 1);
      auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), prefix);
      if (digits.empty() || ec != std::errc() || end != digits.data() + digits.size() ||
          prefix < 0 || prefix > max_prefix) {
        throw std::invalid_argument("bad prefix length in " + std::string(entry));
      }
    }
    out.blocks_.push_back({address->v6, address->bytes, prefix});
  }
  return out;
}

bool TrustedProxies::contains(std::string_view text) const {
  auto address = parse_address(text);
  if (!address) return false;
  for (const auto& b : blocks_) {
    if (b.v6 == address->v6 && prefix_matches(b.bytes, address->bytes, b.prefix)) return true;
  }
  return false;
}

std::string TrustedProxies::client_address(std::string_view peer,
                                           std::string_view forwarded_for) const {
  if (!contains(peer)) return std::string(peer);
  std::string_view hop = peer;
  while (!forwarded_for.empty()) {
    auto comma = forwarded_for.rfind(',');
    std::string_view entry = trim_view(
        comma == std::string_view::npos ? forwarded_for : forwarded_for.substr(comma + 1));
    forwarded_for =
        comma == std::string_view::npos ? std::string_view() : forwarded_for.substr(0, comma);
    if (!parse_address(entry)) break;
    hop = entry;
    if (!contains(entry)) break;
  }
  return std::string(hop);
}

}  // namespace gpurent
