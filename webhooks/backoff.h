// When a failed delivery is tried again: exponential backoff with jitter, capped, and the
// verdict after each attempt. Pure: the random draw is an argument.
#pragma once

#include <chrono>

namespace gpurent::webhooks {

struct RetryPolicy {
  int max_attempts = 8;
  std::chrono::milliseconds base{10'000};
  std::chrono::milliseconds max{3'600'000};
};

// The wait after failed attempt `attempt` (1 for the first): base * 2^(attempt-1), capped at
// `max`, then scaled into [half, whole) of that by `unit` in [0, 1) — "equal jitter": the
// wait still grows with each attempt, while receivers that failed together do not all come
// back at the same instant. Never below 1 ms.
std::chrono::milliseconds retry_delay(const RetryPolicy& policy, int attempt, double unit);

// After attempt `attempt` failed: true when another is allowed.
inline bool may_retry(const RetryPolicy& policy, int attempt) {
  return attempt < policy.max_attempts;
}

// A receiver's answer counts as delivered only for 2xx. Redirects are not followed (the
// target could be anywhere), so a 3xx is a failure like any other.
inline bool is_success_status(int status) {
  return status >= 200 && status < 300;
}

}  // namespace gpurent::webhooks
