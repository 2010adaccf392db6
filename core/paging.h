// One keyset paging scheme for every list (API.md "Lists"). Rows are listed in (time, id)
// order, oldest first, or newest first for logs; a cursor names the last row of the page
// before, so rows added meanwhile neither repeat nor shift a page, and a page costs one
// index range scan however deep it is.
#pragma once

#include "core/clock.h"

#include <pqxx/result>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpurent {

template <typename T>
struct Page {
  std::vector<T> items;
  std::optional<std::string> next_cursor;  // absent on the last page
};

// Where a row sits in a listing: its time (created_at, or at for logs) and its id.
struct Keyset {
  Timestamp at;
  std::string id;
};

// "<micros since the epoch>.<id>": opaque to clients, readable in a log.
std::string encode_cursor(const Keyset& key);

// The keyset a cursor from encode_cursor() names. Throws invalid_request naming "cursor"
// unless it is one whose id passes `valid_id` (e.g. an id of the listed kind), so a cursor
// from another list, or a made-up one, is a 400 rather than a query for nothing.
Keyset decode_cursor(std::string_view cursor, bool (*valid_id)(std::string_view id));

// The page of `rows`, fetched in keyset order with LIMIT limit + 1 (the one row more than
// asked says whether another page follows). `read(row)` makes an item and `key_of(item)`
// its Keyset, which makes the next cursor.
template <typename T, typename Read, typename KeyOf>
Page<T> page_of(const pqxx::result& rows, int limit, Read read, KeyOf key_of) {
  Page<T> page;
  for (const auto& row : rows) {
    if (static_cast<int>(page.items.size()) == limit) {
      page.next_cursor = encode_cursor(key_of(page.items.back()));
      break;
    }
    page.items.push_back(read(row));
  }
  return page;
}

}  // namespace gpurent
