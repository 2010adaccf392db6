// Token-bucket rate limiting, in memory and per replica, and the request admission check.
#pragma once

#include "api/http_types.h"
#include "identity/sign_in.h"

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

namespace gpurent::http {

// One bucket per key: it holds up to `burst` tokens and refills at `rate` tokens a second.
// A rate or burst of zero disables the limiter: every take is allowed and nothing is stored.
// Keys are hashed credentials or addresses, never raw secrets. Thread-safe: the keys are
// spread over shards, each with its own mutex.
class RateLimiter {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;
  using TimeSource = std::function<TimePoint()>;

  struct Decision {
    bool allowed = true;
    int retry_after_seconds = 0;  // at least 1 when refused
  };

  static constexpr std::size_t kShards = 16;
  static constexpr std::size_t kDefaultMaxKeys = 100'000;

  RateLimiter(double rate, double burst, std::size_t max_keys = kDefaultMaxKeys,
              TimeSource now = &std::chrono::steady_clock::now);
  RateLimiter(const RateLimiter&) = delete;
  RateLimiter& operator=(const RateLimiter&) = delete;

  // Takes `cost` tokens from key's bucket when it has them; otherwise takes nothing and
  // says how long until it will.
  Decision take(std::string_view key, double cost = 1);
  // What take would answer, without taking anything.
  Decision check(std::string_view key, double cost = 1);

  bool enabled() const { return rate_ > 0 && burst_ > 0; }
  std::size_t size() const;  // keys held now
  // Requests this limiter turned away since start, for /metrics. Callers record a refusal
  // when they answer 429 (a take() that finds the bucket empty is not always one).
  void record_refusal() { refused_.fetch_add(1, std::memory_order_relaxed); }
  std::uint64_t refused_total() const { return refused_.load(std::memory_order_relaxed); }

 private:
  struct Bucket {
    double tokens = 0;
    TimePoint updated;
  };
  struct TransparentHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  using Map = std::unordered_map<std::string, Bucket, TransparentHash, std::equal_to<>>;
  struct Shard {
    mutable std::mutex mutex;
    Map buckets;
  };

  Decision decide(std::string_view key, double cost, bool consume);
  double refilled(const Bucket& b, TimePoint now) const;
  Decision refusal(double tokens, double cost) const;
  void make_room(Map& buckets, TimePoint now);

  double rate_;
  double burst_;
  std::size_t shard_limit_;
  TimeSource now_;
  std::array<Shard, kShards> shards_;
  std::atomic<std::uint64_t> refused_{0};
};

// The general request limits: one bucket per credential (API token or session cookie)
// and one per client address.
struct RateLimiters {
  RateLimiters(double per_credential, double burst_per_credential, double per_ip,
               double burst_per_ip, RateLimiter::TimeSource now = &std::chrono::steady_clock::now)
      : per_credential(per_credential, burst_per_credential, RateLimiter::kDefaultMaxKeys, now),
        per_ip(per_ip, burst_per_ip, RateLimiter::kDefaultMaxKeys, now) {}

  RateLimiter per_credential;
  RateLimiter per_ip;
};

// Failed sign-ins, per account (lower-cased email) and per client address: what
// identity::SignIn's login asks before it checks a password.
struct LoginThrottle : identity::LoginThrottling {
  explicit LoginThrottle(RateLimiter::TimeSource now = &std::chrono::steady_clock::now)
      : per_account(5.0 / 900, 5, RateLimiter::kDefaultMaxKeys, now),
        per_ip(20.0 / 900, 20, RateLimiter::kDefaultMaxKeys, now) {}

  int wait_before(const identity::LoginKeys& keys) override;
  void failed(const identity::LoginKeys& keys) override;

  RateLimiter per_account;  // 5 failures, then one more every 3 minutes
  RateLimiter per_ip;       // 20 failures, then one more every 45 seconds
};

// Charges the request to its client address and, when it carries one, to its credential
// (hashed). nullopt admits it; otherwise the 429 rate_limited answer with Retry-After.
std::optional<Response> admit(const Request& request, RateLimiters& limiters);

// The 429 rate_limited response with Retry-After.
Response rate_limited_response(int retry_after_seconds);

}  // namespace gpurent::http
