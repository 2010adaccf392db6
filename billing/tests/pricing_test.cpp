// Tests the pricing rules table by table: discount tiers, half-up rounding, the tax split in
// both bases, the tier syntax, SLA credits and rental days.
#include "billing/pricing.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <limits>
#include <optional>
#include <ostream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace gpurent::billing {

// Readable failure messages for gtest.
void PrintTo(const DiscountTier& tier, std::ostream* os) {
  *os << tier.min_days << ":" << tier.percent;
}
void PrintTo(SlaPolicy policy, std::ostream* os) {
  *os << to_string(policy);
}

bool operator==(const DiscountTier& a, const DiscountTier& b) {
  return a.min_days == b.min_days && a.percent == b.percent;
}

namespace pricing_test {

using std::chrono::hours;
using std::chrono::microseconds;
using std::chrono::minutes;
using std::chrono::seconds;

constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
constexpr std::int64_t kMin = std::numeric_limits<std::int64_t>::min();

PricingPolicy tiered() {
  PricingPolicy policy;
  policy.discounts = {{7, 5}, {30, 10}};
  return policy;
}

// ---- Daily price: which tier ----

struct TierCase {
  int days;
  int percent;
  std::int64_t price;
};

TEST(DailyPrice, BestTierWhoseMinDaysHaveBeenReached) {
  const TierCase cases[] = {
      {1, 0, 100000}, {6, 0, 100000},  {7, 5, 95000},   {8, 5, 95000},
      {29, 5, 95000}, {30, 10, 90000}, {31, 10, 90000}, {365, 10, 90000},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(std::to_string(c.days) + " days");
    DailyPrice price = daily_price(tiered(), 100000, c.days);
    EXPECT_EQ(price.list_minor, 100000);
    EXPECT_EQ(price.discount_percent, c.percent);
    EXPECT_EQ(price.price_minor, c.price);
  }
}

TEST(DailyPrice, BestTierIsTheLargestDiscountWhateverTheOrder) {
  PricingPolicy falling;  // a longer rental never loses the shorter tier's larger discount
  falling.discounts = {{7, 10}, {30, 5}};
  EXPECT_EQ(daily_price(falling, 1000, 30).discount_percent, 10);
  EXPECT_EQ(daily_price(falling, 1000, 6).discount_percent, 0);

  PricingPolicy unordered;
  unordered.discounts = {{30, 10}, {7, 5}};
  EXPECT_EQ(daily_price(unordered, 1000, 10).discount_percent, 5);
  EXPECT_EQ(daily_price(unordered, 1000, 30).discount_percent, 10);

  EXPECT_EQ(daily_price(PricingPolicy{}, 1000, 365).discount_percent, 0);
  EXPECT_EQ(daily_price(PricingPolicy{}, 1000, 365).price_minor, 1000);
}

// ---- Daily price: rounding ----

struct RoundingCase {
  std::int64_t list;
  int percent;
  std::int64_t price;  // list * (100 - percent) / 100, a half rounded up
};

TEST(DailyPrice, DiscountedPriceRoundsHalfUp) {
  const RoundingCase cases[] = {
      {333, 5, 316},   // 316.35: down
      {11, 5, 10},     // 10.45: down (not a ceiling)
      {330, 5, 314},   // 313.5: a half goes up (not truncated)
      {30, 5, 29},     // 28.5: up (not to the even 28)
      {5, 10, 5},      // 4.5: up (not to the even 4)
      {10, 5, 10},     // 9.5: the price is rounded, not the discount (which would give 9)
      {1, 5, 1},       // 0.95
      {1, 10, 1},      // 0.9
      {1, 50, 1},      // 0.5
      {1, 51, 0},      // 0.49
      {333, 10, 300},  // 299.7
      {0, 10, 0},      // nothing to discount
      {0, 0, 0},
      {777, 0, 777},                    // no discount, no rounding
      {777, 100, 0},                    // free
      {kMax, 10, 8301034833169298226},  // 8301034833169298226.3, past int64 before dividing
      {kMax, 0, kMax},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(std::to_string(c.list) + " at " + std::to_string(c.percent) + " %");
    PricingPolicy policy;
    policy.discounts = {{2, c.percent}};
    EXPECT_EQ(daily_price(policy, c.list, 2).price_minor, c.price);
    EXPECT_EQ(daily_price(policy, c.list, 1).price_minor, c.list);
  }
}

TEST(DailyPrice, RefusesWhatNoPriceListHolds) {
  EXPECT_THROW(daily_price(tiered(), -1, 7), std::invalid_argument);
  EXPECT_THROW(daily_price(tiered(), 100, 0), std::invalid_argument);
  EXPECT_THROW(daily_price(tiered(), 100, -3), std::invalid_argument);
  PricingPolicy over;
  over.discounts = {{7, 101}};
  EXPECT_THROW(daily_price(over, 100, 7), std::invalid_argument);
  over.discounts = {{7, -1}};
  EXPECT_THROW(daily_price(over, 100, 7), std::invalid_argument);
}

// ---- Tax split ----

PricingPolicy taxed(int basis_points, bool gross) {
  PricingPolicy policy;
  policy.vat_basis_points = basis_points;
  policy.prices_include_tax = gross;
  return policy;
}

struct SplitCase {
  int basis_points;
  bool gross;
  std::int64_t price;
  std::int64_t net, tax, total;
};

TEST(SplitPrice, BothBasesWhereRoundingMatters) {
  const SplitCase cases[] = {
      // Gross prices: tax = gross * bp / (10000 + bp).
      {2000, true, 12000, 10000, 2000, 12000},
      {2000, true, 100, 83, 17, 100},  // 16.67
      {2000, true, 1, 1, 0, 1},        // 0.17
      {2000, true, 3, 2, 1, 3},        // 0.5: up
      {2000, true, 15, 12, 3, 15},     // 2.5: up (not to the even 2)
      {2000, true, 0, 0, 0, 0},
      {2200, true, 122, 100, 22, 122},
      {2200, true, 100, 82, 18, 100},  // 18.03
      {1000, true, 110, 100, 10, 110},
      {1000, true, 100, 91, 9, 100},  // 9.09
      {0, true, 100, 100, 0, 100},
      {10000, true, 101, 50, 51, 101},  // 50.5: up
      // Net prices: tax = net * bp / 10000.
      {2000, false, 100, 100, 20, 120},
      {2000, false, 333, 333, 67, 400},  // 66.6
      {2000, false, 2, 2, 0, 2},         // 0.4
      {2000, false, 3, 3, 1, 4},         // 0.6
      {2200, false, 25, 25, 6, 31},      // 5.5: up
      {2200, false, 75, 75, 17, 92},     // 16.5: up (not to the even 16)
      {1000, false, 15, 15, 2, 17},      // 1.5
      {0, false, 100, 100, 0, 100},
      {0, false, kMax, kMax, 0, kMax},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(std::to_string(c.price) + (c.gross ? " gross" : " net") + " at " +
                 std::to_string(c.basis_points) + " bp");
    TaxSplit split = split_price(taxed(c.basis_points, c.gross), c.price);
    EXPECT_EQ(split.net_minor, c.net);
    EXPECT_EQ(split.tax_minor, c.tax);
    EXPECT_EQ(split.gross_minor, c.total);
  }
}

// Over many amounts and the rates in use: net + tax is the gross to the minor unit, and the
// tax is the exact tax rounded to the nearest unit (within half a unit).
TEST(SplitPrice, NetPlusTaxIsGrossOverASweep) {
  std::vector<std::int64_t> amounts;
  for (std::int64_t a = -2000; a <= 20000; ++a) amounts.push_back(a);
  for (std::int64_t a :
       {kMax, kMax - 1, kMax / 3, kMin, kMin + 1, kMin / 7, std::int64_t{999'999'999'999}}) {
    amounts.push_back(a);
  }
  for (int bp : {0, 1000, 2000, 2200}) {
    for (bool gross : {true, false}) {
      for (std::int64_t amount : amounts) {
        TaxSplit s;
        try {
          s = split_price(taxed(bp, gross), amount);
        } catch (const std::overflow_error&) {
          // Only a net amount whose tax takes it past int64 may be refused.
          ASSERT_FALSE(gross) << amount;
          __int128 exact_gross = static_cast<__int128>(amount) * (10000 + bp) / 10000;
          ASSERT_TRUE(exact_gross > kMax || exact_gross < kMin) << amount;
          continue;
        }
        __int128 gross_total = gross ? amount : s.gross_minor;
        __int128 base = gross ? 10000 + bp : 10000;
        __int128 taxed_amount = gross ? amount : s.net_minor;
        __int128 error = static_cast<__int128>(s.tax_minor) * base - taxed_amount * bp;
        if (error < 0) error = -error;
        ASSERT_EQ(static_cast<__int128>(s.net_minor) + s.tax_minor, s.gross_minor)
            << amount << " at " << bp << (gross ? " gross" : " net");
        ASSERT_EQ(s.gross_minor, gross_total);
        if (!gross) {
          ASSERT_EQ(s.net_minor, amount);
        }
        ASSERT_LE(2 * error, base) << amount << " at " << bp << (gross ? " gross" : " net");
      }
    }
  }
}

TEST(SplitPrice, OverflowThrows) {
  EXPECT_THROW(split_price(taxed(2000, false), kMax), std::overflow_error);
  EXPECT_THROW(split_price(taxed(2000, false), kMin), std::overflow_error);
  EXPECT_THROW(split_price(taxed(1, false), kMax), std::overflow_error);
  // The largest net whose gross still fits: 7686143364045646506 * 1.2 = 9223372036854775807.2.
  EXPECT_EQ(split_price(taxed(2000, false), 7686143364045646506).gross_minor, kMax);
  EXPECT_THROW(split_price(taxed(2000, false), 7686143364045646507), std::overflow_error);
  // A gross amount never overflows: the tax is a part of it.
  EXPECT_EQ(split_price(taxed(2000, true), kMax).gross_minor, kMax);
  EXPECT_EQ(split_price(taxed(2000, true), kMin).gross_minor, kMin);
}

TEST(SplitPrice, RefusesARateOutOfRange) {
  for (int bp : {-1, 10001}) {
    EXPECT_THROW(split_price(taxed(bp, true), 100), std::invalid_argument) << bp;
    EXPECT_THROW(split_price(taxed(bp, false), 100), std::invalid_argument) << bp;
    EXPECT_THROW(split_gross(bp, 100), std::invalid_argument) << bp;
  }
}

struct GrossCase {
  int basis_points;
  std::int64_t gross, net, tax;
};

TEST(SplitGross, NegativeAmountsRoundAwayFromZero) {
  const GrossCase cases[] = {
      {2000, -12000, -10000, -2000},
      {2000, -100, -83, -17},  // -16.67 (truncation would give -16)
      {2000, -3, -2, -1},      // -0.5: away from zero (floor(x + 0.5) would give 0)
      {2000, -15, -12, -3},    // -2.5
      {2000, -1, -1, 0},       // -0.17
      {2200, -122, -100, -22},
      {0, -100, -100, 0},
      {2000, 100, 83, 17},
      {2000, 3, 2, 1},
      {2000, 0, 0, 0},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(std::to_string(c.gross) + " at " + std::to_string(c.basis_points) + " bp");
    TaxSplit s = split_gross(c.basis_points, c.gross);
    EXPECT_EQ(s.net_minor, c.net);
    EXPECT_EQ(s.tax_minor, c.tax);
    EXPECT_EQ(s.gross_minor, c.gross);
  }
}

TEST(SplitGross, IsSplitPriceOfAGrossPrice) {
  for (std::int64_t gross : {-100'001LL, -7LL, 0LL, 7LL, 100'001LL}) {
    TaxSplit a = split_gross(2200, gross);
    TaxSplit b = split_price(taxed(2200, true), gross);
    EXPECT_EQ(a.net_minor, b.net_minor) << gross;
    EXPECT_EQ(a.tax_minor, b.tax_minor) << gross;
  }
}

// ---- Discount tiers as configuration writes them ----

TEST(ParseDiscountTiers, AcceptedForms) {
  using Tiers = std::vector<DiscountTier>;
  const std::pair<std::string_view, Tiers> cases[] = {
      {"", {}},
      {"none", {}},
      {"7:5", {{7, 5}}},
      {"7:5,30:10", {{7, 5}, {30, 10}}},
      {"2:0", {{2, 0}}},
      {"365:100", {{365, 100}}},
      {"2:1,3:2,364:3,365:100", {{2, 1}, {3, 2}, {364, 3}, {365, 100}}},
      {"7:10,30:5", {{7, 10}, {30, 5}}},  // a falling percent is allowed; the best applies
  };
  for (const auto& [text, tiers] : cases) {
    auto parsed = parse_discount_tiers(text);
    ASSERT_TRUE(parsed.has_value()) << '"' << text << '"';
    EXPECT_EQ(*parsed, tiers) << '"' << text << '"';
  }
}

TEST(ParseDiscountTiers, RefusedForms) {
  for (std::string_view bad : {
           "None",  "NONE",       " ",          "none,7:5",  "7",
           "7:",    ":5",         ":",          ",",         "7:5,",
           ",7:5",  "7:5,,30:10", "30:10,7:5",  "7:5,7:6",   "1:5",
           "0:5",   "366:5",      "7:101",      "7:-5",      "-7:5",
           "+7:5",  "7:+5",       "7:05",       "07:5",      "7: 5",
           " 7:5",  "7:5 ",       "7:5, 30:10", "7:5;30:10", "7:5:1",
           "7.0:5", "7:5.5",      "1000:5",     "7:1000",    "0x7:5",
           "7:5%",  "7=5",        "seven:five", "7:5\n",     "99999999999999999999:5",
       }) {
    EXPECT_EQ(parse_discount_tiers(bad), std::nullopt) << '"' << bad << '"';
  }
}

// ---- SLA credits ----

TEST(SlaPolicyNames, RoundTripAndRefuseVariants) {
  const std::pair<SlaPolicy, std::string_view> names[] = {
      {SlaPolicy::kNone, "none"},
      {SlaPolicy::kLostHours, "lost_hours"},
      {SlaPolicy::kWholeBlock, "whole_block"},
  };
  for (const auto& [policy, name] : names) {
    EXPECT_EQ(to_string(policy), name);
    EXPECT_EQ(parse_sla_policy(name), policy);
  }
  for (std::string_view bad :
       {"", "None", "lost-hours", "LOST_HOURS", "whole_block ", " none", "hours", "block"}) {
    EXPECT_EQ(parse_sla_policy(bad), std::nullopt) << '"' << bad << '"';
  }
}

struct CreditCase {
  SlaPolicy policy;
  std::int64_t charged;
  seconds lost;
  std::int64_t credit;
};

TEST(SlaCredit, EveryPolicyAndBoundary) {
  using P = SlaPolicy;
  const CreditCase cases[] = {
      // Lost hours: the hours begun, as 24ths of the charge.
      {P::kLostHours, 2400, seconds(0), 0},
      {P::kLostHours, 2400, seconds(-1), 0},
      {P::kLostHours, 2400, seconds(1), 100},  // one second is an hour begun
      {P::kLostHours, 2400, hours(1), 100},
      {P::kLostHours, 2400, hours(1) + seconds(1), 200},
      {P::kLostHours, 2400, hours(23), 2300},
      {P::kLostHours, 2400, hours(23) + minutes(59), 2400},
      {P::kLostHours, 2400, hours(24), 2400},
      {P::kLostHours, 2400, hours(24) + seconds(1), 2400},  // capped at the charge
      {P::kLostHours, 2400, hours(72), 2400},
      {P::kLostHours, 2400, seconds(std::numeric_limits<std::int64_t>::max()), 2400},
      {P::kLostHours, 1000, hours(1), 42},    // 41.67
      {P::kLostHours, 1000, hours(5), 208},   // 208.33
      {P::kLostHours, 1000, hours(23), 958},  // 958.33
      {P::kLostHours, 12, hours(1), 1},       // 0.5: up (not to the even 0)
      {P::kLostHours, 100, hours(3), 13},     // 12.5: up (not to the even 12)
      {P::kLostHours, 1, hours(11), 0},       // 0.46
      {P::kLostHours, 1, hours(12), 1},       // 0.5
      {P::kLostHours, 0, hours(5), 0},
      {P::kLostHours, -2400, hours(5), 0},
      {P::kLostHours, std::numeric_limits<std::int64_t>::max(), hours(23),
       8839064868652493482},  // past int64 before dividing
      // Whole block: any loss gives back the whole charge.
      {P::kWholeBlock, 2400, seconds(0), 0},
      {P::kWholeBlock, 2400, seconds(-5), 0},
      {P::kWholeBlock, 2400, seconds(1), 2400},
      {P::kWholeBlock, 2400, hours(25), 2400},
      {P::kWholeBlock, 0, hours(1), 0},
      {P::kWholeBlock, -2400, hours(1), 0},
      // None: nothing, ever.
      {P::kNone, 2400, seconds(0), 0},
      {P::kNone, 2400, seconds(1), 0},
      {P::kNone, 2400, hours(25), 0},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(std::string(to_string(c.policy)) + ": " + std::to_string(c.charged) +
                 " charged, " + std::to_string(c.lost.count()) + " s lost");
    EXPECT_EQ(sla_credit_minor(c.policy, c.charged, c.lost), c.credit);
  }
}

TEST(SlaCredit, LostHoursNeverExceedTheCharge) {
  for (std::int64_t charged : {1LL, 7LL, 23LL, 24LL, 25LL, 99'999LL}) {
    std::int64_t previous = 0;
    for (std::int64_t s = 0; s <= 26 * 3600; s += 599) {
      std::int64_t credit = sla_credit_minor(SlaPolicy::kLostHours, charged, seconds(s));
      EXPECT_GE(credit, previous) << charged << " charged, " << s << " s";
      EXPECT_LE(credit, charged) << charged << " charged, " << s << " s";
      previous = credit;
    }
    EXPECT_EQ(previous, charged);
  }
}

// ---- Rental days ----

Timestamp at(std::int64_t micros) {
  return Timestamp(microseconds(micros));
}

// 2026-12-01T00:00:00Z and a little: days need not start on a second.
const Timestamp kStart = at(1'796'083'200'000'000 + 123'456);

TEST(RentalDays, DayAtAroundBoundaries) {
  const std::pair<Timestamp, int> cases[] = {
      {kStart - hours(24 * 400), -1},
      {kStart - microseconds(1), -1},
      {kStart, 0},
      {kStart + hours(12), 0},
      {kStart + hours(24) - microseconds(1), 0},
      {kStart + hours(24), 1},
      {kStart + hours(48) - microseconds(1), 1},
      {kStart + hours(48), 2},
      {kStart + hours(24 * 30), 30},
      {kStart + hours(24 * 365) - microseconds(1), 364},
  };
  for (const auto& [t, day] : cases) {
    EXPECT_EQ(day_at(kStart, t), day) << (t - kStart).count() << " us after the start";
  }
}

TEST(RentalDays, DayStartIsWhereDayAtChanges) {
  EXPECT_EQ(day_start(kStart, 0), kStart);
  EXPECT_EQ(day_start(kStart, 1), kStart + hours(24));
  EXPECT_EQ(day_start(kStart, 365), kStart + hours(24 * 365));
  for (int day = 0; day <= 400; ++day) {
    EXPECT_EQ(day_at(kStart, day_start(kStart, day)), day);
    EXPECT_EQ(day_at(kStart, day_start(kStart, day + 1) - microseconds(1)), day);
  }
}

TEST(RentalDays, ExtremesNeitherWrapNorOverflow) {
  Timestamp earliest = Timestamp::min();
  Timestamp latest = Timestamp::max();
  EXPECT_EQ(day_at(earliest, latest), 213'503'982);  // (2^64 - 1) us in whole days
  EXPECT_EQ(day_at(latest, earliest), -1);
  EXPECT_THROW(day_start(kStart, -1), std::invalid_argument);
  EXPECT_THROW(day_start(latest - hours(1), 1), std::overflow_error);
  EXPECT_THROW(day_start(kStart, std::numeric_limits<int>::max()), std::overflow_error);
}

}  // namespace pricing_test
}  // namespace gpurent::billing
