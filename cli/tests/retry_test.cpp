// Retry rules: which outcomes are retried, the backoff's growth, cap and jitter, Retry-After.
#include "cli/retry.h"

#include <gtest/gtest.h>

namespace gpurent::cli::retry_test {

using std::chrono::milliseconds;

TEST(CliRetry, RetriesNetworkFailuresServerErrorsAndRateLimitsOnly) {
  struct Case {
    AttemptOutcome outcome;
    bool retried;
  };
  const Case cases[] = {
      {{.transport_failed = true}, true},
      {{.transport_failed = true, .tls_verification_failed = true}, false},
      {{.status = 500}, true},
      {{.status = 502}, true},
      {{.status = 503, .error_code = "unavailable"}, true},
      {{.status = 504}, true},
      {{.status = 429, .error_code = "rate_limited"}, true},
      {{.status = 409, .error_code = "conflict", .has_idempotency_key = true}, true},
      {{.status = 409, .error_code = "conflict", .has_idempotency_key = false}, false},
      {{.status = 409, .error_code = "insufficient_capacity", .has_idempotency_key = true}, false},
      {{.status = 409, .error_code = "invalid_state", .has_idempotency_key = true}, false},
      {{.status = 400, .error_code = "invalid_request"}, false},
      {{.status = 401, .error_code = "unauthenticated"}, false},
      {{.status = 402, .error_code = "insufficient_funds"}, false},
      {{.status = 403, .error_code = "forbidden"}, false},
      {{.status = 404, .error_code = "not_found"}, false},
      {{.status = 422, .error_code = "idempotency_key_reused", .has_idempotency_key = true}, false},
      {{.status = 200}, false},
      {{.status = 201}, false},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(is_retryable(c.outcome), c.retried)
        << "status " << c.outcome.status << " " << c.outcome.error_code << " transport "
        << c.outcome.transport_failed;
  }
}

TEST(CliRetry, BackoffDoublesUpToTheCapWithHalfOfItJittered) {
  RetryPolicy p{.max_attempts = 10, .base = milliseconds(500), .cap = milliseconds(4000)};
  // random 0: the fixed half; random ~1: the whole ceiling.
  EXPECT_EQ(backoff_delay(p, 1, 0.0), milliseconds(250));
  EXPECT_EQ(backoff_delay(p, 1, 0.999999), milliseconds(499));
  EXPECT_EQ(backoff_delay(p, 2, 0.0), milliseconds(500));
  EXPECT_EQ(backoff_delay(p, 3, 0.0), milliseconds(1000));
  EXPECT_EQ(backoff_delay(p, 4, 0.0), milliseconds(2000));
  EXPECT_EQ(backoff_delay(p, 5, 0.0), milliseconds(2000)) << "capped at 4 s";
  EXPECT_EQ(backoff_delay(p, 50, 0.5), milliseconds(3000)) << "no overflow far out";
  EXPECT_EQ(backoff_delay(p, 2, 0.5), milliseconds(750));
  // Out-of-range randomness is clamped, never a negative or oversized pause.
  EXPECT_EQ(backoff_delay(p, 1, -3.0), milliseconds(250));
  EXPECT_EQ(backoff_delay(p, 1, 7.0), milliseconds(500));
}

TEST(CliRetry, RetryAfterInSecondsIsHonouredAndAnythingElseIgnored) {
  EXPECT_EQ(parse_retry_after("1"), milliseconds(1000));
  EXPECT_EQ(parse_retry_after(" 60 "), milliseconds(60000));
  EXPECT_EQ(parse_retry_after("0"), milliseconds(0));
  EXPECT_FALSE(parse_retry_after(""));
  EXPECT_FALSE(parse_retry_after("-5"));
  EXPECT_FALSE(parse_retry_after("1.5"));
  EXPECT_FALSE(parse_retry_after("Wed, 21 Oct 2026 07:28:00 GMT"));
  EXPECT_FALSE(parse_retry_after("99999999999999"));

  RetryPolicy p{
      .base = milliseconds(500), .cap = milliseconds(4000), .max_retry_after = milliseconds(30000)};
  EXPECT_EQ(retry_delay(p, 1, milliseconds(2000), 0.0), milliseconds(2000));
  EXPECT_EQ(retry_delay(p, 1, milliseconds(2000), 1.0), milliseconds(2250));
  EXPECT_EQ(retry_delay(p, 1, std::nullopt, 0.0), milliseconds(250)) << "no header: backoff";
  EXPECT_FALSE(retry_delay(p, 1, milliseconds(120000), 0.0)) << "longer than the policy waits";
}

}  // namespace gpurent::cli::retry_test
