// Fuzz target: the two RFC 3339 readers. api/handlers/query_params.h's parse_rfc3339 reads
// the times clients send (list filters such as `since`, a rental's `start`, the offers'
// `start`); agent_proto/wire_time.h's parse_wire_time reads the agent protocol's one form.
// The input is one time's text, given to both.
//
// Each accepts exactly the grammar its header documents, matched here position by position,
// and gives the instant std::chrono's calendar makes of the fields (the parsers count days
// their own way). What the wire reader accepts, the client reader accepts as the same instant
// (both from the year 1: the wire's reader is the client's on a narrower shape). The same instant
// with 'Z' spelled +00:00 or -00:00 reads the same. The server's own writers read back:
// sql_timestamp and format_rfc3339 (to the second) for the years stored times lie in,
// format_wire_time for any instant either reader returns that four-digit years can write, and for
// one drawn from the input's bytes.
#include "agent_proto/wire_time.h"
#include "api/handlers/query_params.h"
#include "core/clock.h"
#include "core/sql.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

namespace {

using gpurent::Timestamp;
using namespace std::chrono;

bool digit(char c) {
  return c >= '0' && c <= '9';
}

int number(std::string_view s) {
  int n = 0;
  for (char c : s) n = n * 10 + (c - '0');
  return n;
}

// The documented grammar: "dddd-dd-ddTdd:dd:dd", then a fraction of 1 to 9 digits (6 on the
// wire), then 'Z' or ±HH:MM (only 'Z' on the wire); 't' and 'z' too, except on the wire.
std::optional<Timestamp> reference(std::string_view s, bool wire) {
  constexpr std::string_view kShape = "dddd-dd-ddTdd:dd:dd";
  if (s.size() < kShape.size()) return std::nullopt;
  for (std::size_t i = 0; i < kShape.size(); ++i) {
    char want = kShape[i], c = s[i];
    bool ok = want == 'd' ? digit(c) : want == 'T' ? c == 'T' || (!wire && c == 't') : c == want;
    if (!ok) return std::nullopt;
  }
  int y = number(s.substr(0, 4)), mo = number(s.substr(5, 2)), d = number(s.substr(8, 2));
  int h = number(s.substr(11, 2)), mi = number(s.substr(14, 2)), sec = number(s.substr(17, 2));
  std::string_view rest = s.substr(kShape.size());
  long long micros = 0;
  if (!rest.empty() && rest[0] == '.') {
    std::size_t n = 1;
    while (n < rest.size() && digit(rest[n])) ++n;
    std::size_t digits = n - 1;
    if (digits == 0 || digits > (wire ? 6u : 9u)) return std::nullopt;
    std::string frac(rest.substr(1, std::min<std::size_t>(digits, 6)));
    frac.resize(6, '0');
    micros = number(frac);
    rest.remove_prefix(n);
  }
  int offset_minutes = 0;
  if (rest == "Z" || (!wire && rest == "z")) {
    offset_minutes = 0;
  } else if (!wire && rest.size() == 6 && (rest[0] == '+' || rest[0] == '-') && digit(rest[1]) &&
             digit(rest[2]) && rest[3] == ':' && digit(rest[4]) && digit(rest[5])) {
    int oh = number(rest.substr(1, 2)), om = number(rest.substr(4, 2));
    if (oh > 23 || om > 59) return std::nullopt;
    offset_minutes = (oh * 60 + om) * (rest[0] == '-' ? -1 : 1);
  } else {
    return std::nullopt;
  }
  if (h > 23 || mi > 59 || sec > 59) return std::nullopt;  // no leap second
  if (y < 1) return std::nullopt;
  year_month_day ymd{year(y), month(static_cast<unsigned>(mo)), day(static_cast<unsigned>(d))};
  if (!ymd.ok()) return std::nullopt;
  return Timestamp(sys_days(ymd).time_since_epoch() + hours(h) + minutes(mi) + seconds(sec) +
                   microseconds(micros) - minutes(offset_minutes));
}

// The span stored times lie in, which the server's own writers print as RFC 3339.
bool stored_span(Timestamp t) {
  static const Timestamp kLatest = *gpurent::http::parse_rfc3339("9999-12-31T23:59:59.999999Z");
  return t >= Timestamp{} && t <= kLatest;
}

// The span the wire's four-digit years can write. A client's time may lie just outside it:
// 9999-12-31T23:59:59-23:59 is in the year 10000 in UTC.
bool wire_span(Timestamp t) {
  static const Timestamp kEarliest = *reference("0001-01-01T00:00:00Z", true);
  static const Timestamp kLatest = *reference("9999-12-31T23:59:59.999999Z", true);
  return t >= kEarliest && t <= kLatest;
}

void check_writers(Timestamp t) {
  using gpurent::agent_proto::format_wire_time;
  using gpurent::agent_proto::parse_wire_time;
  using gpurent::http::parse_rfc3339;
  if (wire_span(t) && parse_wire_time(format_wire_time(t)) != t) abort();
  if (stored_span(t)) {
    if (parse_rfc3339(format_wire_time(t)) != t) abort();
    if (parse_rfc3339(gpurent::sql_timestamp(t)) != t) abort();
    if (parse_rfc3339(gpurent::format_rfc3339(t)) != floor<seconds>(t)) abort();
  }
}

void check(std::string_view s) {
  auto client = gpurent::http::parse_rfc3339(s);
  if (client != reference(s, false)) abort();
  auto wire = gpurent::agent_proto::parse_wire_time(s);
  if (wire != reference(s, true)) abort();
  if (wire && client != wire) abort();

  if (client) {
    char last = s.back();
    if (last == 'Z' || last == 'z') {
      std::string base(s.substr(0, s.size() - 1));
      if (gpurent::http::parse_rfc3339(base + "+00:00") != client) abort();
      if (gpurent::http::parse_rfc3339(base + "-00:00") != client) abort();
    }
    check_writers(*client);
  }
  if (wire) check_writers(*wire);

  // An instant from the input's bytes, from 1970 to the end of 9999.
  std::uint64_t raw = 0;
  std::memcpy(&raw, s.data(), std::min(s.size(), sizeof raw));
  check_writers(Timestamp(microseconds(raw % 253402300800000000ULL)));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    check(std::string_view(reinterpret_cast<const char*>(data), size));
  } catch (...) {
    abort();  // neither reader throws: a refusal is nullopt
  }
  return 0;
}
