// Delivery signatures and retry delays, without a database.
#include "webhooks/signature.h"
#include "billing/payment_signature.h"
#include "core/crypto.h"
#include "webhooks/backoff.h"
#include "webhooks/events.h"

#include <gtest/gtest.h>

#include <chrono>
#include <set>

namespace gpurent::webhooks {
namespace signature_test {

using std::chrono::milliseconds;

TEST(DeliverySignature, IsHmacSha256OfTheTimeADotAndTheBody) {
  std::string body = R"({"id":"evt_1","type":"rental.active"})";
  std::string header = sign_delivery(body, "whsec_test", 1764547200);
  EXPECT_EQ(header,
            "t=1764547200,v1=" + crypto::hmac_sha256_hex("whsec_test", "1764547200." + body));
  // A known vector, from `printf 0.{} | openssl dgst -sha256 -hmac secret`: a receiver in
  // any language gets the same digits.
  EXPECT_EQ(sign_delivery("{}", "secret", 0),
            "t=0,v1=4bbe8d39de1ffea42cffafb4727e02f761bef8ed2886b51575ce417d542e918f");
}

TEST(DeliverySignature, VerifiesWithTheSameCheckTheInboundWebhookUses) {
  std::string body = R"({"data":{"id":"rnt_x"}})";
  auto now = Timestamp(std::chrono::seconds(1'800'000'000));
  std::string header = sign_delivery(body, "whsec_abc", 1'800'000'000);
  auto ok =
      billing::check_payment_signature(header, body, "whsec_abc", now, std::chrono::minutes(5));
  EXPECT_EQ(ok.verdict, billing::SignatureVerdict::kValid);
  // Another secret, a changed body or an old time are refused.
  EXPECT_EQ(
      billing::check_payment_signature(header, body, "whsec_abd", now, std::chrono::minutes(5))
          .verdict,
      billing::SignatureVerdict::kMismatch);
  EXPECT_EQ(billing::check_payment_signature(header, body + " ", "whsec_abc", now,
                                             std::chrono::minutes(5))
                .verdict,
            billing::SignatureVerdict::kMismatch);
  EXPECT_EQ(billing::check_payment_signature(header, body, "whsec_abc",
                                             now + std::chrono::minutes(6), std::chrono::minutes(5))
                .verdict,
            billing::SignatureVerdict::kStale);
}

TEST(DeliverySignature, RefusesAnEmptySecretOrANegativeTime) {
  EXPECT_THROW(sign_delivery("{}", "", 1), std::invalid_argument);
  EXPECT_THROW(sign_delivery("{}", "s", -1), std::invalid_argument);
}

TEST(DeliverySignature, SecretsAreLongRandomAndDistinct) {
  std::set<std::string> seen;
  for (int i = 0; i < 50; ++i) {
    std::string s = new_secret();
    ASSERT_EQ(s.size(), 6u + 64u);
    EXPECT_EQ(s.substr(0, 6), "whsec_");
    EXPECT_EQ(s.find_first_not_of("0123456789abcdef", 6), std::string::npos);
    EXPECT_TRUE(seen.insert(s).second);
  }
}

TEST(RetryDelay, DoublesFromTheBaseUpToTheCapWithEqualJitter) {
  RetryPolicy p{.max_attempts = 8, .base = milliseconds(1000), .max = milliseconds(30'000)};
  struct Case {
    int attempt;
    double unit;
    long long expected_ms;
  };
  for (const auto& c : std::vector<Case>{
           {1, 0.0, 500},
           {1, 0.999999, 999},
           {1, 0.5, 750},
           {2, 0.0, 1000},
           {3, 0.0, 2000},
           {4, 0.0, 4000},
           {5, 0.0, 8000},
           {6, 0.0, 15'000},
           {6, 0.999999, 29'999},
           {20, 0.0, 15'000},
           {1'000'000, 0.0, 15'000},
           {0, 0.0, 500},
           {-5, 0.0, 500},
           {1, -1.0, 500},
           {1, 7.0, 999},
       }) {
    SCOPED_TRACE(testing::Message() << "attempt " << c.attempt << " unit " << c.unit);
    EXPECT_EQ(retry_delay(p, c.attempt, c.unit).count(), c.expected_ms);
  }
  // NaN from a broken random source is the shortest wait, not undefined behaviour.
  EXPECT_EQ(retry_delay(p, 2, std::numeric_limits<double>::quiet_NaN()).count(), 1000);
  // A zero base still waits a millisecond.
  EXPECT_EQ(
      retry_delay({.max_attempts = 3, .base = milliseconds(0), .max = milliseconds(0)}, 3, 0.0)
          .count(),
      1);
}

TEST(RetryDelay, GivesUpAfterMaxAttemptsAndOnlyTwoHundredsSucceed) {
  RetryPolicy p{.max_attempts = 3};
  EXPECT_TRUE(may_retry(p, 1));
  EXPECT_TRUE(may_retry(p, 2));
  EXPECT_FALSE(may_retry(p, 3));
  EXPECT_FALSE(may_retry(p, 4));
  for (int s : {200, 201, 202, 204, 299}) EXPECT_TRUE(is_success_status(s)) << s;
  for (int s : {100, 199, 301, 302, 307, 308, 400, 404, 410, 429, 500, 503}) {
    EXPECT_FALSE(is_success_status(s)) << s;
  }
}

TEST(EventTypes, AreKnownByNameAndThePingIsNotSubscribable) {
  EXPECT_TRUE(is_event_type("rental.active"));
  EXPECT_TRUE(is_event_type("rental.expiring"));
  EXPECT_TRUE(is_event_type("billing.low_balance"));
  EXPECT_FALSE(is_event_type("webhook.ping"));
  EXPECT_FALSE(is_event_type("rental.Active"));
  EXPECT_FALSE(is_event_type("rental.*"));
}

}  // namespace signature_test
}  // namespace gpurent::webhooks
