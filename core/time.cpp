// Times and dates as text: one strict RFC 3339 reader and one calendar-date reader (no
// regex, no locale), so every edge reads them alike.
#include "core/time.h"

#include <cstdio>

namespace gpurent {
namespace {

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

}  // namespace

std::optional<CivilDate> parse_civil_date(std::string_view s) {
  CivilDate d;
  if (s.size() != 10 || !read_digits(s, 0, 4, d.year) || s[4] != '-' ||
      !read_digits(s, 5, 2, d.month) || s[7] != '-' || !read_digits(s, 8, 2, d.day)) {
    return std::nullopt;
  }
  if (d.year < 1 || d.month < 1 || d.month > 12 || d.day < 1 ||
      d.day > days_in_month(d.year, d.month)) {
    return std::nullopt;
  }
  return d;
}

std::string CivilDate::text() const {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02d", year, month, day);
  return buf;
}

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

}  // namespace gpurent
