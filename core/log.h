// Logging setup (spdlog) and the per-thread request context that every line carries.
#pragma once

#include "core/config.h"

#include <fmt/format.h>

#include <string>
#include <string_view>

namespace gpurent::log {

// Log lines: log::info("node {} drained", id). The format string is checked at compile
// time; the message is formatted into a string here and handed to spdlog out of line.
// spdlog::info's own template costs every file that calls it about 3 s of compile time
// under the sanitizers (it instantiates fmt's whole formatting engine into the caller),
// this about 0.1 s: the reason the project logs through these.
enum class Level { kDebug, kInfo, kWarn, kError, kCritical };

bool enabled(Level level);
void write(Level level, std::string_view message);

template <typename... Args>
void at(Level level, fmt::format_string<Args...> format, Args&&... args) {
  if (enabled(level)) write(level, fmt::vformat(format, fmt::make_format_args(args...)));
}
template <typename... Args>
void debug(fmt::format_string<Args...> format, Args&&... args) {
  at(Level::kDebug, format, std::forward<Args>(args)...);
}
template <typename... Args>
void info(fmt::format_string<Args...> format, Args&&... args) {
  at(Level::kInfo, format, std::forward<Args>(args)...);
}
template <typename... Args>
void warn(fmt::format_string<Args...> format, Args&&... args) {
  at(Level::kWarn, format, std::forward<Args>(args)...);
}
template <typename... Args>
void error(fmt::format_string<Args...> format, Args&&... args) {
  at(Level::kError, format, std::forward<Args>(args)...);
}
template <typename... Args>
void critical(fmt::format_string<Args...> format, Args&&... args) {
  at(Level::kCritical, format, std::forward<Args>(args)...);
}

// Installs the process-wide logger on stderr: readable text when stderr is a terminal
// (or format is kText), JSON lines otherwise. Every line carries the current request id.
void init(LogFormat format, const std::string& level);

// The request id of the work running on this thread, or "" outside a request.
std::string_view current_request_id();

// Sets the request id for this thread while in scope (network and worker threads alike).
class RequestScope {
 public:
  explicit RequestScope(std::string_view request_id);
  ~RequestScope();
  RequestScope(const RequestScope&) = delete;
  RequestScope& operator=(const RequestScope&) = delete;

 private:
  std::string previous_;
};

// Escapes s as the inside of a JSON string (no surrounding quotes).
void append_json_escaped(std::string& out, std::string_view s);

}  // namespace gpurent::log
