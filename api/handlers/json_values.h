// Small value conversions the handlers share when they read and print JSON.
#pragma once

#include "core/clock.h"
#include "core/error.h"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <string_view>

namespace gpurent::http {

// The value, or JSON null when it is absent: optional fields print as null, never missing.
template <typename Optional>
nlohmann::json optional_json(const Optional& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

// A time as the API prints it: RFC 3339 in UTC, to the second. Records keep Timestamps;
// this is the one place they become text.
inline nlohmann::json time_json(Timestamp t) {
  return format_rfc3339(t);
}

// A time, or null: the overload optional_json() picks for optional times.
inline nlohmann::json optional_json(const std::optional<Timestamp>& t) {
  return t ? time_json(*t) : nlohmann::json(nullptr);
}

// `s` without leading and trailing spaces and tabs.
inline std::string trimmed(std::string_view s) {
  auto b = s.find_first_not_of(" \t");
  auto e = s.find_last_not_of(" \t");
  return b == std::string_view::npos ? std::string() : std::string(s.substr(b, e - b + 1));
}

// `s` with ASCII letters lower-cased (sort keys that ignore case, as the name indexes do).
inline std::string ascii_lower(std::string s) {
  for (auto& c : s) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return s;
}

// C0 controls, DEL and the C1 controls (U+0080..U+009F, encoded 0xC2 0x80..0x9F).
inline bool has_control_characters(std::string_view s) {
  for (std::size_t i = 0; i < s.size(); ++i) {
    auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c == 0x7f) return true;
    if (c == 0xC2 && i + 1 < s.size() && static_cast<unsigned char>(s[i + 1]) < 0xA0) return true;
  }
  return false;
}

// `value` trimmed, when it is 1 to `max` bytes of printable characters; otherwise throws
// invalid_request naming `field`.
inline std::string printable_text(std::string_view field, std::string_view value, std::size_t max) {
  std::string v = trimmed(value);
  if (v.empty() || v.size() > max || has_control_characters(v)) {
    throw Error::invalid_field(field,
                               "must be 1 to " + std::to_string(max) + " printable characters");
  }
  return v;
}

}  // namespace gpurent::http
