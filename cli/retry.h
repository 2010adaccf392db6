// When a request is tried again and how long to wait first: pure rules, tested without a
// network (cli/tests/retry_test.cpp).
#pragma once

#include <chrono>
#include <optional>
#include <string_view>

namespace gpurent::cli {

struct RetryPolicy {
  int max_attempts = 5;  // the first try included
  std::chrono::milliseconds base{500};
  std::chrono::milliseconds cap{10'000};
  // A server's Retry-After beyond this is not waited for: the command gives up instead.
  std::chrono::milliseconds max_retry_after{60'000};
};

// What happened to one attempt, as far as retrying cares.
struct AttemptOutcome {
  bool transport_failed = false;  // no answer: refused, reset, timed out, closed early
  bool tls_verification_failed = false;
  int status = 0;               // the answer's status when there was one
  std::string_view error_code;  // the answer's contract error code, if any
  bool has_idempotency_key = false;
};

// Whether the attempt is worth repeating: connection failures, 5xx, 429, and a 409
// `conflict` for a request with an Idempotency-Key (the first attempt with that key is
// still running on the server; API.md "Conventions"). A certificate that does not verify
// will not verify next time either.
bool is_retryable(const AttemptOutcome& outcome);

// The pause before retry number `retry` (1 for the first retry): exponential from `base`,
// at most `cap`, with "equal jitter" — half of it fixed, half random — so that many
// clients cut off together do not come back together. `random01` is in [0, 1).
std::chrono::milliseconds backoff_delay(const RetryPolicy& policy, int retry, double random01);

// A Retry-After header's delay in seconds form ("120"); nullopt for anything else (an
// HTTP date, garbage), which the caller treats as absent.
std::optional<std::chrono::milliseconds> parse_retry_after(std::string_view header);

// The pause before retry `retry`: the server's Retry-After when it gave one (plus a little
// jitter), otherwise the backoff; nullopt when the server asks for longer than the policy
// allows waiting.
std::optional<std::chrono::milliseconds> retry_delay(
    const RetryPolicy& policy, int retry, std::optional<std::chrono::milliseconds> retry_after,
    double random01);

}  // namespace gpurent::cli
