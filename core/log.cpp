// spdlog formatters for text and JSON lines, both stamped with the request id.
#include "core/log.h"

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <ctime>

namespace gpurent::log {
namespace {

thread_local std::string t_request_id;

class RequestIdFlag final : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg&, const std::tm&,
              spdlog::memory_buf_t& dest) override {
    std::string_view id = t_request_id.empty() ? std::string_view("-") : t_request_id;
    dest.append(id.data(), id.data() + id.size());
  }
  std::unique_ptr<custom_flag_formatter> clone() const override {
    return std::make_unique<RequestIdFlag>();
  }
};

// {"ts":"2026-11-29T16:00:00.123Z","level":"info","request_id":"req_…","msg":"…"}
class JsonFormatter final : public spdlog::formatter {
 public:
  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override {
    std::string line;
    line.reserve(128 + msg.payload.size());
    auto secs = std::chrono::system_clock::to_time_t(msg.time);
    auto millis =
        std::chrono::duration_cast<std::chrono::milliseconds>(msg.time.time_since_epoch()).count() %
        1000;
    std::tm tm{};
    gmtime_r(&secs, &tm);
    char ts[64];
    std::snprintf(ts, sizeof ts, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                  tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                  static_cast<int>(millis));
    line += "{\"ts\":\"";
    line += ts;
    line += "\",\"level\":\"";
    auto level = spdlog::level::to_string_view(msg.level);
    line.append(level.data(), level.size());
    line += "\"";
    if (!t_request_id.empty()) {
      line += ",\"request_id\":\"";
      append_json_escaped(line, t_request_id);
      line += "\"";
    }
    line += ",\"msg\":\"";
    append_json_escaped(line, std::string_view(msg.payload.data(), msg.payload.size()));
    line += "\"}\n";
    dest.append(line.data(), line.data() + line.size());
  }
  std::unique_ptr<spdlog::formatter> clone() const override {
    return std::make_unique<JsonFormatter>();
  }
};

}  // namespace

namespace {

// Length of the well-formed UTF-8 sequence starting at s[i], or 0 when it is not one.
std::size_t utf8_sequence_length(std::string_view s, std::size_t i) {
  auto byte = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  unsigned char c = byte(i);
  std::size_t n = c >= 0xf0 && c <= 0xf4 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 && c <= 0xdf ? 2 : 0;
  if (n == 0 || i + n > s.size()) return 0;
  for (std::size_t k = 1; k < n; ++k) {
    if ((byte(i + k) & 0xc0) != 0x80) return 0;
  }
  unsigned char c1 = byte(i + 1);
  if (n == 3 && ((c == 0xe0 && c1 < 0xa0) || (c == 0xed && c1 >= 0xa0)))
    return 0;  // overlong, surrogate
  if (n == 4 && ((c == 0xf0 && c1 < 0x90) || (c == 0xf4 && c1 >= 0x90)))
    return 0;  // overlong, > U+10FFFF
  return n;
}

}  // namespace

void append_json_escaped(std::string& out, std::string_view s) {
  for (std::size_t i = 0; i < s.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c < 0x20 || c == 0x7f) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else if (c < 0x80) {
          out.push_back(static_cast<char>(c));
        } else if (std::size_t n = utf8_sequence_length(s, i)) {
          out.append(s.substr(i, n));
          i += n - 1;
        } else {
          // Client-supplied text (a request target) may hold invalid UTF-8; a log line
          // must stay valid JSON, so such bytes become U+FFFD.
          out += "\\ufffd";
        }
    }
  }
}

namespace {

spdlog::level::level_enum to_spdlog(Level level) {
  switch (level) {
    case Level::kDebug:
      return spdlog::level::debug;
    case Level::kInfo:
      return spdlog::level::info;
    case Level::kWarn:
      return spdlog::level::warn;
    case Level::kError:
      return spdlog::level::err;
    case Level::kCritical:
      return spdlog::level::critical;
  }
  return spdlog::level::err;
}

}  // namespace

bool enabled(Level level) {
  return spdlog::default_logger_raw()->should_log(to_spdlog(level));
}

void write(Level level, std::string_view message) {
  spdlog::default_logger_raw()->log(to_spdlog(level), message);
}

void init(LogFormat format, const std::string& level) {
  spdlog::drop("gpurent");
  auto logger = spdlog::stderr_color_mt("gpurent");
  bool json = format == LogFormat::kJson || (format == LogFormat::kAuto && !isatty(STDERR_FILENO));
  if (json) {
    logger->set_formatter(std::make_unique<JsonFormatter>());
  } else {
    auto f = std::make_unique<spdlog::pattern_formatter>();
    f->add_flag<RequestIdFlag>('*').set_pattern("%Y-%m-%d %H:%M:%S.%e %^%-5l%$ [%*] %v");
    logger->set_formatter(std::move(f));
  }
  logger->set_level(spdlog::level::from_str(level));
  logger->flush_on(spdlog::level::info);
  spdlog::set_default_logger(logger);
}

std::string_view current_request_id() {
  return t_request_id;
}

RequestScope::RequestScope(std::string_view request_id) : previous_(std::move(t_request_id)) {
  t_request_id.assign(request_id.data(), request_id.size());
}

RequestScope::~RequestScope() {
  t_request_id = std::move(previous_);
}

}  // namespace gpurent::log
