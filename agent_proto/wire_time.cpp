// The agent protocol's one form of time on the wire.
#include "agent_proto/wire_time.h"

#include "core/time.h"

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

// Exactly what format_wire_time writes: the agent is ours, so any other shape is a bug or a
// forgery, not a dialect to accept. The wire form is RFC 3339 narrowed to an upper-case 'T',
// 'Z' and up to six fraction digits, so the one RFC 3339 reader (core/time.h) reads it once
// the shape is checked.
std::optional<Timestamp> parse_wire_time(std::string_view s) {
  if (s.size() < 20 || s.size() > 27 || s[10] != 'T' || s.back() != 'Z') return std::nullopt;
  if (s.size() != 20 && (s[19] != '.' || s.size() < 22)) return std::nullopt;
  return parse_rfc3339(s);
}

}  // namespace gpurent::agent_proto
