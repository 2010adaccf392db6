// Retry delays for webhook deliveries.
#include "webhooks/backoff.h"

#include <algorithm>
#include <cmath>

namespace gpurent::webhooks {

std::chrono::milliseconds retry_delay(const RetryPolicy& policy, int attempt, double unit) {
  using std::chrono::milliseconds;
  if (attempt < 1) attempt = 1;
  if (!(unit >= 0.0)) unit = 0.0;  // NaN too
  if (unit >= 1.0) unit = std::nextafter(1.0, 0.0);
  long long cap = std::max<long long>(1, policy.max.count());
  long long delay = std::max<long long>(1, policy.base.count());
  // Doubling stops at the cap, so no power of two is ever computed that could overflow.
  for (int i = 1; i < attempt && delay < cap; ++i) delay *= 2;
  delay = std::min(delay, cap);
  // Integer halves, so the wait stays below the whole however the double rounds.
  long long half = delay / 2;
  long long span = delay - half;
  auto extra = static_cast<long long>(static_cast<double>(span) * unit);
  if (extra >= span) extra = span - 1;
  return milliseconds(std::max<long long>(1, half + extra));
}

}  // namespace gpurent::webhooks
