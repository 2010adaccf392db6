// Strict reading of JSON request bodies: malformed JSON is 400 invalid_json; unknown,
// missing, mistyped or unrepresentable fields are 400 invalid_request naming the field.
#pragma once

#include "api/http_types.h"
#include "core/json_reader.h"

#include <nlohmann/json.hpp>

#include <string_view>

namespace gpurent::http {

// Whether the request's Content-Type is `type` (lower case), ignoring case, surrounding
// whitespace and parameters such as charset.
bool has_media_type(const Request& request, std::string_view type);

// Parses the body as one JSON value. Requires Content-Type application/json when a body
// is present. Throws Error(kInvalidJson) with the parser's position on malformed input, and
// Error(kInvalidRequest) naming the field for a number no double can hold (1e400; the path,
// as in "items[2].gpu_count", and the offset) or for nesting deeper than 64 levels (the
// top-level field that holds it).
nlohmann::json parse_json_body(const Request& request);

// The routes' name for the one strict object reader (core/json_reader.h).
using gpurent::JsonObjectReader;

}  // namespace gpurent::http
