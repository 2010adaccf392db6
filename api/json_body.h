// Strict reading of JSON request bodies: malformed JSON is 400 invalid_json; unknown,
// missing, mistyped or unrepresentable fields are 400 invalid_request naming the field.
#pragma once

#include "api/http_types.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <set>
#include <string>
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

// Reads fields from a JSON object; finish() rejects any field that was not read.
class JsonObjectReader {
 public:
  // Throws invalid_request unless `value` is an object.
  explicit JsonObjectReader(const nlohmann::json& value, std::string prefix = "");

  std::int64_t required_int(const std::string& field, std::int64_t min, std::int64_t max);
  std::optional<std::int64_t> optional_int(const std::string& field, std::int64_t min,
                                           std::int64_t max);
  std::string required_string(const std::string& field, std::size_t max_length);
  std::optional<std::string> optional_string(const std::string& field, std::size_t max_length);
  std::optional<bool> optional_bool(const std::string& field);
  // Any JSON value (nullptr when absent or null), for fields with their own validation.
  const nlohmann::json* optional_value(const std::string& field) { return find(field); }

  // Throws invalid_request naming the first field that no getter asked for.
  void finish() const;

 private:
  const nlohmann::json* find(const std::string& field);
  std::string path(const std::string& field) const { return prefix_ + field; }

  const nlohmann::json& value_;
  std::string prefix_;
  std::set<std::string> seen_;
};

}  // namespace gpurent::http
