// Shared SQL helpers of the identity stores.
#include "identity/sql_common.h"

#include "core/error.h"
#include "core/id.h"

#include <charconv>

namespace gpurent::identity {

std::string make_keyset_cursor(long long created_micros, const std::string& id) {
  std::string out = std::to_string(created_micros);
  out.append(".").append(id);
  return out;
}

KeysetPosition parse_keyset_cursor(const std::string& cursor, std::string_view id_prefix) {
  auto bad = [] { return Error::invalid_field("cursor", "is not a cursor from this list"); };
  auto dot = cursor.find('.');
  if (dot == std::string::npos || dot == 0 || dot > 18) throw bad();
  long long micros = 0;
  auto [end, ec] = std::from_chars(cursor.data(), cursor.data() + dot, micros);
  if (ec != std::errc() || end != cursor.data() + dot || micros < 0) throw bad();
  std::string id = cursor.substr(dot + 1);
  if (!is_valid_id(id_prefix, id)) throw bad();
  return {sql_timestamp(Timestamp(std::chrono::microseconds(micros))), std::move(id)};
}

}  // namespace gpurent::identity
