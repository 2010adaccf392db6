// Times and dates as the product reads them from text. Stored times are Timestamps
// (core/clock.h, which also writes them: format_rfc3339); the edges, the scheduler and the
// fuzz targets read them here, so a date or a time means the same everywhere.
#pragma once

#include "core/clock.h"

#include <optional>
#include <string>
#include <string_view>

namespace gpurent {

// A calendar date with no time zone: what "a rental from 2027-01-10" names before a site's
// time zone makes it an instant (midnight there).
struct CivilDate {
  int year = 1970;
  int month = 1;
  int day = 1;

  std::string text() const;  // YYYY-MM-DD
  bool operator==(const CivilDate&) const = default;
};

// YYYY-MM-DD, a real calendar date: the days of its month, leap years included, years
// 0001..9999. Checked here, not left to PostgreSQL: a statement refusing "2027-02-30" would
// abort the whole transaction, and inside an Idempotency-Key unit that is the request's.
std::optional<CivilDate> parse_civil_date(std::string_view text);

// An RFC 3339 date-time (`2026-12-01T00:00:00Z`, `2026-12-01T03:00:00.25+03:00`): 'T' or
// 't', a fraction of up to 9 digits (kept to the microsecond), 'Z', 'z' or ±HH:MM. Nullopt
// for anything else, including a leap second and years outside 0001..9999.
std::optional<Timestamp> parse_rfc3339(std::string_view text);

}  // namespace gpurent
