// Handler invocation with exception-to-response mapping and access logging.
#include "api/dispatch.h"

#include "api/request_input.h"
#include "api/responses.h"
#include "core/log.h"

#include <spdlog/spdlog.h>

namespace gpurent::http {

Response invoke(const Route& route, const Request& request) {
  log::RequestScope scope(request.request_id);
  try {
    // Before any handler, so every route, including those added later, refuses text it
    // cannot use with the same 400.
    check_request_input(route, request);
    return route.handler(request);
  } catch (const Error& e) {
    if (e.code() == ErrorCode::kInternal)
      spdlog::error("{} {}: {}", method_name(request.method), route.pattern, e.what());
    return error_response(e);
  } catch (const std::exception& e) {
    spdlog::error("{} {} failed: {}", method_name(request.method), route.pattern, e.what());
    return error_response(ErrorCode::kInternal, "The server failed to handle the request.");
  } catch (...) {
    // Whatever was thrown, the caller gets an answer: a worker that ends without one leaves
    // the client waiting until its connection times out.
    spdlog::error("{} {} failed with a non-standard exception", method_name(request.method),
                  route.pattern);
    return error_response(ErrorCode::kInternal, "The server failed to handle the request.");
  }
}

Response not_found_response() {
  return error_response(ErrorCode::kNotFound, "No such resource.");
}

Response method_not_allowed_response(const std::string& allow) {
  Response r =
      error_response(ErrorCode::kMethodNotAllowed,
                     "This resource does not accept that method; it accepts " + allow + ".");
  r.set_header("Allow", allow);
  return r;
}

void log_access(const Request& request, int status, std::chrono::nanoseconds latency, bool quiet) {
  auto level = quiet ? spdlog::level::debug : spdlog::level::info;
  if (!spdlog::should_log(level)) return;
  log::RequestScope scope(request.request_id);
  // The target's query may carry ids but never secrets: credentials travel in headers.
  spdlog::log(level, "{} {} {} {:.3f}ms {}", method_name(request.method), request.target, status,
              static_cast<double>(latency.count()) / 1e6, request.remote_ip);
}

}  // namespace gpurent::http
