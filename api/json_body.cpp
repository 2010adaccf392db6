// JSON body parsing and strict field access.
#include "api/json_body.h"

#include "core/error.h"

#include <cctype>

namespace gpurent::http {

bool has_media_type(const Request& request, std::string_view type) {
  std::string_view base = request.header("Content-Type");
  base = base.substr(0, base.find(';'));  // parameters (charset) do not matter
  while (!base.empty() && (base.back() == ' ' || base.back() == '\t')) base.remove_suffix(1);
  while (!base.empty() && (base.front() == ' ' || base.front() == '\t')) base.remove_prefix(1);
  if (base.size() != type.size()) return false;
  for (std::size_t i = 0; i < base.size(); ++i) {  // media types ignore case (RFC 9110)
    if (std::tolower(static_cast<unsigned char>(base[i])) != type[i]) return false;
  }
  return true;
}

nlohmann::json parse_json_body(const Request& request) {
  if (request.body.empty()) {
    throw Error(ErrorCode::kInvalidJson, "The request body is empty; a JSON object is expected.");
  }
  if (!has_media_type(request, "application/json")) {
    throw Error(ErrorCode::kInvalidRequest, "The body must be sent as application/json.",
                {{"field", "Content-Type"}, {"reason", "must be application/json"}});
  }
  // nlohmann's parser also refuses ill-formed UTF-8 inside strings.
  try {
    return nlohmann::json::parse(request.body);
  } catch (const nlohmann::json::parse_error& e) {
    throw Error(
        ErrorCode::kInvalidJson,
        "The request body is not valid JSON (error at byte " + std::to_string(e.byte) + ").",
        {{"offset", e.byte}});
  }
}

JsonObjectReader::JsonObjectReader(const nlohmann::json& value, std::string prefix)
    : value_(value), prefix_(std::move(prefix)) {
  if (!value_.is_object()) {
    // The prefix is "spec." for fields inside "spec"; the object itself is "spec".
    std::string field = prefix_.empty() ? "body" : prefix_;
    if (field.size() > 1 && field.back() == '.') field.pop_back();
    throw Error(ErrorCode::kInvalidRequest, "The request body must be a JSON object.",
                {{"field", field}, {"reason", "must be an object"}});
  }
}

const nlohmann::json* JsonObjectReader::find(const std::string& field) {
  seen_.insert(field);
  auto it = value_.find(field);
  if (it == value_.end() || it->is_null()) return nullptr;
  return &*it;
}

std::optional<std::int64_t> JsonObjectReader::optional_int(const std::string& field,
                                                           std::int64_t min, std::int64_t max) {
  const auto* v = find(field);
  if (!v) return std::nullopt;
  if (!v->is_number_integer()) throw Error::invalid_field(path(field), "must be an integer");
  if (v->is_number_unsigned() && v->get<std::uint64_t>() > static_cast<std::uint64_t>(max)) {
    throw Error::invalid_field(
        path(field), "must be between " + std::to_string(min) + " and " + std::to_string(max));
  }
  auto n = v->get<std::int64_t>();
  if (n < min || n > max) {
    throw Error::invalid_field(
        path(field), "must be between " + std::to_string(min) + " and " + std::to_string(max));
  }
  return n;
}

std::int64_t JsonObjectReader::required_int(const std::string& field, std::int64_t min,
                                            std::int64_t max) {
  auto v = optional_int(field, min, max);
  if (!v) throw Error::invalid_field(path(field), "is required");
  return *v;
}

std::optional<std::string> JsonObjectReader::optional_string(const std::string& field,
                                                             std::size_t max_length) {
  const auto* v = find(field);
  if (!v) return std::nullopt;
  if (!v->is_string()) throw Error::invalid_field(path(field), "must be a string");
  const auto& s = v->get_ref<const std::string&>();
  if (s.size() > max_length) {
    throw Error::invalid_field(path(field),
                               "must be at most " + std::to_string(max_length) + " bytes");
  }
  return s;
}

std::string JsonObjectReader::required_string(const std::string& field, std::size_t max_length) {
  auto v = optional_string(field, max_length);
  if (!v) throw Error::invalid_field(path(field), "is required");
  return *v;
}

std::optional<bool> JsonObjectReader::optional_bool(const std::string& field) {
  const auto* v = find(field);
  if (!v) return std::nullopt;
  if (!v->is_boolean()) throw Error::invalid_field(path(field), "must be true or false");
  return v->get<bool>();
}

void JsonObjectReader::finish() const {
  for (const auto& [key, _] : value_.items()) {
    if (!seen_.count(key)) throw Error::invalid_field(path(key), "is not a known field");
  }
}

}  // namespace gpurent::http
