// Building responses: JSON bodies and the contract's error format, in one place.
#pragma once

#include "api/http_types.h"
#include "core/error.h"

#include <nlohmann/json_fwd.hpp>

#include <optional>
#include <string>

namespace gpurent::http {

// The HTTP status for an error code (API.md "Conventions" table).
int status_for(ErrorCode code);

Response json_response(int status, const nlohmann::json& body);
Response error_response(const Error& error);
// A list in the contract's shape (API.md "Lists"): {"items": […], "next_cursor": "…"|null}.
Response list_response(int status, nlohmann::json items,
                       const std::optional<std::string>& next_cursor);
Response error_response(ErrorCode code, std::string message);

}  // namespace gpurent::http
