// What happens around every handler call, independent of the transport: error mapping,
// the request-id log scope, the access log line.
#pragma once

#include "api/http_types.h"
#include "api/router.h"

#include <chrono>

namespace gpurent::http {

// Runs the route's handler, after check_request_input (api/request_input.h) has accepted the
// request's path parameters, query string and data headers. Any gpurent::Error becomes its
// contract response; any other exception is logged and answered with 500 internal, never a
// crash and never silence. WouldBlock alone passes through: the server runs the request
// again on a worker.
Response invoke(const Route& route, const Request& request);

Response not_found_response();
Response method_not_allowed_response(const std::string& allow);

// One access log line: method, target, status, latency. Quiet routes log at debug level.
void log_access(const Request& request, int status, std::chrono::nanoseconds latency, bool quiet);

}  // namespace gpurent::http
