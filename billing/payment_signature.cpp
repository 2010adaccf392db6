// Parses and checks the payment webhook's X-Signature header.
#include "billing/payment_signature.h"

#include "core/crypto.h"

#include <charconv>
#include <optional>
#include <stdexcept>
#include <vector>

namespace gpurent::billing {
namespace payment_signature_rules {

constexpr std::size_t kMaxHeaderBytes = 2048;
constexpr std::size_t kMacHexChars = 64;

struct ParsedHeader {
  std::string_view timestamp_text;  // the digits as sent: the MAC covers them byte for byte
  std::int64_t timestamp = 0;
  std::vector<std::string_view> macs;
};

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool is_mac_hex(std::string_view s) {
  if (s.size() != kMacHexChars) return false;
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

std::optional<std::int64_t> unix_seconds(std::string_view digits) {
  if (digits.empty()) return std::nullopt;
  for (char c : digits) {
    if (c < '0' || c > '9') return std::nullopt;  // no sign, no space, no fraction
  }
  std::int64_t n = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
  if (ec != std::errc() || end != digits.data() + digits.size()) return std::nullopt;
  return n;
}

std::optional<ParsedHeader> parse_header(std::string_view header) {
  if (header.size() > kMaxHeaderBytes) return std::nullopt;
  ParsedHeader parsed;
  bool has_timestamp = false;
  std::size_t pos = 0;
  while (pos <= header.size()) {
    auto comma = header.find(',', pos);
    if (comma == std::string_view::npos) comma = header.size();
    std::string_view part = trim(header.substr(pos, comma - pos));
    pos = comma + 1;
    auto eq = part.find('=');
    if (eq == std::string_view::npos) continue;  // not a key=value part: ignored, as unknown
    std::string_view key = part.substr(0, eq);
    std::string_view value = part.substr(eq + 1);
    if (key == "t") {
      auto seconds = unix_seconds(value);
      if (has_timestamp || !seconds) return std::nullopt;
      has_timestamp = true;
      parsed.timestamp_text = value;
      parsed.timestamp = *seconds;
    } else if (key == "v1" && is_mac_hex(value)) {
      parsed.macs.push_back(value);
    }
  }
  if (!has_timestamp || parsed.macs.empty()) return std::nullopt;
  return parsed;
}

// Whether `t` seconds is more than `tolerance` from `now`, to the microsecond. In 128 bits:
// t comes from the header and may be near the top of int64 seconds.
bool is_stale(std::int64_t t, Timestamp now, std::chrono::seconds tolerance) {
  __int128 sent = static_cast<__int128>(t) * 1'000'000;
  __int128 distance = sent - static_cast<__int128>(now.time_since_epoch().count());
  if (distance < 0) distance = -distance;
  return distance > static_cast<__int128>(tolerance.count()) * 1'000'000;
}

}  // namespace payment_signature_rules

std::string_view to_string(SignatureVerdict v) {
  switch (v) {
    case SignatureVerdict::kValid:
      return "valid";
    case SignatureVerdict::kMalformed:
      return "malformed";
    case SignatureVerdict::kStale:
      return "stale";
    case SignatureVerdict::kMismatch:
      return "mismatch";
  }
  return "malformed";
}

SignatureCheck check_payment_signature(std::string_view header, std::string_view raw_body,
                                       std::string_view secret, Timestamp now,
                                       std::chrono::seconds tolerance) {
  auto parsed = payment_signature_rules::parse_header(header);
  if (!parsed) return {SignatureVerdict::kMalformed, 0};
  std::string signed_bytes;
  signed_bytes.reserve(parsed->timestamp_text.size() + 1 + raw_body.size());
  signed_bytes.append(parsed->timestamp_text).append(".").append(raw_body);
  std::string expected = crypto::hmac_sha256_hex(secret, signed_bytes);
  // Every candidate is compared, so the time taken does not say which one matched.
  bool matched = false;
  for (std::string_view mac : parsed->macs) {
    matched = crypto::constant_time_equal(mac, expected) || matched;
  }
  if (!matched || secret.empty()) return {SignatureVerdict::kMismatch, parsed->timestamp};
  if (payment_signature_rules::is_stale(parsed->timestamp, now, tolerance)) {
    return {SignatureVerdict::kStale, parsed->timestamp};
  }
  return {SignatureVerdict::kValid, parsed->timestamp};
}

std::string sign_payment(std::string_view raw_body, std::string_view secret,
                         std::int64_t unix_seconds) {
  if (secret.empty()) throw std::invalid_argument("a webhook secret cannot be empty");
  if (unix_seconds < 0) throw std::invalid_argument("a webhook time cannot be negative");
  std::string t = std::to_string(unix_seconds);
  std::string signed_bytes = t + "." + std::string(raw_body);
  return "t=" + t + ",v1=" + crypto::hmac_sha256_hex(secret, signed_bytes);
}

}  // namespace gpurent::billing
