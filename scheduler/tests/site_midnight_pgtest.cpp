// GPURENT_SQL_SITE_MIDNIGHT against PostgreSQL's time zone database: a date's midnight at a
// site, on either side of daylight-saving changes, in UTC, and a date that does not exist.
#include "scheduler/site_midnight.h"

#include "core/sql.h"
#include "core/time.h"
#include "tests/support/pg_harness.h"

#include <gtest/gtest.h>

#include <pqxx/pqxx>

#include <string>

namespace gpurent::scheduler {
namespace site_midnight_pgtest {

constexpr const char* kMidnight = "SELECT " SQL_MICROS(GPURENT_SQL_SITE_MIDNIGHT("$1::date", "$2"));

TEST(SiteMidnight, IsTheDatesFirstInstantInTheSitesZone) {
  struct Case {
    const char* date;
    const char* timezone;
    const char* midnight;  // as RFC 3339 in UTC
  };
  const Case cases[] = {
      {"2027-01-10", "Europe/Moscow", "2027-01-09T21:00:00Z"},
      {"2027-01-10", "UTC", "2027-01-10T00:00:00Z"},
      {"2027-01-10", "Asia/Kolkata", "2027-01-09T18:30:00Z"},
      {"2027-01-10", "Pacific/Kiritimati", "2027-01-09T10:00:00Z"},
      {"2027-01-10", "Pacific/Pago_Pago", "2027-01-10T11:00:00Z"},
      // Clocks go forward at 02:00 on 28 March in Berlin: that day is 23 hours long.
      {"2027-03-28", "Europe/Berlin", "2027-03-27T23:00:00Z"},
      {"2027-03-29", "Europe/Berlin", "2027-03-28T22:00:00Z"},
      // And back at 02:00 on 7 November in New York: 25 hours.
      {"2027-11-07", "America/New_York", "2027-11-07T04:00:00Z"},
      {"2027-11-08", "America/New_York", "2027-11-08T05:00:00Z"},
      {"2028-02-29", "UTC", "2028-02-29T00:00:00Z"},
  };
  testing::TestDatabase db(testing::TestDatabase::Kind::kEmpty);
  pqxx::connection c(db.url());
  pqxx::nontransaction tx(c);
  for (const auto& k : cases) {
    SCOPED_TRACE(std::string(k.date) + " at " + k.timezone);
    auto row = tx.exec_params1(kMidnight, k.date, k.timezone);
    EXPECT_EQ(format_rfc3339(read_timestamp(row[0])), k.midnight);
  }
}

TEST(SiteMidnight, ADateThatDoesNotExistIsADataException) {
  testing::TestDatabase db(testing::TestDatabase::Kind::kEmpty);
  pqxx::connection c(db.url());
  for (const char* date : {"2027-02-30", "2027-13-01", "tomorrow-ish"}) {
    SCOPED_TRACE(date);
    pqxx::nontransaction tx(c);
    EXPECT_THROW(tx.exec_params1(kMidnight, date, "Europe/Moscow"), pqxx::data_exception);
  }
}

}  // namespace site_midnight_pgtest
}  // namespace gpurent::scheduler
