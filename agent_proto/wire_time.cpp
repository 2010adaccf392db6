// The agent protocol's one form of time on the wire.
#include "agent_proto/wire_time.h"

#include <chrono>
#include <cstdio>

namespace gpurent::agent_proto {

std::string format_wire_time(Timestamp t) {
  using namespace std::chrono;
  auto day = floor<days>(t);
  year_month_day ymd(day);
  auto in_day = t - day;
  auto h = duration_cast<hours>(in_day);
  auto m = duration_cast<minutes>(in_day - h);
  auto s = duration_cast<seconds>(in_day - h - m);
  auto us = (in_day - h - m - s).count();
  char buf[48];
  int n = std::snprintf(buf, sizeof buf, "%04d-%02u-%02uT%02d:%02d:%02lld", int(ymd.year()),
                        unsigned(ymd.month()), unsigned(ymd.day()), int(h.count()), int(m.count()),
                        static_cast<long long>(s.count()));
  if (us != 0) {
    std::snprintf(buf + n, sizeof buf - n, ".%06lld", static_cast<long long>(us));
  }
  return std::string(buf) + "Z";
}

namespace {

bool read_digits(std::string_view s, std::size_t pos, std::size_t n, int& out) {
  if (pos + n > s.size()) return false;
  out = 0;
  for (std::size_t i = pos; i < pos + n; ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    out = out * 10 + (s[i] - '0');
  }
  return true;
}

}  // namespace

// Exactly what format_wire_time writes (up to six fraction digits): the agent is ours, so any
// other shape is a bug or a forgery, not a dialect to accept.
std::optional<Timestamp> parse_wire_time(std::string_view s) {
  using namespace std::chrono;
  int y, mo, d, h, mi, sec;
  if (s.size() < 20 || !read_digits(s, 0, 4, y) || s[4] != '-' || !read_digits(s, 5, 2, mo) ||
      s[7] != '-' || !read_digits(s, 8, 2, d) || s[10] != 'T' || !read_digits(s, 11, 2, h) ||
      s[13] != ':' || !read_digits(s, 14, 2, mi) || s[16] != ':' || !read_digits(s, 17, 2, sec) ||
      h > 23 || mi > 59 || sec > 59) {
    return std::nullopt;
  }
  year_month_day ymd{year(y), month(unsigned(mo)), day(unsigned(d))};
  if (!ymd.ok()) return std::nullopt;
  std::size_t pos = 19;
  long long us = 0;
  if (s[pos] == '.') {
    std::size_t start = ++pos;
    while (pos < s.size() && s[pos] >= '0' && s[pos] <= '9') ++pos;
    std::size_t n = pos - start;
    if (n < 1 || n > 6) return std::nullopt;
    for (std::size_t i = 0; i < 6; ++i) us = us * 10 + (i < n ? s[start + i] - '0' : 0);
  }
  if (pos + 1 != s.size() || s[pos] != 'Z') return std::nullopt;
  return Timestamp(sys_days(ymd).time_since_epoch() + hours(h) + minutes(mi) + seconds(sec) +
                   microseconds(us));
}

}  // namespace gpurent::agent_proto
