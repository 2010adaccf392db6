// Tests Money: checked arithmetic, currency rules and the strict JSON form.
#include "core/money.h"

#include "core/error.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <limits>
#include <stdexcept>

namespace gpurent {
namespace money_test {

using nlohmann::json;

constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
constexpr std::int64_t kMin = std::numeric_limits<std::int64_t>::min();

// The field named by the invalid_request error that from_json throws.
std::string rejected_field(const json& j, std::string_view field = "price") {
  try {
    Money::from_json(j, field);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidRequest);
    EXPECT_TRUE(e.details().contains("reason"));
    return e.details().value("field", "<no field>");
  }
  ADD_FAILURE() << "accepted " << j.dump();
  return "";
}

TEST(Money, Constructs) {
  Money m(1234500, "RUB");
  EXPECT_EQ(m.amount_minor(), 1234500);
  EXPECT_EQ(m.currency(), "RUB");
  EXPECT_EQ(Money(-5, "USD").amount_minor(), -5);
}

TEST(Money, RejectsInvalidCurrency) {
  for (std::string_view bad : {"rub", "RU", "RUBB", "", "R1B", "RU ", "Rub"}) {
    EXPECT_THROW(Money(1, bad), std::invalid_argument) << bad;
    EXPECT_FALSE(Money::is_valid_currency(bad)) << bad;
  }
  EXPECT_TRUE(Money::is_valid_currency("EUR"));
}

TEST(Money, Arithmetic) {
  Money a(1000, "RUB"), b(250, "RUB");
  EXPECT_EQ(a + b, Money(1250, "RUB"));
  EXPECT_EQ(a - b, Money(750, "RUB"));
  EXPECT_EQ(b - a, Money(-750, "RUB"));
  EXPECT_EQ(-a, Money(-1000, "RUB"));
  EXPECT_EQ(a.times(3), Money(3000, "RUB"));
  EXPECT_EQ(a.times(-2), Money(-2000, "RUB"));
  EXPECT_EQ(a.times(0), Money(0, "RUB"));
  EXPECT_EQ((a + b).currency(), "RUB");
}

TEST(Money, ArithmeticAtTheLimitsDoesNotThrow) {
  EXPECT_EQ((Money(kMax - 1, "RUB") + Money(1, "RUB")).amount_minor(), kMax);
  EXPECT_EQ((Money(kMin + 1, "RUB") - Money(1, "RUB")).amount_minor(), kMin);
  EXPECT_EQ((-Money(kMax, "RUB")).amount_minor(), kMin + 1);
  EXPECT_EQ(Money(kMax / 2, "RUB").times(2).amount_minor(), kMax - 1);
}

TEST(Money, OverflowThrows) {
  EXPECT_THROW(Money(kMax, "RUB") + Money(1, "RUB"), std::overflow_error);
  EXPECT_THROW(Money(kMin, "RUB") + Money(-1, "RUB"), std::overflow_error);
  EXPECT_THROW(Money(kMin, "RUB") - Money(1, "RUB"), std::overflow_error);
  EXPECT_THROW(Money(kMax, "RUB") - Money(-1, "RUB"), std::overflow_error);
  EXPECT_THROW(-Money(kMin, "RUB"), std::overflow_error);
  EXPECT_THROW(Money(kMax, "RUB").times(2), std::overflow_error);
  EXPECT_THROW(Money(kMin, "RUB").times(-1), std::overflow_error);
  EXPECT_THROW(Money(3'000'000'000, "RUB").times(4'000'000'000), std::overflow_error);
}

TEST(Money, CurrencyMismatchThrows) {
  Money rub(100, "RUB"), usd(100, "USD");
  EXPECT_THROW(rub + usd, std::invalid_argument);
  EXPECT_THROW(rub - usd, std::invalid_argument);
  EXPECT_THROW((void)(rub < usd), std::invalid_argument);
}

TEST(Money, EqualityIncludesCurrency) {
  EXPECT_EQ(Money(100, "RUB"), Money(100, "RUB"));
  EXPECT_NE(Money(100, "RUB"), Money(100, "USD"));
  EXPECT_NE(Money(100, "RUB"), Money(101, "RUB"));
}

TEST(Money, Ordering) {
  EXPECT_TRUE(Money(1, "RUB") < Money(2, "RUB"));
  EXPECT_FALSE(Money(2, "RUB") < Money(1, "RUB"));
  EXPECT_FALSE(Money(2, "RUB") < Money(2, "RUB"));
  EXPECT_TRUE(Money(-5, "RUB") < Money(0, "RUB"));
}

TEST(Money, ToJson) {
  EXPECT_EQ(Money(1234500, "RUB").to_json(),
            json::parse(R"({"amount_minor":1234500,"currency":"RUB"})"));
}

TEST(Money, JsonRoundTrip) {
  for (std::int64_t amount :
       {std::int64_t{0}, std::int64_t{-1}, std::int64_t{1234500}, kMax, kMin}) {
    Money m(amount, "EUR");
    // Through text, so the parser's integer types are exercised too.
    EXPECT_EQ(Money::from_json(json::parse(m.to_json().dump()), "price"), m) << amount;
  }
}

TEST(Money, FromJsonAcceptsExactlyTheTwoFields) {
  Money m = Money::from_json(json::parse(R"({"currency":"USD","amount_minor":42})"), "price");
  EXPECT_EQ(m, Money(42, "USD"));
}

TEST(Money, FromJsonRejectsNonObjects) {
  EXPECT_EQ(rejected_field(json::parse("[1,\"RUB\"]")), "price");
  EXPECT_EQ(rejected_field(json::parse("100")), "price");
  EXPECT_EQ(rejected_field(json(nullptr)), "price");
  EXPECT_EQ(rejected_field(json::parse("\"100 RUB\"")), "price");
}

TEST(Money, FromJsonRejectsNonIntegerAmounts) {
  EXPECT_EQ(rejected_field(json::parse(R"({"amount_minor":12.5,"currency":"RUB"})")),
            "price.amount_minor");
  EXPECT_EQ(rejected_field(json::parse(R"({"amount_minor":100.0,"currency":"RUB"})")),
            "price.amount_minor");
  EXPECT_EQ(rejected_field(json::parse(R"({"amount_minor":"1250","currency":"RUB"})")),
            "price.amount_minor");
  EXPECT_EQ(rejected_field(json::parse(R"({"amount_minor":true,"currency":"RUB"})")),
            "price.amount_minor");
  EXPECT_EQ(rejected_field(json::parse(R"({"amount_minor":null,"currency":"RUB"})")),
            "price.amount_minor");
}

TEST(Money, FromJsonRejectsMissingFields) {
  EXPECT_EQ(rejected_field(json::parse(R"({"currency":"RUB"})")), "price.amount_minor");
  EXPECT_EQ(rejected_field(json::parse(R"({"amount_minor":1})")), "price.currency");
  EXPECT_EQ(rejected_field(json::object()), "price.amount_minor");
}

TEST(Money, FromJsonRejectsExtraFields) {
  EXPECT_EQ(rejected_field(json::parse(R"({"amount_minor":1,"currency":"RUB","rate":2})")),
            "price.rate");
}

TEST(Money, FromJsonRejectsBadCurrency) {
  EXPECT_EQ(rejected_field(json::parse(R"({"amount_minor":1,"currency":"rub"})")),
            "price.currency");
  EXPECT_EQ(rejected_field(json::parse(R"({"amount_minor":1,"currency":"RUBLE"})")),
            "price.currency");
  EXPECT_EQ(rejected_field(json::parse(R"({"amount_minor":1,"currency":643})")), "price.currency");
}

TEST(Money, FromJsonRejectsOutOfRangeAmounts) {
  // 2^63 and 2^64 - 1 parse as unsigned: refused rather than wrapped to negative.
  EXPECT_EQ(rejected_field(json::parse(R"({"amount_minor":9223372036854775808,"currency":"RUB"})")),
            "price.amount_minor");
  EXPECT_EQ(
      rejected_field(json::parse(R"({"amount_minor":18446744073709551615,"currency":"RUB"})")),
      "price.amount_minor");
  EXPECT_EQ(Money::from_json(
                json::parse(R"({"amount_minor":9223372036854775807,"currency":"RUB"})"), "price")
                .amount_minor(),
            kMax);
}

TEST(Money, FromJsonNamesTheCallersField) {
  EXPECT_EQ(
      rejected_field(json::parse(R"({"amount_minor":1.5,"currency":"RUB"})"), "limits.spend_limit"),
      "limits.spend_limit.amount_minor");
}

}  // namespace money_test
}  // namespace gpurent
