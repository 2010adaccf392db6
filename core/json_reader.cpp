// JsonObjectReader: typed getters that remember what was asked for, and finish() refusing the
// rest.
#include "core/json_reader.h"

#include "core/error.h"

namespace gpurent {

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

}  // namespace gpurent
