// Token buckets in hash-sharded maps, bounded in size, and the per-request admission check.
#include "api/rate_limiter.h"

#include "api/auth.h"
#include "api/responses.h"
#include "core/crypto.h"
#include "core/error.h"

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

namespace gpurent::http {

RateLimiter::RateLimiter(double rate, double burst, std::size_t max_keys, TimeSource now)
    : rate_(rate),
      burst_(burst),
      shard_limit_(std::max<std::size_t>(1, max_keys / kShards)),
      now_(std::move(now)) {}

RateLimiter::Decision RateLimiter::take(std::string_view key, double cost) {
  return decide(key, cost, true);
}

RateLimiter::Decision RateLimiter::check(std::string_view key, double cost) {
  return decide(key, cost, false);
}

std::size_t RateLimiter::size() const {
  std::size_t n = 0;
  for (const auto& shard : shards_) {
    std::lock_guard lock(shard.mutex);
    n += shard.buckets.size();
  }
  return n;
}

double RateLimiter::refilled(const Bucket& b, TimePoint now) const {
  double elapsed = std::chrono::duration<double>(now - b.updated).count();
  if (elapsed <= 0) return b.tokens;
  return std::min(burst_, b.tokens + elapsed * rate_);
}

RateLimiter::Decision RateLimiter::refusal(double tokens, double cost) const {
  // A year caps what a cost larger than the burst would otherwise make unbounded.
  double wait = std::ceil((cost - tokens) / rate_);
  int seconds = static_cast<int>(std::clamp(wait, 1.0, 365.0 * 24 * 3600));
  return {.allowed = false, .retry_after_seconds = seconds};
}

RateLimiter::Decision RateLimiter::decide(std::string_view key, double cost, bool consume) {
  if (!enabled()) return {};
  Shard& shard = shards_[TransparentHash{}(key) % kShards];
  TimePoint now = now_();
  std::lock_guard lock(shard.mutex);
  auto it = shard.buckets.find(key);
  // Another thread may have stamped the bucket with a later reading of the clock; moving
  // its stamp back would hand out the same refill twice.
  if (it != shard.buckets.end()) now = std::max(now, it->second.updated);
  double tokens = it == shard.buckets.end() ? burst_ : refilled(it->second, now);
  if (tokens < cost) {
    // Only the refill is recorded; a refused request costs nothing.
    if (it != shard.buckets.end()) it->second = {tokens, now};
    return refusal(tokens, cost);
  }
  if (!consume) return {};
  if (it == shard.buckets.end()) {
    if (shard.buckets.size() >= shard_limit_) make_room(shard.buckets, now);
    shard.buckets.emplace(std::string(key), Bucket{tokens - cost, now});
  } else {
    it->second = {tokens - cost, now};
  }
  return {};
}

// Drops buckets that have refilled (forgetting them changes nothing); when too few have,
// drops the longest idle too, an eighth of the shard at once so the sweep is amortised.
void RateLimiter::make_room(Map& buckets, TimePoint now) {
  for (auto it = buckets.begin(); it != buckets.end();) {
    it = refilled(it->second, now) >= burst_ ? buckets.erase(it) : std::next(it);
  }
  std::size_t target = shard_limit_ - std::max<std::size_t>(1, shard_limit_ / 8);
  if (buckets.size() <= target) return;
  std::vector<std::pair<TimePoint, Map::iterator>> by_age;
  by_age.reserve(buckets.size());
  for (auto it = buckets.begin(); it != buckets.end(); ++it)
    by_age.emplace_back(it->second.updated, it);
  std::size_t drop = buckets.size() - target;
  std::nth_element(by_age.begin(), by_age.begin() + static_cast<std::ptrdiff_t>(drop - 1),
                   by_age.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  for (std::size_t i = 0; i < drop; ++i) buckets.erase(by_age[i].second);
}

Response rate_limited_response(int retry_after_seconds) {
  Response r = error_response(ErrorCode::kRateLimited, "Too many requests; try again later.");
  r.set_header("Retry-After", std::to_string(retry_after_seconds));
  return r;
}

std::optional<Response> admit(const Request& request, RateLimiters& limiters) {
  // Every request costs its address, so cycling made-up credentials gains nothing.
  if (limiters.per_ip.enabled()) {
    std::string key = "ip:";
    key.append(request.remote_ip);
    if (auto d = limiters.per_ip.take(key); !d.allowed) {
      limiters.per_ip.record_refusal();
      return rate_limited_response(d.retry_after_seconds);
    }
  }
  if (!limiters.per_credential.enabled()) return std::nullopt;
  std::string key;
  if (auto authorization = request.header("Authorization"); !authorization.empty()) {
    key = "tok:" + crypto::sha256_hex(authorization);
  } else if (auto cookie = cookie_value(request, kSessionCookie); !cookie.empty()) {
    key = "ses:" + crypto::sha256_hex(cookie);
  } else {
    return std::nullopt;  // anonymous: the address's bucket is its only limit
  }
  if (auto d = limiters.per_credential.take(key); !d.allowed) {
    limiters.per_credential.record_refusal();
    return rate_limited_response(d.retry_after_seconds);
  }
  return std::nullopt;
}

int LoginThrottle::wait_before(const identity::LoginKeys& keys) {
  auto account = per_account.check(keys.account);
  auto ip = per_ip.check(keys.ip);
  if (account.allowed && ip.allowed) return 0;
  if (!account.allowed) per_account.record_refusal();
  if (!ip.allowed) per_ip.record_refusal();
  return std::max(1, std::max(account.retry_after_seconds, ip.retry_after_seconds));
}

void LoginThrottle::failed(const identity::LoginKeys& keys) {
  per_account.take(keys.account);
  per_ip.take(keys.ip);
}

}  // namespace gpurent::http
