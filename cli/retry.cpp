// Retry rules of the CLI's API client.
#include "cli/retry.h"

#include <algorithm>
#include <charconv>

namespace gpurent::cli {

bool is_retryable(const AttemptOutcome& o) {
  if (o.transport_failed) return !o.tls_verification_failed;
  if (o.status >= 500) return true;
  if (o.status == 429) return true;
  // Without a key a 409 conflict is a real conflict (a duplicate name, a race lost).
  return o.status == 409 && o.error_code == "conflict" && o.has_idempotency_key;
}

std::chrono::milliseconds backoff_delay(const RetryPolicy& policy, int retry, double random01) {
  using std::chrono::milliseconds;
  long long ceiling = policy.base.count();
  for (int i = 1; i < retry && ceiling < policy.cap.count(); ++i) ceiling *= 2;
  ceiling = std::min<long long>(ceiling, policy.cap.count());
  random01 = std::clamp(random01, 0.0, 1.0);
  long long half = ceiling / 2;
  return milliseconds(half +
                      static_cast<long long>(static_cast<double>(ceiling - half) * random01));
}

std::optional<std::chrono::milliseconds> parse_retry_after(std::string_view header) {
  while (!header.empty() && (header.front() == ' ' || header.front() == '\t'))
    header.remove_prefix(1);
  while (!header.empty() && (header.back() == ' ' || header.back() == '\t'))
    header.remove_suffix(1);
  if (header.empty() || header.size() > 9) return std::nullopt;
  long long seconds = 0;
  auto [end, ec] = std::from_chars(header.data(), header.data() + header.size(), seconds);
  if (ec != std::errc() || end != header.data() + header.size() || seconds < 0) {
    return std::nullopt;
  }
  return std::chrono::milliseconds(seconds * 1000);
}

std::optional<std::chrono::milliseconds> retry_delay(
    const RetryPolicy& policy, int retry, std::optional<std::chrono::milliseconds> retry_after,
    double random01) {
  if (!retry_after) return backoff_delay(policy, retry, random01);
  if (*retry_after > policy.max_retry_after) return std::nullopt;
  // A little spread on top, so clients told the same second do not all return in it.
  return *retry_after +
         std::chrono::milliseconds(static_cast<long long>(250 * std::clamp(random01, 0.0, 1.0)));
}

}  // namespace gpurent::cli
