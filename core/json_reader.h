// Strict reading of a JSON object's fields, for every body the product accepts (the API's
// requests, the payment provider's callbacks): unknown, missing, mistyped or out-of-range
// fields are Error(kInvalidRequest) naming the field, as the API answers them (400).
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <set>
#include <string>

namespace gpurent {

// Reads fields from a JSON object; finish() rejects any field that was not read. A null
// field reads as absent.
class JsonObjectReader {
 public:
  // Throws invalid_request unless `value` is an object. `prefix` names nested fields in
  // errors: "spec." for the fields of "spec".
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

}  // namespace gpurent
