// RateLimiter token buckets over a fake clock, and admit()'s choice of buckets.
#include "api/rate_limiter.h"
#include "api/tests/map_headers.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <map>
#include <thread>
#include <vector>

namespace gpurent::http {
namespace rate_limiter_test {

using namespace std::chrono_literals;

class FakeTime {
 public:
  RateLimiter::TimeSource source() {
    return [this] { return now_; };
  }
  void advance(std::chrono::nanoseconds by) { now_ += by; }

 private:
  RateLimiter::TimePoint now_{std::chrono::hours(1000)};
};

TEST(RateLimiter, AllowsTheBurstThenRefuses) {
  FakeTime time;
  RateLimiter limiter(1, 5, 1000, time.source());
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(limiter.take("k").allowed) << i;
  auto d = limiter.take("k");
  EXPECT_FALSE(d.allowed);
  EXPECT_GE(d.retry_after_seconds, 1);
}

TEST(RateLimiter, RefillsOverTime) {
  FakeTime time;
  RateLimiter limiter(2, 4, 1000, time.source());
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(limiter.take("k").allowed);
  EXPECT_FALSE(limiter.take("k").allowed);
  time.advance(500ms);  // one token at 2/s
  EXPECT_TRUE(limiter.take("k").allowed);
  EXPECT_FALSE(limiter.take("k").allowed);
  time.advance(1h);  // never more than the burst
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(limiter.take("k").allowed) << i;
  EXPECT_FALSE(limiter.take("k").allowed);
}

TEST(RateLimiter, RetryAfterIsTheWholeSecondsUntilATokenIsBack) {
  FakeTime time;
  RateLimiter slow(0.1, 1, 1000, time.source());  // one token every 10 s
  ASSERT_TRUE(slow.take("k").allowed);
  EXPECT_EQ(slow.take("k").retry_after_seconds, 10);
  time.advance(7500ms);
  EXPECT_EQ(slow.take("k").retry_after_seconds, 3);  // 2.5 s rounds up
  time.advance(2500ms);
  EXPECT_TRUE(slow.take("k").allowed);

  RateLimiter fast(100, 1, 1000, time.source());
  ASSERT_TRUE(fast.take("k").allowed);
  EXPECT_EQ(fast.take("k").retry_after_seconds, 1) << "never less than one second";

  RateLimiter costly(1, 10, 1000, time.source());
  EXPECT_TRUE(costly.take("k", 8).allowed);
  EXPECT_EQ(costly.take("k", 5).retry_after_seconds, 3);
}

TEST(RateLimiter, ARefusedTakeCostsNothing) {
  FakeTime time;
  RateLimiter limiter(1, 1, 1000, time.source());
  ASSERT_TRUE(limiter.take("k").allowed);
  for (int i = 0; i < 10; ++i) EXPECT_FALSE(limiter.take("k").allowed);
  time.advance(1s);
  EXPECT_TRUE(limiter.take("k").allowed);
}

TEST(RateLimiter, CheckTakesNothing) {
  FakeTime time;
  RateLimiter limiter(1, 2, 1000, time.source());
  for (int i = 0; i < 10; ++i) EXPECT_TRUE(limiter.check("k").allowed);
  EXPECT_EQ(limiter.size(), 0u);
  ASSERT_TRUE(limiter.take("k").allowed);
  ASSERT_TRUE(limiter.take("k").allowed);
  auto d = limiter.check("k");
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.retry_after_seconds, 1);
}

TEST(RateLimiter, KeysAreIndependent) {
  FakeTime time;
  RateLimiter limiter(1, 2, 1000, time.source());
  ASSERT_TRUE(limiter.take("a").allowed);
  ASSERT_TRUE(limiter.take("a").allowed);
  EXPECT_FALSE(limiter.take("a").allowed);
  EXPECT_TRUE(limiter.take("b").allowed);
  EXPECT_TRUE(limiter.take("b").allowed);
  EXPECT_FALSE(limiter.take("b").allowed);
}

TEST(RateLimiter, ZeroRateOrBurstDisables) {
  FakeTime time;
  for (auto [rate, burst] : {std::pair{0.0, 10.0}, std::pair{10.0, 0.0}, std::pair{0.0, 0.0}}) {
    RateLimiter limiter(rate, burst, 1000, time.source());
    EXPECT_FALSE(limiter.enabled());
    for (int i = 0; i < 10'000; ++i) ASSERT_TRUE(limiter.take("k").allowed);
    EXPECT_EQ(limiter.size(), 0u) << "a disabled limiter stores nothing";
  }
}

TEST(RateLimiter, MemoryStaysBoundedWithManyKeys) {
  FakeTime time;
  constexpr std::size_t kMax = 1600;
  RateLimiter limiter(1, 10, kMax, time.source());
  for (int i = 0; i < 100'000; ++i) {
    ASSERT_TRUE(limiter.take("key-" + std::to_string(i)).allowed);
    if (i % 1000 == 0) time.advance(1ms);
  }
  EXPECT_LE(limiter.size(), kMax);
  EXPECT_GT(limiter.size(), kMax / 2) << "eviction keeps most of what fits";
}

TEST(RateLimiter, EvictsRefilledBucketsBeforeBusyOnes) {
  FakeTime time;
  constexpr std::size_t kMax = 16 * 8;  // 8 a shard
  RateLimiter limiter(1, 3, kMax, time.source());
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(limiter.take("hot").allowed);
  // Each second "hot" spends the token it got back, while a crowd of new keys each spends
  // one of three and is full again a second later: only the crowd may be forgotten.
  int n = 0;
  for (int round = 0; round < 100; ++round) {
    time.advance(1s);
    ASSERT_TRUE(limiter.take("hot").allowed) << round;
    for (int i = 0; i < 20; ++i) ASSERT_TRUE(limiter.take("cold-" + std::to_string(n++)).allowed);
    ASSERT_LE(limiter.size(), kMax);
  }
  EXPECT_FALSE(limiter.take("hot").allowed) << "a drained bucket is not forgotten";
}

TEST(RateLimiter, ConcurrentTakesNeverExceedBurstPlusRefill) {
  std::atomic<std::int64_t> now_ns{0};
  RateLimiter limiter(100, 50, 1000, [&now_ns] {
    return RateLimiter::TimePoint(std::chrono::nanoseconds(now_ns.load()));
  });
  std::atomic<int> allowed{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 2000; ++i) {
        if (t == 0 && i % 100 == 0) now_ns += 10'000'000;  // 10 ms: one token at 100/s
        if (limiter.take("shared").allowed) ++allowed;
      }
    });
  }
  for (auto& th : threads) th.join();
  // 20 advances of 10 ms: 200 ms, 20 tokens of refill at most.
  EXPECT_LE(allowed.load(), 50 + 20);
  EXPECT_GE(allowed.load(), 50);
}

struct AdmitCase {
  MapHeaders headers;
  Request request;
  AdmitCase(std::string ip, std::map<std::string, std::string> h) : headers(std::move(h)) {
    ip_ = std::move(ip);
    request.remote_ip = ip_;
    request.headers = &headers;
  }
  std::string ip_;
};

TEST(Admit, LimitsTheAddressAndAnswers429WithRetryAfter) {
  FakeTime time;
  RateLimiters limiters(0, 0, 1, 3, time.source());
  AdmitCase c("10.0.0.1", {});
  for (int i = 0; i < 3; ++i) EXPECT_FALSE(admit(c.request, limiters)) << i;
  auto refused = admit(c.request, limiters);
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status, 429);
  EXPECT_EQ(nlohmann::json::parse(refused->body)["error"]["code"], "rate_limited");
  ASSERT_EQ(refused->headers.size(), 1u);
  EXPECT_EQ(refused->headers[0].first, "Retry-After");
  EXPECT_EQ(refused->headers[0].second, "1");
  EXPECT_EQ(limiters.per_ip.refused_total(), 1u);
  EXPECT_EQ(limiters.per_credential.refused_total(), 0u);
  AdmitCase other("10.0.0.2", {});
  EXPECT_FALSE(admit(other.request, limiters)) << "another address has its own bucket";
}

TEST(Admit, TokenAndSessionHaveTheirOwnBuckets) {
  FakeTime time;
  RateLimiters limiters(1, 2, 0, 0, time.source());
  AdmitCase token("10.0.0.1", {{"Authorization", "Bearer gpr_" + std::string(64, 'a')}});
  AdmitCase session("10.0.0.1", {{"Cookie", "x=1; gpurent_session=" + std::string(64, 'b')}});
  AdmitCase anonymous("10.0.0.1", {});
  for (int i = 0; i < 2; ++i) ASSERT_FALSE(admit(token.request, limiters));
  EXPECT_TRUE(admit(token.request, limiters));
  for (int i = 0; i < 2; ++i) ASSERT_FALSE(admit(session.request, limiters));
  EXPECT_TRUE(admit(session.request, limiters));
  EXPECT_FALSE(admit(anonymous.request, limiters)) << "no credential, no credential limit";
  EXPECT_EQ(limiters.per_credential.size(), 2u);
}

TEST(Admit, FakeCredentialsStillCostTheAddress) {
  FakeTime time;
  RateLimiters limiters(100, 100, 1, 3, time.source());
  for (int i = 0; i < 3; ++i) {
    AdmitCase c("10.0.0.9", {{"Authorization", "Bearer gpr_" + std::to_string(i)}});
    ASSERT_FALSE(admit(c.request, limiters));
  }
  AdmitCase c("10.0.0.9", {{"Authorization", "Bearer gpr_new"}});
  EXPECT_TRUE(admit(c.request, limiters));
}

}  // namespace rate_limiter_test
}  // namespace gpurent::http
