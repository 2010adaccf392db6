// Query-string parsing for list routes (times through core/time.h).
#include "api/handlers/query_params.h"

#include "api/utf8.h"
#include "core/error.h"
#include "core/id.h"

#include <algorithm>
#include <charconv>

namespace gpurent::http {
namespace {

// A parameter name as echoed in an error: bounded, so a hostile query cannot make it huge.
constexpr std::size_t kMaxEchoedName = 64;

// Cut on a character boundary, with bytes that are not UTF-8 escaped: a name cut inside a
// character would make the error itself unprintable as JSON.
std::string echoed(std::string_view name) {
  return printable_name(name, kMaxEchoedName);
}

}  // namespace

QueryParams::QueryParams(const Request& request, std::initializer_list<std::string_view> known) {
  std::string_view rest = request.query;
  while (!rest.empty()) {
    auto amp = rest.find('&');
    std::string_view pair = rest.substr(0, amp);
    rest = amp == std::string_view::npos ? std::string_view() : rest.substr(amp + 1);
    if (pair.empty()) continue;
    auto eq = pair.find('=');
    std::string_view raw_key = pair.substr(0, eq);
    std::string_view raw_value =
        eq == std::string_view::npos ? std::string_view() : pair.substr(eq + 1);
    auto key = percent_decode(raw_key, true);
    if (!key) throw Error::invalid_field(echoed(raw_key), "is not correctly percent-encoded");
    if (std::find(known.begin(), known.end(), *key) == known.end()) {
      throw Error::invalid_field(echoed(*key), "is not a known parameter of this list");
    }
    auto value = percent_decode(raw_value, true);
    if (!value) throw Error::invalid_field(*key, "is not correctly percent-encoded");
    for (const auto& [k, _] : params_) {
      if (k == *key) throw Error::invalid_field(*key, "must be given at most once");
    }
    params_.emplace_back(std::move(*key), std::move(*value));
  }
}

std::optional<std::string> QueryParams::text(std::string_view name) const {
  for (const auto& [k, v] : params_) {
    if (k != name) continue;
    if (v.empty()) throw Error::invalid_field(name, "must not be empty");
    return v;
  }
  return std::nullopt;
}

int QueryParams::limit() const {
  auto raw = text("limit");
  if (!raw) return kDefaultPageLimit;
  int n = 0;
  auto [end, ec] = std::from_chars(raw->data(), raw->data() + raw->size(), n);
  if (ec != std::errc() || end != raw->data() + raw->size() || n < 1 || n > kMaxPageLimit) {
    throw Error::invalid_field("limit", "must be an integer between 1 and 500");
  }
  return n;
}

std::optional<int> QueryParams::whole_number(std::string_view name, int min, int max) const {
  auto raw = text(name);
  if (!raw) return std::nullopt;
  int n = 0;
  auto [end, ec] = std::from_chars(raw->data(), raw->data() + raw->size(), n);
  if (ec != std::errc() || end != raw->data() + raw->size() || n < min || n > max) {
    throw Error::invalid_field(
        name, "must be a whole number from " + std::to_string(min) + " to " + std::to_string(max));
  }
  return n;
}

std::optional<Timestamp> QueryParams::timestamp(std::string_view name) const {
  auto raw = text(name);
  if (!raw) return std::nullopt;
  auto t = parse_rfc3339(*raw);
  if (!t) {
    throw Error::invalid_field(
        name, "must be an RFC 3339 time such as 2026-12-01T00:00:00Z (send '+' as %2B)");
  }
  // Stored times lie between 1970 and 9999, so clamping changes no result, and keeps the
  // value printable as a four-digit year for the database.
  static const Timestamp kEarliest{};
  static const Timestamp kLatest = *parse_rfc3339("9999-12-31T23:59:59.999999Z");
  return std::clamp(*t, kEarliest, kLatest);
}

std::optional<std::string> QueryParams::id(std::string_view name, std::string_view prefix) const {
  auto raw = text(name);
  if (raw && !is_valid_id(prefix, *raw)) {
    throw Error::invalid_field(name, "must be an id of the form " + std::string(prefix) + "_…");
  }
  return raw;
}

std::string path_id(const Request& request, std::string_view param, std::string_view prefix,
                    std::string_view not_found) {
  std::string id(request.path_param(param));
  if (!is_valid_id(prefix, id)) throw Error(ErrorCode::kNotFound, std::string(not_found));
  return id;
}

}  // namespace gpurent::http
