// Logging setup (spdlog) and the per-thread request context that every line carries.
#pragma once

#include "core/config.h"

#include <string>
#include <string_view>

namespace gpurent::log {

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
