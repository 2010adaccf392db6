// Parses `NVRM: Xid` kernel-log lines. The line's prefix (a time stamp in one of several
// shapes, a host name, a facility) varies with whatever collected the log; the part from
// "NVRM: Xid" on is the driver's and varies with the driver's age.
#include "agent_proto/xid_log.h"

#include <array>
#include <charconv>
#include <optional>
#include <string>

namespace gpurent::agent_proto {
namespace {

constexpr std::string_view kMarker = "NVRM: Xid";
constexpr std::size_t kMaxPciChars = 32;
constexpr std::size_t kMaxProcessBytes = 128;
constexpr int kMaxXid = 9999;

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

// ---- Time stamps ----

// A small reader over the prefix; every read either consumes what it matched or nothing.
class Cursor {
 public:
  explicit Cursor(std::string_view s) : s_(s) {}

  bool done() const { return pos_ >= s_.size(); }
  char peek() const { return done() ? '\0' : s_[pos_]; }
  bool take(char c) {
    if (peek() != c) return false;
    ++pos_;
    return true;
  }
  void skip_spaces() {
    while (peek() == ' ') ++pos_;
  }
  // Exactly n digits.
  bool digits(std::size_t n, int& out) {
    if (pos_ + n > s_.size()) return false;
    int v = 0;
    for (std::size_t i = 0; i < n; ++i) {
      if (!is_digit(s_[pos_ + i])) return false;
      v = v * 10 + (s_[pos_ + i] - '0');
    }
    out = v;
    pos_ += n;
    return true;
  }
  // One or two digits ("3", " 3" is handled by the caller skipping the space, "03").
  bool day(int& out) {
    if (digits(2, out)) return true;
    return digits(1, out);
  }
  // A fraction of a second after the '.', as microseconds; finer digits are dropped.
  bool fraction(long long& micros) {
    std::size_t start = pos_;
    while (is_digit(peek())) ++pos_;
    std::size_t n = pos_ - start;
    if (n == 0 || n > 9) return false;
    micros = 0;
    for (std::size_t i = 0; i < 6; ++i) micros = micros * 10 + (i < n ? s_[start + i] - '0' : 0);
    return true;
  }
  // "Jan" .. "Dec" (the C locale's names: what the kernel-side tools print by default).
  bool month(int& out) {
    static constexpr std::array<std::string_view, 12> kMonths = {
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
    auto word = s_.substr(pos_, 3);
    for (std::size_t i = 0; i < kMonths.size(); ++i) {
      if (word == kMonths[i]) {
        out = static_cast<int>(i) + 1;
        pos_ += 3;
        return true;
      }
    }
    return false;
  }
  bool weekday() {
    static constexpr std::array<std::string_view, 7> kDays = {"Mon", "Tue", "Wed", "Thu",
                                                              "Fri", "Sat", "Sun"};
    auto word = s_.substr(pos_, 3);
    for (auto d : kDays) {
      if (word == d) {
        pos_ += 3;
        return true;
      }
    }
    return false;
  }

 private:
  std::string_view s_;
  std::size_t pos_ = 0;
};

struct Civil {
  int year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0;
  long long micros = 0;
};

// The instant of a civil time `offset` ahead of UTC; nullopt for a date that does not exist or
// a year outside what the JSON form carries.
std::optional<Timestamp> to_timestamp(const Civil& c, std::chrono::minutes offset) {
  using namespace std::chrono;
  if (c.year < 1970 || c.year > 9998 || c.hour > 23 || c.minute > 59 || c.second > 59) {
    return std::nullopt;
  }
  year_month_day ymd{year(c.year), month(unsigned(c.month)), day(unsigned(c.day))};
  if (!ymd.ok()) return std::nullopt;
  return Timestamp(sys_days(ymd).time_since_epoch() + hours(c.hour) + minutes(c.minute) +
                   seconds(c.second) + microseconds(c.micros) - offset);
}

bool clock_time(Cursor& in, Civil& c) {
  return in.digits(2, c.hour) && in.take(':') && in.digits(2, c.minute) && in.take(':') &&
         in.digits(2, c.second);
}

// 2026-07-03T22:10:46[.123456[789]][Z|+00:00|+0000]; a space may stand for the 'T'. Without a
// zone the time is local.
std::optional<Timestamp> iso_time(Cursor in, const KernelLogClock& clock) {
  Civil c;
  if (!(in.digits(4, c.year) && in.take('-') && in.digits(2, c.month) && in.take('-') &&
        in.digits(2, c.day) && (in.take('T') || in.take(' ')) && clock_time(in, c))) {
    return std::nullopt;
  }
  if (in.take('.') && !in.fraction(c.micros)) return std::nullopt;
  std::chrono::minutes offset = clock.utc_offset;
  if (in.take('Z')) {
    offset = {};
  } else if (in.peek() == '+' || in.peek() == '-') {
    int sign = in.peek() == '-' ? -1 : 1;
    in.take(in.peek());
    int h = 0, m = 0;
    if (!in.digits(2, h)) return std::nullopt;
    in.take(':');
    if (!in.digits(2, m) || h > 23 || m > 59) return std::nullopt;
    offset = std::chrono::minutes(sign * (h * 60 + m));
  }
  return to_timestamp(c, offset);
}

// syslog and journalctl: "Jul  3 22:10:46" or "Jul 03 22:10:46", in the clock's year.
std::optional<Timestamp> syslog_time(Cursor in, const KernelLogClock& clock) {
  Civil c;
  c.year = clock.year;
  if (!in.month(c.month)) return std::nullopt;
  if (!in.take(' ')) return std::nullopt;
  in.take(' ');
  if (!(in.day(c.day) && in.take(' ') && clock_time(in, c))) return std::nullopt;
  return to_timestamp(c, clock.utc_offset);
}

// dmesg -T: "Mon Jul  3 22:10:46 2026".
std::optional<Timestamp> ctime_time(Cursor in, const KernelLogClock& clock) {
  Civil c;
  if (!(in.weekday() && in.take(' ') && in.month(c.month) && in.take(' '))) return std::nullopt;
  in.take(' ');
  if (!(in.day(c.day) && in.take(' ') && clock_time(in, c) && in.take(' ') &&
        in.digits(4, c.year))) {
    return std::nullopt;
  }
  return to_timestamp(c, clock.utc_offset);
}

// The wall-clock time in the text before "NVRM: Xid": a stamp the line starts with (ISO,
// syslog), else the first bracketed one (`dmesg -T`, or an ISO stamp some collectors put in
// brackets after a host and facility). `[12345.678901]` is seconds since boot: no time.
std::optional<Timestamp> prefix_time(std::string_view prefix, const KernelLogClock& clock) {
  auto start = prefix.find_first_not_of(' ');
  if (start == std::string_view::npos) return std::nullopt;
  prefix.remove_prefix(start);
  if (auto t = iso_time(Cursor(prefix), clock)) return t;
  if (auto t = syslog_time(Cursor(prefix), clock)) return t;
  for (auto open = prefix.find('['); open != std::string_view::npos;
       open = prefix.find('[', open + 1)) {
    auto inside = prefix.substr(open + 1);
    if (auto t = ctime_time(Cursor(inside), clock)) return t;
    if (auto t = iso_time(Cursor(inside), clock)) return t;
  }
  return std::nullopt;
}

// ---- The driver's part ----

// Printable ASCII for JSON and logs: control characters become spaces, other bytes '?'.
std::string printable(std::string_view s, std::size_t max_bytes) {
  std::string out;
  for (char ch : s.substr(0, max_bytes)) {
    auto c = static_cast<unsigned char>(ch);
    out += c < 0x20 || c == 0x7f ? ' ' : (c < 0x80 ? ch : '?');
  }
  auto last = out.find_last_not_of(' ');
  out.erase(last == std::string::npos ? 0 : last + 1);
  return out;
}

bool is_pci_char(char c) {
  return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F') || c == ':' || c == '.';
}

// The rest of an element ("pid=..." or "name=...") up to the ", " that ends it.
std::string_view element(std::string_view& rest) {
  auto end = rest.find(", ");
  auto value = rest.substr(0, end);
  rest = end == std::string_view::npos ? std::string_view() : rest.substr(end + 2);
  return value;
}

bool is_unknown(std::string_view v) {
  return v == "<unknown>" || v == "'<unknown>'";
}

// `body` starts right after "NVRM: Xid":
//   " (PCI:0000:83:00): 79, pid=1234, name=python, GPU has fallen off the bus."
//   " (0000:03:00): 13, 0003 00000000 ..."                       (older drivers)
//   " (PCI:0000:0a:00): 45, pid='<unknown>', name=<unknown>, Ch 00000008"
std::optional<XidEvent> parse_body(std::string_view body) {
  std::size_t i = 0;
  while (i < body.size() && body[i] == ' ') ++i;
  if (i >= body.size() || body[i] != '(') return std::nullopt;
  ++i;
  if (body.substr(i, 4) == "PCI:") i += 4;
  auto close = body.find(')', i);
  if (close == std::string_view::npos) return std::nullopt;
  auto pci = body.substr(i, close - i);
  if (pci.empty() || pci.size() > kMaxPciChars) return std::nullopt;
  for (char c : pci) {
    if (!is_pci_char(c)) return std::nullopt;
  }
  i = close + 1;
  if (i >= body.size() || body[i] != ':') return std::nullopt;
  ++i;
  while (i < body.size() && body[i] == ' ') ++i;
  std::size_t digits_start = i;
  while (i < body.size() && is_digit(body[i]) && i - digits_start <= 4) ++i;
  if (i == digits_start || i - digits_start > 4) return std::nullopt;
  int xid = 0;
  std::from_chars(body.data() + digits_start, body.data() + i, xid);
  if (xid < 1 || xid > kMaxXid) return std::nullopt;
  // The code ends the line or is followed by ','; "79x" is not a code.
  if (i < body.size() && body[i] != ',' && body[i] != ' ') return std::nullopt;

  XidEvent event;
  event.pci = std::string(pci);
  event.xid = xid;
  std::string_view rest = body.substr(i);
  if (!rest.empty() && rest[0] == ',') rest.remove_prefix(1);
  while (!rest.empty() && rest[0] == ' ') rest.remove_prefix(1);
  if (rest.substr(0, 4) == "pid=") {
    rest.remove_prefix(4);
    auto value = element(rest);
    int pid = 0;
    auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), pid);
    if (ec == std::errc() && end == value.data() + value.size() && pid >= 0) event.pid = pid;
  }
  if (rest.substr(0, 5) == "name=") {
    rest.remove_prefix(5);
    auto value = element(rest);
    if (!is_unknown(value)) {
      auto name = printable(value, kMaxProcessBytes);
      if (!name.empty()) event.process = std::move(name);
    }
  }
  event.message = printable(rest, kMaxXidMessageBytes);
  return event;
}

std::optional<XidEvent> parse_plain_line(std::string_view line, const KernelLogClock& clock) {
  for (auto at = line.find(kMarker); at != std::string_view::npos;
       at = line.find(kMarker, at + 1)) {
    if (auto event = parse_body(line.substr(at + kMarker.size()))) {
      event->at = prefix_time(line.substr(0, at), clock);
      return event;
    }
  }
  return std::nullopt;
}

// A container runtime's JSON log line: {"log":"<the line>\n","stream":"stderr","time":"..."}.
// The runtime's "time" is when the line was read, so the line's own stamp wins.
std::optional<XidEvent> parse_wrapped_line(std::string_view line, const KernelLogClock& clock) {
  auto json = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (!json.is_object()) return std::nullopt;
  auto log = json.find("log");
  if (log == json.end() || !log->is_string()) return std::nullopt;
  auto inner = std::string_view(log->get_ref<const std::string&>());
  while (!inner.empty() && (inner.back() == '\n' || inner.back() == '\r')) inner.remove_suffix(1);
  auto event = parse_plain_line(inner, clock);
  if (!event || event->at) return event;
  auto time = json.find("time");
  if (time != json.end() && time->is_string()) {
    event->at = iso_time(Cursor(time->get_ref<const std::string&>()), clock);
  }
  return event;
}

}  // namespace

std::optional<XidEvent> parse_xid_line(std::string_view line, const KernelLogClock& clock) {
  if (line.size() > kMaxKernelLogLineBytes) return std::nullopt;
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.remove_suffix(1);
  if (line.find(kMarker) == std::string_view::npos) return std::nullopt;
  auto first = line.find_first_not_of(" \t");
  if (first != std::string_view::npos && line[first] == '{') {
    return parse_wrapped_line(line.substr(first), clock);
  }
  return parse_plain_line(line, clock);
}

std::vector<XidEvent> parse_xid_log(std::string_view text, const KernelLogClock& clock) {
  std::vector<XidEvent> events;
  std::size_t pos = 0;
  while (pos < text.size()) {
    auto end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    if (auto event = parse_xid_line(text.substr(pos, end - pos), clock)) {
      events.push_back(std::move(*event));
    }
    pos = end + 1;
  }
  return events;
}

}  // namespace gpurent::agent_proto
