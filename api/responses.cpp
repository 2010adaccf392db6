// Error code → status mapping and JSON response construction.
#include "api/responses.h"

#include <nlohmann/json.hpp>

namespace gpurent::http {

int status_for(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidRequest:
    case ErrorCode::kInvalidJson:
      return 400;
    case ErrorCode::kUnauthenticated:
      return 401;
    case ErrorCode::kInsufficientFunds:
      return 402;
    case ErrorCode::kForbidden:
      return 403;
    case ErrorCode::kNotFound:
      return 404;
    case ErrorCode::kMethodNotAllowed:
      return 405;
    case ErrorCode::kInsufficientCapacity:
    case ErrorCode::kInvalidState:
    case ErrorCode::kConflict:
      return 409;
    case ErrorCode::kPayloadTooLarge:
      return 413;
    case ErrorCode::kIncompatibleImage:
    case ErrorCode::kIdempotencyKeyReused:
    case ErrorCode::kQuotaExceeded:
      return 422;
    case ErrorCode::kRateLimited:
      return 429;
    case ErrorCode::kUnavailable:
      return 503;
    case ErrorCode::kInternal:
      return 500;
  }
  return 500;
}

Response json_response(int status, const nlohmann::json& body) {
  Response r;
  r.status = status;
  // Text that is not UTF-8 can reach a body only by mistake (a handler echoing request
  // bytes); it is printed as U+FFFD rather than failing the response.
  r.body = body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return r;
}

Response error_response(const Error& error) {
  Response r = json_response(status_for(error.code()), error.to_json());
  // Every 503 is worth retrying, and says when: clients (the CLI among them) wait this long
  // before the next attempt instead of guessing. A second is about how long a database
  // restart or a failover leaves connections refused.
  if (r.status == 503) r.set_header("Retry-After", "1");
  return r;
}

Response error_response(ErrorCode code, std::string message) {
  return error_response(Error(code, std::move(message)));
}

Response list_response(int status, nlohmann::json items,
                       const std::optional<std::string>& next_cursor) {
  return json_response(status, {{"items", std::move(items)},
                                {"next_cursor", next_cursor ? nlohmann::json(*next_cursor)
                                                            : nlohmann::json(nullptr)}});
}

}  // namespace gpurent::http
