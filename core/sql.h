// The database vocabulary every store shares: timestamps in and out of PostgreSQL, and
// nullable columns as optionals. Records keep typed values (Timestamp, not text); the API
// edge formats them (format_rfc3339).
#pragma once

#include "core/clock.h"

#include <pqxx/field>

#include <optional>
#include <string>

// A timestamptz column as whole microseconds since the epoch, which read_timestamp() turns
// back into a Timestamp exactly (PostgreSQL keeps microseconds too).
#define SQL_MICROS(column) "(extract(epoch FROM " column ") * 1000000)::bigint"

namespace gpurent {

// A timestamp as a statement parameter: RFC 3339 UTC with microseconds, for `$n` where a
// timestamptz is expected. Nothing of its precision is lost.
std::string sql_timestamp(Timestamp t);

Timestamp timestamp_from_micros(long long micros);

// A column selected with SQL_MICROS.
Timestamp read_timestamp(const pqxx::field& f);
std::optional<Timestamp> read_optional_timestamp(const pqxx::field& f);

// A nullable column as an optional.
template <typename T>
std::optional<T> optional_field(const pqxx::field& f) {
  return f.is_null() ? std::nullopt : std::optional<T>(f.as<T>());
}

}  // namespace gpurent
