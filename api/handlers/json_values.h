// Small value conversions the handlers share when they read and print JSON.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>

namespace gpurent::http {

// The value, or JSON null when it is absent: optional fields print as null, never missing.
template <typename Optional>
nlohmann::json optional_json(const Optional& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

// `s` without leading and trailing spaces and tabs.
inline std::string trimmed(std::string_view s) {
  auto b = s.find_first_not_of(" \t");
  auto e = s.find_last_not_of(" \t");
  return b == std::string_view::npos ? std::string() : std::string(s.substr(b, e - b + 1));
}

}  // namespace gpurent::http
