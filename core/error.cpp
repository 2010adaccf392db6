// Wire names and JSON form of gpurent::Error.
#include "core/error.h"

namespace gpurent {

std::string_view error_code_name(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidRequest:
      return "invalid_request";
    case ErrorCode::kInvalidJson:
      return "invalid_json";
    case ErrorCode::kUnauthenticated:
      return "unauthenticated";
    case ErrorCode::kInsufficientFunds:
      return "insufficient_funds";
    case ErrorCode::kForbidden:
      return "forbidden";
    case ErrorCode::kNotFound:
      return "not_found";
    case ErrorCode::kMethodNotAllowed:
      return "method_not_allowed";
    case ErrorCode::kInsufficientCapacity:
      return "insufficient_capacity";
    case ErrorCode::kInvalidState:
      return "invalid_state";
    case ErrorCode::kConflict:
      return "conflict";
    case ErrorCode::kPayloadTooLarge:
      return "payload_too_large";
    case ErrorCode::kIncompatibleImage:
      return "incompatible_image";
    case ErrorCode::kIdempotencyKeyReused:
      return "idempotency_key_reused";
    case ErrorCode::kQuotaExceeded:
      return "quota_exceeded";
    case ErrorCode::kRateLimited:
      return "rate_limited";
    case ErrorCode::kUnavailable:
      return "unavailable";
    case ErrorCode::kInternal:
      return "internal";
  }
  return "internal";
}

nlohmann::json Error::to_json() const {
  return {
      {"error", {{"code", error_code_name(code_)}, {"message", what()}, {"details", details_}}}};
}

Error Error::invalid_field(std::string_view field, std::string_view reason) {
  std::string message = "Field '" + std::string(field) + "' " + std::string(reason) + ".";
  return Error(ErrorCode::kInvalidRequest, std::move(message),
               {{"field", field}, {"reason", reason}});
}

Error Error::out_of_range(std::string_view field, long long minimum, long long maximum) {
  std::string reason = "must be " + std::to_string(minimum) + " to " + std::to_string(maximum);
  return Error(ErrorCode::kInvalidRequest, "Field '" + std::string(field) + "' " + reason + ".",
               {{"field", field}, {"reason", reason}, {"minimum", minimum}, {"maximum", maximum}});
}

}  // namespace gpurent
