// Strict reading of list routes' query strings: an unknown, repeated, empty or badly escaped
// parameter is 400 invalid_request naming it, as unknown body fields are, so a mistyped
// filter never silently widens a listing.
#pragma once

#include "api/http_types.h"
#include "core/clock.h"
#include "core/time.h"

#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gpurent::http {

inline constexpr int kDefaultPageLimit = 50;
inline constexpr int kMaxPageLimit = 500;

// The product's one RFC 3339 reader (core/time.h), by the name the routes have used.
using gpurent::parse_rfc3339;

// The path parameter `param` as an id with `prefix`; anything else is 404 not_found with
// `not_found` as its message ("No such rental."): a malformed id names no object, and a
// caller must not learn more from it than from another org's.
std::string path_id(const Request& request, std::string_view param, std::string_view prefix,
                    std::string_view not_found);

class QueryParams {
 public:
  // Throws invalid_request naming the first parameter not in `known`, given twice, or not
  // percent-decodable.
  QueryParams(const Request& request, std::initializer_list<std::string_view> known);

  // The decoded value; invalid_request when present but empty.
  std::optional<std::string> text(std::string_view name) const;
  // `limit`: 1..500, 50 when absent.
  int limit() const;
  // A whole number from `min` to `max`; invalid_request saying so otherwise.
  std::optional<int> whole_number(std::string_view name, int min, int max) const;
  // `cursor`: opaque here; the store that made it checks it.
  std::optional<std::string> cursor() const { return text("cursor"); }
  // An RFC 3339 time, clamped to 1970..9999 (no stored time lies outside).
  std::optional<Timestamp> timestamp(std::string_view name) const;
  // An id with `prefix` (`usr`, `org`); invalid_request when malformed.
  std::optional<std::string> id(std::string_view name, std::string_view prefix) const;

 private:
  std::vector<std::pair<std::string, std::string>> params_;
};

}  // namespace gpurent::http
