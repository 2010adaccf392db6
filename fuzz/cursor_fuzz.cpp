// Fuzz target: list cursors (core/paging.h), which clients hand back as they please. The
// input is one cursor as the `cursor` query parameter carries it, decoded for two kinds of
// list: one keyed by prefixed ids (SSH keys) and one by row numbers (the audit log).
//
// decode_cursor either refuses with an invalid_request naming "cursor" or gives a keyset
// whose time is not before 1970 and whose id the list accepts; encoding that keyset gives a
// cursor that decodes to the same keyset, and gives the input back when its number was
// written as encode_cursor writes it (no sign, no leading zero). A store turns the time into a
// statement parameter (sql_timestamp) without failing. The other way round, every keyset a listing
// can make (a time from 1970 to 9999, an id of its kind), encoded, decodes to itself.
#include "core/paging.h"

#include "core/error.h"
#include "core/id.h"
#include "core/sql.h"
#include "fuzz/http_refusal.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

namespace {

using gpurent::Error;
using gpurent::Keyset;
using gpurent::Timestamp;

bool is_key_id(std::string_view id) {
  return gpurent::is_valid_id(gpurent::id_prefix::kSshKey, id);
}

// As identity/audit_store.cpp reads its row ids: a positive number without leading zeros.
bool is_row_id(std::string_view id) {
  long long value = 0;
  auto [end, ec] = std::from_chars(id.data(), id.data() + id.size(), value);
  return ec == std::errc() && end == id.data() + id.size() && value > 0 && id.front() != '0';
}

void check_decoded(std::string_view cursor, bool (*valid_id)(std::string_view)) {
  Keyset key;
  try {
    key = gpurent::decode_cursor(cursor, valid_id);
  } catch (const Error& e) {
    gpurent::fuzz::check_field_refusal(e, "cursor");
    return;
  }
  auto micros = key.at.time_since_epoch().count();
  if (micros < 0 || key.id.empty() || !valid_id(key.id)) abort();
  (void)gpurent::sql_timestamp(key.at);
  std::string again = gpurent::encode_cursor(key);
  Keyset back;
  try {
    back = gpurent::decode_cursor(again, valid_id);
  } catch (...) {
    abort();
  }
  if (back.at != key.at || back.id != key.id) abort();
  auto dot = cursor.find('.');
  // "-0" and "007" name times too; only the form encode_cursor writes comes back as it was.
  bool canonical = cursor[0] >= '0' && cursor[0] <= '9' && (dot == 1 || cursor[0] != '0');
  if (canonical && again != cursor) abort();
}

// A keyset a listing could make, drawn from the input's bytes.
Keyset keyset_from(std::string_view bytes) {
  static constexpr char kBase62[] =
      "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
  std::uint64_t raw = 0;
  std::memcpy(&raw, bytes.data(), std::min(bytes.size(), sizeof raw));
  // 1970-01-01 up to the end of 9999, in microseconds.
  constexpr std::uint64_t kSpan = 253402300800000000ULL;
  Keyset key{Timestamp(std::chrono::microseconds(raw % kSpan)), "key_"};
  for (std::size_t i = 0; i < 22; ++i) {
    auto b = i + 8 < bytes.size() ? static_cast<unsigned char>(bytes[i + 8]) : i;
    key.id += kBase62[b % 62];
  }
  return key;
}

void check_encoded(std::string_view bytes) {
  Keyset key = keyset_from(bytes);
  if (!is_key_id(key.id)) abort();
  try {
    Keyset back = gpurent::decode_cursor(gpurent::encode_cursor(key), is_key_id);
    if (back.at != key.at || back.id != key.id) abort();
  } catch (...) {
    abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  try {
    check_decoded(input, is_key_id);
    check_decoded(input, is_row_id);
    check_encoded(input);
  } catch (...) {
    abort();  // a refusal other than gpurent::Error would be answered 500
  }
  return 0;
}
