// SQL fragments and statements shared by the identity stores.
#pragma once

#include "core/clock.h"
#include "core/db_pool.h"
#include "core/sql.h"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

// Timestamps leave the database as RFC 3339 UTC with second precision, as the API prints them.
#define RFC3339(column) "to_char(" column " AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')"

// A timestamp column as whole microseconds since the epoch: half of a keyset cursor.
#define EPOCH_MICROS(column) "(extract(epoch FROM " column ") * 1000000)::bigint"

namespace gpurent::identity {

using gpurent::optional_field;
using gpurent::sql_timestamp;

// One page of a list (API.md "Lists"): next_cursor is absent on the last page.
template <typename T>
struct Page {
  std::vector<T> items;
  std::optional<std::string> next_cursor;
};

// Keyset paging in (created_at, id) order: a cursor is "<micros>.<id>" of the last row of
// the previous page, so rows added meanwhile neither repeat nor shift a page.
std::string make_keyset_cursor(long long created_micros, const std::string& id);

struct KeysetPosition {
  std::string created_at;  // as a statement parameter (sql_timestamp)
  std::string id;
};
// Throws invalid_request naming "cursor" unless `cursor` came from make_keyset_cursor with
// an id of `id_prefix`.
KeysetPosition parse_keyset_cursor(const std::string& cursor, std::string_view id_prefix);

// The page of `rows`, fetched in keyset order with LIMIT limit + 1 (one row more than asked
// says whether another page follows). `read` turns a row into an item; column
// `micros_column` holds the row's EPOCH_MICROS(created_at) and `id_of(item)` its id, which
// together make the next cursor.
template <typename T, typename Read, typename IdOf>
Page<T> keyset_page(const pqxx::result& rows, int limit, int micros_column, Read read, IdOf id_of) {
  Page<T> page;
  long long last_micros = 0;
  for (const auto& row : rows) {
    if (static_cast<int>(page.items.size()) == limit) {
      page.next_cursor = make_keyset_cursor(last_micros, id_of(page.items.back()));
      break;
    }
    page.items.push_back(read(row));
    last_micros = row[micros_column].template as<long long>();
  }
  return page;
}

// One audit row: at, org_id, actor_user_id, action, target, ip, request_id, details (JSON
// text). Stores write it inside the transaction of the change it records.
inline constexpr Statement kInsertAuditRow = {
    "identity_insert_audit",
    "INSERT INTO audit_log (at, org_id, actor_user_id, action, target, ip, request_id, details)"
    " VALUES ($1, $2, $3, $4, $5, $6, $7, $8::jsonb)"};

}  // namespace gpurent::identity
