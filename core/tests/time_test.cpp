// core/time: the one calendar-date reader the booking's start and the availability
// calendar's `from` share (they used to disagree: one took 2027-02-30), and the RFC 3339
// reader's agreement with it on the date part.
#include "core/time.h"

#include <gtest/gtest.h>

namespace gpurent {
namespace {

TEST(CivilDates, OnlyRealCalendarDatesAreRead) {
  struct Case {
    const char* text;
    bool ok;
  };
  for (const auto& c : std::initializer_list<Case>{{"2027-01-10", true},
                                                   {"2028-02-29", true},  // leap year
                                                   {"2000-02-29", true},  // divisible by 400
                                                   {"1900-02-29", false},
                                                   {"2027-02-29", false},
                                                   {"2027-02-30", false},
                                                   {"2027-04-31", false},
                                                   {"2027-13-01", false},
                                                   {"2027-00-10", false},
                                                   {"2027-01-00", false},
                                                   {"0000-01-01", false},
                                                   {"9999-12-31", true},
                                                   {"2027-1-10", false},
                                                   {"2027/01/10", false},
                                                   {"2027-01-10T00:00:00Z", false},
                                                   {"+027-01-10", false},
                                                   {"", false}}) {
    auto d = parse_civil_date(c.text);
    EXPECT_EQ(d.has_value(), c.ok) << c.text;
    if (d) {
      EXPECT_EQ(d->text(), c.text);
      // Midnight UTC of the same date is a time the RFC 3339 reader takes.
      EXPECT_TRUE(parse_rfc3339(d->text() + "T00:00:00Z")) << c.text;
    } else if (std::string_view(c.text).size() == 10) {
      EXPECT_FALSE(parse_rfc3339(std::string(c.text) + "T00:00:00Z")) << c.text;
    }
  }
  EXPECT_EQ(*parse_civil_date("2027-03-04"), (CivilDate{2027, 3, 4}));
}

}  // namespace
}  // namespace gpurent
