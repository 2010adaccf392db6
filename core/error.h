// Typed errors shared by every module; api/ maps each code to an HTTP status in one place.
#pragma once

#include <nlohmann/json.hpp>

#include <stdexcept>
#include <string>
#include <string_view>

namespace gpurent {

// The contract's error codes (API.md "Conventions"), plus the few the HTTP layer needs.
enum class ErrorCode {
  kInvalidRequest,
  kInvalidJson,
  kUnauthenticated,
  kInsufficientFunds,
  kForbidden,
  kNotFound,
  kMethodNotAllowed,
  kInsufficientCapacity,
  kInvalidState,
  kConflict,
  kPayloadTooLarge,
  kIncompatibleImage,
  kIdempotencyKeyReused,
  kQuotaExceeded,
  kRateLimited,
  kUnavailable,
  kInternal,
};

// The wire name of a code, e.g. "invalid_request".
std::string_view error_code_name(ErrorCode code);

// An expected failure with a code, a human sentence and structured details.
class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, std::string message, nlohmann::json details = nlohmann::json::object())
      : std::runtime_error(std::move(message)), code_(code), details_(std::move(details)) {}

  ErrorCode code() const { return code_; }
  const nlohmann::json& details() const { return details_; }

  // {"error": {"code", "message", "details"}} as the contract prints it.
  nlohmann::json to_json() const;

  // 400 invalid_request naming the offending field.
  static Error invalid_field(std::string_view field, std::string_view reason);
  // 400 invalid_request for a number outside [minimum, maximum], with the allowed range in
  // its details ("minimum", "maximum"), so a client can correct itself without the docs.
  static Error out_of_range(std::string_view field, long long minimum, long long maximum);

 private:
  ErrorCode code_;
  nlohmann::json details_;
};

// A configuration problem: start-up stops with this one line.
class ConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace gpurent
