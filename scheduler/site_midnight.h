// Where a rental day begins: midnight of a date in a site's time zone, as SQL, for every
// statement that turns a date into an instant (a booking's start, the availability calendar).
#pragma once

// The instant `date` begins in the IANA time zone `timezone` (a site's `timezone` column, or
// 'UTC'), as a timestamptz. PostgreSQL's time zone database decides, so a date in a
// daylight-saving change is right. Both arguments are SQL expressions; a date PostgreSQL
// cannot read fails the statement with a data_exception, which callers turn into their
// field's 400. scheduler/tests/site_midnight_pgtest.cpp holds it to known instants.
#define GPURENT_SQL_SITE_MIDNIGHT(date, timezone) \
  "((" date ")::timestamp AT TIME ZONE " timezone ")"
