// Query-string parsing for list routes, and a strict RFC 3339 parser (no regex, no locale).
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

// `n` ASCII digits at `pos` as a number; false when any is not a digit.
bool read_digits(std::string_view s, std::size_t pos, std::size_t n, int& out) {
  if (pos + n > s.size()) return false;
  out = 0;
  for (std::size_t i = pos; i < pos + n; ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    out = out * 10 + (s[i] - '0');
  }
  return true;
}

bool is_leap(int y) {
  return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

int days_in_month(int y, int m) {
  static constexpr int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return m == 2 && is_leap(y) ? 29 : kDays[m - 1];
}

// Days from 1970-01-01 to y-m-d in the proleptic Gregorian calendar (H. Hinnant's algorithm).
long long days_from_civil(int y, int m, int d) {
  y -= m <= 2;
  const long long era = (y >= 0 ? y : y - 399) / 400;
  const long long yoe = y - era * 400;
  const long long doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const long long doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

// Cut on a character boundary, with bytes that are not UTF-8 escaped: a name cut inside a
// character would make the error itself unprintable as JSON.
std::string echoed(std::string_view name) {
  return printable_name(name, kMaxEchoedName);
}

}  // namespace

std::optional<Timestamp> parse_rfc3339(std::string_view s) {
  int year, month, day, hour, minute, second;
  if (s.size() < 20 || !read_digits(s, 0, 4, year) || s[4] != '-' || !read_digits(s, 5, 2, month) ||
      s[7] != '-' || !read_digits(s, 8, 2, day) || (s[10] != 'T' && s[10] != 't') ||
      !read_digits(s, 11, 2, hour) || s[13] != ':' || !read_digits(s, 14, 2, minute) ||
      s[16] != ':' || !read_digits(s, 17, 2, second)) {
    return std::nullopt;
  }
  if (year < 1 || month < 1 || month > 12 || day < 1 || day > days_in_month(year, month) ||
      hour > 23 || minute > 59 || second > 59) {
    return std::nullopt;
  }
  std::size_t pos = 19;
  long long micros = 0;
  if (s[pos] == '.') {
    std::size_t start = ++pos;
    while (pos < s.size() && s[pos] >= '0' && s[pos] <= '9') ++pos;
    std::size_t n = pos - start;
    if (n < 1 || n > 9) return std::nullopt;
    // The first six digits are microseconds; finer digits are dropped.
    for (std::size_t i = 0; i < 6; ++i) micros = micros * 10 + (i < n ? s[start + i] - '0' : 0);
  }
  if (pos >= s.size()) return std::nullopt;
  long long offset_seconds = 0;
  if (s[pos] == 'Z' || s[pos] == 'z') {
    ++pos;
  } else if (s[pos] == '+' || s[pos] == '-') {
    int oh, om;
    if (!read_digits(s, pos + 1, 2, oh) || pos + 3 >= s.size() || s[pos + 3] != ':' ||
        !read_digits(s, pos + 4, 2, om) || oh > 23 || om > 59) {
      return std::nullopt;
    }
    offset_seconds = (oh * 3600LL + om * 60LL) * (s[pos] == '-' ? -1 : 1);
    pos += 6;
  } else {
    return std::nullopt;
  }
  if (pos != s.size()) return std::nullopt;
  long long seconds = days_from_civil(year, month, day) * 86400LL + hour * 3600LL + minute * 60LL +
                      second - offset_seconds;
  return Timestamp(std::chrono::microseconds(seconds * 1000000LL + micros));
}

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
