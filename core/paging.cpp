// Cursor encoding for keyset paging.
#include "core/paging.h"

#include "core/error.h"

#include <charconv>

namespace gpurent {

std::string encode_cursor(const Keyset& key) {
  std::string out = std::to_string(key.at.time_since_epoch().count());
  out.append(".").append(key.id);
  return out;
}

Keyset decode_cursor(std::string_view cursor, bool (*valid_id)(std::string_view id)) {
  auto bad = [] { return Error::invalid_field("cursor", "is not a cursor from this list"); };
  auto dot = cursor.find('.');
  if (dot == std::string_view::npos || dot == 0 || dot > 18) throw bad();
  long long micros = 0;
  auto [end, ec] = std::from_chars(cursor.data(), cursor.data() + dot, micros);
  if (ec != std::errc() || end != cursor.data() + dot || micros < 0) throw bad();
  std::string_view id = cursor.substr(dot + 1);
  if (id.empty() || !valid_id(id)) throw bad();
  return {Timestamp(std::chrono::microseconds(micros)), std::string(id)};
}

}  // namespace gpurent
