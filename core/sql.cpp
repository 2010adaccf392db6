// Timestamps in and out of statements.
#include "core/sql.h"

#include <cstdio>

namespace gpurent {

std::string sql_timestamp(Timestamp t) {
  auto us = t.time_since_epoch().count();
  auto base = format_rfc3339(std::chrono::floor<std::chrono::seconds>(t));
  char frac[16];
  std::snprintf(frac, sizeof frac, ".%06lld",
                static_cast<long long>(((us % 1000000) + 1000000) % 1000000));
  std::string out = base.substr(0, base.size() - 1);
  out.append(frac).append("Z");
  return out;
}

Timestamp timestamp_from_micros(long long micros) {
  return Timestamp(std::chrono::microseconds(micros));
}

Timestamp read_timestamp(const pqxx::field& f) {
  return timestamp_from_micros(f.as<long long>());
}

std::optional<Timestamp> read_optional_timestamp(const pqxx::field& f) {
  if (f.is_null()) return std::nullopt;
  return read_timestamp(f);
}

}  // namespace gpurent
