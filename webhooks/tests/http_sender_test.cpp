// The delivery client's host lookups: each runs on a thread of its own, at most
// ResolverSlots' limit at once, so a DNS server that never answers cannot pile up a thread
// per delivery attempt; the attempt that finds no slot fails at once ("resolver busy").
#include "webhooks/sender.h"
#include "webhooks/webhook_url.h"

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <variant>
#include <vector>

namespace gpurent::webhooks {
namespace http_sender_test {

using namespace std::chrono_literals;

WebhookUrl url_of(const std::string& text) {
  auto r = parse_webhook_url(text);
  EXPECT_TRUE(std::holds_alternative<WebhookUrl>(r)) << text;
  return std::holds_alternative<WebhookUrl>(r) ? std::get<WebhookUrl>(r) : WebhookUrl{};
}

// A DNS server that answers nothing until released, then "no such host" to everyone.
class HungDns {
 public:
  // Shared with the lookups' threads, which may outlive a delivery.
  static HostResolver resolver(const std::shared_ptr<HungDns>& dns) {
    return [dns](const std::string& host, std::uint16_t) {
      std::unique_lock lock(dns->mutex_);
      dns->asked_.push_back(host);
      dns->changed_.notify_all();
      dns->changed_.wait(lock, [&] { return dns->answering_; });
      return HostAddresses{{}, "no such host: " + host};
    };
  }
  void answer() {
    std::lock_guard lock(mutex_);
    answering_ = true;
    changed_.notify_all();
  }
  std::size_t asked() {
    std::lock_guard lock(mutex_);
    return asked_.size();
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<std::string> asked_;
  bool answering_ = false;
};

// Polls `done` for up to 10 s.
template <typename Done>
bool eventually(Done done) {
  for (auto until = std::chrono::steady_clock::now() + 10s;
       std::chrono::steady_clock::now() < until; std::this_thread::sleep_for(5ms)) {
    if (done()) return true;
  }
  return done();
}

TEST(HttpSenderLookups, AtMostTheLimitRunAndTheNextAttemptIsRefusedAtOnce) {
  auto slots = std::make_shared<ResolverSlots>(2);
  auto dns = std::make_shared<HungDns>();
  auto sender = make_http_sender(
      {.allow_internal = true, .resolver_slots = slots, .resolve = HungDns::resolver(dns)});
  auto url = url_of("http://hook.example.test/events");

  // Two deliveries wait for the hung DNS server; each gives up at its own deadline, and its
  // lookup goes on holding a slot.
  std::vector<SendResult> timed_out(2);
  std::vector<std::thread> deliveries;
  for (auto& result : timed_out) {
    deliveries.emplace_back([&] { result = sender->post(url, "{}", {}, 300ms); });
  }
  for (auto& t : deliveries) t.join();
  for (const auto& result : timed_out) {
    EXPECT_FALSE(result.status);
    EXPECT_EQ(result.error, "timed out resolving the host");
  }
  EXPECT_EQ(dns->asked(), 2u);
  EXPECT_EQ(slots->in_use(), 2u) << "the lookups outlive their deliveries";
  EXPECT_EQ(slots->busy_total(), 0u);

  // The third finds none free: it fails at once, long before its deadline, and asks no one.
  auto started = std::chrono::steady_clock::now();
  auto busy = sender->post(url, "{}", {}, 10s);
  EXPECT_LT(std::chrono::steady_clock::now() - started, 2s);
  EXPECT_FALSE(busy.status);
  EXPECT_EQ(busy.error.rfind("resolver busy: 2 host lookups are running", 0), 0u) << busy.error;
  EXPECT_NE(busy.error.find("webhook_max_resolving"), std::string::npos) << busy.error;
  EXPECT_EQ(slots->busy_total(), 1u);
  EXPECT_EQ(dns->asked(), 2u);
  EXPECT_EQ(slots->in_use(), 2u);

  // The server answers at last: the hung lookups end, their slots come back, and the next
  // attempt is resolved again (and gets the server's answer).
  dns->answer();
  EXPECT_TRUE(eventually([&] { return slots->in_use() == 0; })) << slots->in_use();
  auto again = sender->post(url, "{}", {}, 5s);
  EXPECT_FALSE(again.status);
  EXPECT_EQ(again.error, "no such host: hook.example.test");
  EXPECT_EQ(dns->asked(), 3u);
  EXPECT_EQ(slots->busy_total(), 1u);
  EXPECT_TRUE(eventually([&] { return slots->in_use() == 0; }));
}

TEST(HttpSenderLookups, SlotsAreCountedAndNeverGoPastTheLimit) {
  ResolverSlots slots(3);
  EXPECT_EQ(slots.limit(), 3u);
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(slots.try_acquire()) << i;
  EXPECT_FALSE(slots.try_acquire());
  EXPECT_FALSE(slots.try_acquire());
  EXPECT_EQ(slots.in_use(), 3u);
  EXPECT_EQ(slots.busy_total(), 2u);
  slots.release();
  EXPECT_TRUE(slots.try_acquire());
  EXPECT_EQ(slots.in_use(), 3u);
  EXPECT_EQ(ResolverSlots(0).limit(), 1u) << "a limit of none would refuse every delivery";
}

// What the resolver answers is checked as the system's answers are: an internal address is
// refused unless allowed, and an allowed one is where the connection goes.
TEST(HttpSenderLookups, AResolversAddressesAreCheckedBeforeConnecting) {
  auto loopback = [](const std::string&, std::uint16_t) {
    return HostAddresses{{"127.0.0.1", "::1"}, ""};
  };
  auto url = url_of("http://hook.example.test:9/events");
  auto strict = make_http_sender({.allow_internal = false, .resolve = loopback});
  auto refused = strict->post(url, "{}", {}, 2s);
  EXPECT_FALSE(refused.status);
  EXPECT_EQ(refused.error, "the host resolves to an internal address, which is refused");
  auto open = make_http_sender({.allow_internal = true, .resolve = loopback});
  auto closed_port = open->post(url, "{}", {}, 2s);
  EXPECT_FALSE(closed_port.status);
  EXPECT_NE(closed_port.error.find("could not connect"), std::string::npos) << closed_port.error;
}

}  // namespace http_sender_test
}  // namespace gpurent::webhooks
