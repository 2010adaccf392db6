// Webhooks end to end: real gpurentd processes deliver to a receiver in the test (a small HTTP
// server thread) that checks every signature. A rental booked and driven to active is
// delivered as rental.scheduled and rental.active, then rental.expiring before its end; a
// server killed (SIGKILL) mid-delivery loses nothing, a restarted one delivers the same event
// again; a receiver answering 500 is retried with backoff and then given up on, all of it in
// the delivery log; bad input is 400 naming the field; another org's webhook is 404.
#include "billing/payment_signature.h"
#include "tests/support/rental_fleet_fixture.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace gpurent::testing::webhook_e2e {

using nlohmann::json;
using SteadyClock = std::chrono::steady_clock;

struct Received {
  std::map<std::string, std::string> headers;  // names lower-cased
  std::string body;
  SteadyClock::time_point at;

  std::string header(const std::string& name) const {
    auto it = headers.find(name);
    return it == headers.end() ? "" : it->second;
  }
  json json_body() const { return json::parse(body); }
};

// A webhook receiver on 127.0.0.1: records each request, answers with the status the test
// sets, or holds requests unanswered until released (a delivery in flight).
class Receiver {
 public:
  Receiver() {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    int on = 1;
    ::setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    EXPECT_EQ(::listen(fd_, 16), 0);
    socklen_t len = sizeof addr;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    accept_thread_ = std::thread([this] { accept_loop(); });
  }
  ~Receiver() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    changed_.notify_all();
    accept_thread_.join();
    for (auto& t : connections_) t.join();
    ::close(fd_);
  }
  Receiver(const Receiver&) = delete;
  Receiver& operator=(const Receiver&) = delete;

  std::string url(const std::string& path = "/hooks/gpurent") const {
    return "http://127.0.0.1:" + std::to_string(port_) + path;
  }
  void answer(int status) {
    std::lock_guard lock(mutex_);
    status_ = status;
  }
  void hold(bool on) {
    {
      std::lock_guard lock(mutex_);
      holding_ = on;
    }
    changed_.notify_all();
  }
  std::vector<Received> received() {
    std::lock_guard lock(mutex_);
    return received_;
  }
  // The requests of one event type, in arrival order.
  std::vector<Received> of_type(const std::string& type) {
    std::vector<Received> out;
    for (auto& r : received()) {
      if (r.header("x-webhook-event") == type) out.push_back(r);
    }
    return out;
  }
  bool wait_for_count(std::size_t n, std::chrono::milliseconds limit = std::chrono::seconds(20)) {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, limit, [&] { return received_.size() >= n; });
  }

 private:
  void accept_loop() {
    while (true) {
      {
        std::lock_guard lock(mutex_);
        if (stopping_) return;
      }
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;
      int conn = ::accept(fd_, nullptr, nullptr);
      if (conn < 0) continue;
      std::lock_guard lock(mutex_);
      connections_.emplace_back([this, conn] { serve(conn); });
    }
  }

  void serve(int conn) {
    timeval tv{5, 0};
    ::setsockopt(conn, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    std::string data;
    char buf[4096];
    std::size_t header_end = std::string::npos;
    std::size_t length = 0;
    while (true) {
      if (header_end == std::string::npos) {
        header_end = data.find("\r\n\r\n");
        if (header_end != std::string::npos) length = content_length(data.substr(0, header_end));
      }
      if (header_end != std::string::npos && data.size() >= header_end + 4 + length) break;
      ssize_t n = ::recv(conn, buf, sizeof buf, 0);
      if (n <= 0) {
        ::close(conn);
        return;
      }
      data.append(buf, static_cast<std::size_t>(n));
    }
    Received r;
    r.at = SteadyClock::now();
    r.body = data.substr(header_end + 4, length);
    std::size_t pos = data.find("\r\n") + 2;
    while (pos < header_end) {
      std::size_t eol = data.find("\r\n", pos);
      std::string line = data.substr(pos, eol - pos);
      auto colon = line.find(':');
      std::string name = line.substr(0, colon);
      for (auto& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      std::string value = line.substr(colon + 1);
      while (!value.empty() && value.front() == ' ') value.erase(value.begin());
      r.headers[name] = value;
      pos = eol + 2;
    }
    int status;
    {
      std::unique_lock lock(mutex_);
      received_.push_back(r);
      changed_.notify_all();
      changed_.wait(lock, [&] { return !holding_ || stopping_; });
      status = status_;
    }
    std::string reply = "HTTP/1.1 " + std::to_string(status) +
                        " Answer\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok";
    ::send(conn, reply.data(), reply.size(), MSG_NOSIGNAL);
    ::close(conn);
  }

  static std::size_t content_length(const std::string& head) {
    std::string lower = head;
    for (auto& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    auto at = lower.find("content-length:");
    if (at == std::string::npos) return 0;
    return std::stoul(lower.substr(at + 15));
  }

  int fd_ = -1;
  int port_ = 0;
  std::mutex mutex_;
  std::condition_variable changed_;
  bool stopping_ = false;
  bool holding_ = false;
  int status_ = 200;
  std::vector<Received> received_;
  std::vector<std::thread> connections_;
  std::thread accept_thread_;
};

class WebhookE2E : public RentalFleetTest {
 protected:
  // Short waits and attempts, deliveries to the receiver on loopback allowed.
  static std::vector<std::string> flags(std::vector<std::string> extra = {}) {
    std::vector<std::string> f{"--rate_limit_per_credential=0",
                               "--rate_limit_per_ip=0",
                               "--lifecycle_interval=60s",
                               "--webhook_allow_internal=true",
                               "--webhook_poll_interval=100ms",
                               "--webhook_backoff=200ms",
                               "--webhook_backoff_max=2s",
                               "--webhook_timeout=1s",
                               "--webhook_lease=6s",
                               "--webhook_secret_key=an e2e webhook secret key, 32 chars"};
    f.insert(f.end(), extra.begin(), extra.end());
    return f;
  }
  void start_server(std::vector<std::string> extra = {}) {
    server_ = std::make_unique<ServerProcess>(
        ServerOptions{.database_url = db_.url(), .flags = flags(std::move(extra))});
  }
  void SetUp() override {}

  // (id, secret) of a new webhook of `owner`'s org.
  std::pair<std::string, std::string> create_webhook(const Login& owner, const json& events) {
    auto r = post("/v1/webhooks", {{"url", receiver_.url()}, {"events", events}}, session(owner));
    EXPECT_EQ(r.status, 201) << r.body;
    return {r.json().value("id", ""), r.json().value("secret", "")};
  }

  // The signature is HMAC-SHA256 of "<t>.<body>" under the secret, checked as the inbound
  // payment webhook's is; its time is the server's clock (the test clock, `ahead` seconds past
  // the system's).
  static void expect_signed(const Received& r, const std::string& secret, long long ahead = 0) {
    std::string header = r.header("x-signature");
    ASSERT_EQ(header.rfind("t=", 0), 0u) << header;
    long long t = std::stoll(header.substr(2, header.find(',') - 2));
    auto at = Timestamp(std::chrono::seconds(t));
    EXPECT_EQ(billing::check_payment_signature(header, r.body, secret, at, std::chrono::seconds(1))
                  .verdict,
              billing::SignatureVerdict::kValid)
        << header;
    long long now = std::chrono::duration_cast<std::chrono::seconds>(
                        std::chrono::system_clock::now().time_since_epoch())
                        .count() +
                    ahead;
    EXPECT_NEAR(static_cast<double>(t), static_cast<double>(now), 60.0);
    EXPECT_NE(
        billing::check_payment_signature(header, r.body, secret + "x", at, std::chrono::seconds(1))
            .verdict,
        billing::SignatureVerdict::kValid);
    EXPECT_EQ(r.header("content-type"), "application/json");
    EXPECT_EQ(r.header("x-webhook-event-id"), r.json_body().value("id", ""));
    EXPECT_EQ(r.header("x-webhook-event"), r.json_body().value("type", ""));
  }

  json deliveries(const Login& owner, const std::string& hook) {
    auto r = get("/v1/webhooks/" + hook + "/deliveries", session(owner));
    EXPECT_EQ(r.status, 200) << r.body;
    return r.json()["items"];
  }

  Receiver receiver_;
};

TEST_F(WebhookE2E, ARentalReachingActiveIsDeliveredSignedAndExpiringBeforeItsEnd) {
  start_server({"--webhook_expiring_before=1h"});
  seed_fleet({2});
  add_node("gpu-1");
  Login owner = account("owner@example.com", "Acme");
  auto [hook, secret] =
      create_webhook(owner, {"rental.scheduled", "rental.active", "rental.expiring"});
  ASSERT_EQ(secret.rfind("whsec_", 0), 0u);
  // The secret is shown once: the webhook read back has none.
  auto read = get("/v1/webhooks/" + hook, session(owner));
  ASSERT_EQ(read.status, 200) << read.body;
  EXPECT_FALSE(read.json().contains("secret"));
  EXPECT_EQ(read.json()["url"], receiver_.url());

  auto booked = book_now(owner, 2);
  ASSERT_EQ(booked.status, 201) << booked.body;
  std::string rental = booked.json()["id"];
  ASSERT_TRUE(receiver_.wait_for_count(1));
  auto scheduled = receiver_.of_type("rental.scheduled");
  ASSERT_EQ(scheduled.size(), 1u);
  expect_signed(scheduled[0], secret);
  EXPECT_EQ(scheduled[0].json_body()["data"]["rental"]["id"], rental);
  EXPECT_EQ(scheduled[0].json_body()["data"]["previous_state"], nullptr);
  EXPECT_EQ(scheduled[0].header("x-webhook-id"), hook);

  advance(1);
  run_lifecycle();  // provisioning: not subscribed, so not sent
  complete_queued(rental);
  advance(61);
  run_lifecycle();
  ASSERT_EQ(get("/v1/rentals/" + rental, session(owner)).json()["state"], "active");
  ASSERT_TRUE(receiver_.wait_for_count(2));
  auto active = receiver_.of_type("rental.active");
  ASSERT_EQ(active.size(), 1u);
  expect_signed(active[0], secret, 62);
  json body = active[0].json_body();
  EXPECT_EQ(body["type"], "rental.active");
  EXPECT_EQ(body["id"].get<std::string>().rfind("evt_", 0), 0u);
  EXPECT_EQ(body["data"]["rental"]["id"], rental);
  EXPECT_EQ(body["data"]["rental"]["state"], "active");
  EXPECT_EQ(body["data"]["previous_state"], "provisioning");
  EXPECT_EQ(receiver_.of_type("rental.provisioning").size(), 0u);
  // The rental as the API shows it (one encoder), without the SSH details that only the
  // owner's views read from the node.
  json shown = get("/v1/rentals/" + rental, session(owner)).json();
  ASSERT_TRUE(shown.contains("ssh"));
  shown.erase("ssh");
  EXPECT_EQ(body["data"]["rental"], shown);

  // Within the last hour of its day, one expiry warning, however often the worker looks.
  advance(23 * 3600);
  owner = login("owner@example.com");  // the idle session ended with the day
  run_lifecycle();
  run_lifecycle();
  ASSERT_TRUE(receiver_.wait_for_count(3));
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  auto expiring = receiver_.of_type("rental.expiring");
  ASSERT_EQ(expiring.size(), 1u);
  expect_signed(expiring[0], secret, 62 + 23 * 3600);
  EXPECT_EQ(expiring[0].json_body()["data"]["rental"]["id"], rental);

  // An extension moves the end: the warning is due again before the new one, once.
  auto extended = post("/v1/rentals/" + rental + "/extend", {{"days", 1}}, session(owner));
  ASSERT_EQ(extended.status, 200) << extended.body;
  run_lifecycle();
  advance(24 * 3600);
  owner = login("owner@example.com");
  run_lifecycle();
  run_lifecycle();
  ASSERT_TRUE(receiver_.wait_for_count(4));
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  expiring = receiver_.of_type("rental.expiring");
  ASSERT_EQ(expiring.size(), 2u);
  expect_signed(expiring[1], secret, 62 + 47 * 3600);
  EXPECT_NE(expiring[1].json_body()["data"]["ends_at"], expiring[0].json_body()["data"]["ends_at"]);
  EXPECT_NE(expiring[1].json_body()["id"], expiring[0].json_body()["id"]);

  auto log = deliveries(owner, hook);
  ASSERT_EQ(log.size(), 4u) << log;
  for (const auto& d : log) {
    EXPECT_EQ(d["state"], "delivered") << d;
    EXPECT_EQ(d["attempts"], 1);
    EXPECT_EQ(d["attempt_log"][0]["status"], 200);
  }
  EXPECT_EQ(log[0]["event_type"], "rental.expiring");  // newest first
}

// The wipe gate's moves reach the customer: a rental booked for tomorrow on a node an admin
// then sends to maintenance moves to another node for the same period (rental.scheduled,
// previous_state scheduled); with that one in maintenance too, nothing else is free and it is
// cancelled (rental.cancelled), its hold released and nothing charged.
TEST_F(WebhookE2E, ARentalMovedOffANodeLeavingServiceIsToldAndOneWithNowhereToGoIsCancelled) {
  start_server();
  seed_fleet({2});
  add_node("gpu-1");
  add_node("gpu-2");
  Login owner = account("owner@example.com", "Acme");
  auto [hook, secret] = create_webhook(owner, {"rental.scheduled", "rental.cancelled"});
  json before = get("/v1/billing/balance", session(owner)).json();
  auto tomorrow = format_rfc3339(std::chrono::time_point_cast<std::chrono::microseconds>(
      std::chrono::system_clock::now() + std::chrono::hours(24)));
  auto booked = post("/v1/rentals",
                     {{"gpu_model", kModel},
                      {"gpu_count", 2},
                      {"start", tomorrow},
                      {"days", 1},
                      {"image_id", image_id_}},
                     session(owner));
  ASSERT_EQ(booked.status, 201) << booked.body;
  std::string rental = booked.json()["id"];
  std::string first_node = booked.json()["node_id"];
  ASSERT_TRUE(receiver_.wait_for_count(1));

  auto away =
      post("/v1/admin/nodes/" + first_node + "/maintenance", {{"reason", "fan"}}, session(admin_));
  ASSERT_EQ(away.status, 200) << away.body;
  run_lifecycle();
  json moved = get("/v1/rentals/" + rental, session(owner)).json();
  EXPECT_EQ(moved["state"], "scheduled");
  ASSERT_TRUE(moved["node_id"].is_string());
  EXPECT_NE(moved["node_id"], first_node);
  EXPECT_EQ(moved["period"], booked.json()["period"]) << "the same period";
  EXPECT_EQ(moved["price"], booked.json()["price"]) << "the same price";
  ASSERT_TRUE(receiver_.wait_for_count(2));
  auto scheduled = receiver_.of_type("rental.scheduled");
  ASSERT_EQ(scheduled.size(), 2u);
  expect_signed(scheduled[1], secret);
  EXPECT_EQ(scheduled[1].json_body()["data"]["previous_state"], "scheduled");
  EXPECT_EQ(scheduled[1].json_body()["data"]["rental"]["node_id"], moved["node_id"]);

  auto second = post("/v1/admin/nodes/" + moved["node_id"].get<std::string>() + "/maintenance",
                     {{"reason", "fan"}}, session(admin_));
  ASSERT_EQ(second.status, 200) << second.body;
  run_lifecycle();
  EXPECT_EQ(get("/v1/rentals/" + rental, session(owner)).json()["state"], "cancelled");
  ASSERT_TRUE(receiver_.wait_for_count(3));
  auto cancelled = receiver_.of_type("rental.cancelled");
  ASSERT_EQ(cancelled.size(), 1u);
  expect_signed(cancelled[0], secret);
  EXPECT_EQ(cancelled[0].json_body()["data"]["previous_state"], "scheduled");
  json after = get("/v1/billing/balance", session(owner)).json();
  EXPECT_EQ(after["held"], before["held"]) << after;
  EXPECT_EQ(after["available"], before["available"]) << after;
}

TEST_F(WebhookE2E, AServerKilledMidDeliveryLosesNoEvent) {
  start_server();
  Login owner = account("owner@example.com", "Acme");
  auto [hook, secret] = create_webhook(owner, {"rental.active"});
  receiver_.hold(true);
  auto ping = post("/v1/webhooks/" + hook + "/test", json::object(), session(owner));
  ASSERT_EQ(ping.status, 202) << ping.body;
  std::string event = ping.json()["event_id"];
  // The first attempt is in flight: the server dies before it has an answer.
  ASSERT_TRUE(receiver_.wait_for_count(1));
  server_->send_signal(SIGKILL);
  EXPECT_EQ(server_->wait_exit(std::chrono::seconds(10)), -1);
  receiver_.hold(false);

  // Another server on the same database delivers it once the dead one's lease has ended.
  start_server();
  ASSERT_TRUE(receiver_.wait_for_count(2, std::chrono::seconds(30)));
  auto got = receiver_.of_type("webhook.ping");
  ASSERT_EQ(got.size(), 2u);
  for (const auto& r : got) {
    expect_signed(r, secret);
    EXPECT_EQ(r.json_body()["id"], event);  // the same event: receivers deduplicate by it
  }
  EXPECT_EQ(got[0].header("x-webhook-attempt"), "1");
  EXPECT_EQ(got[1].header("x-webhook-attempt"), "2");
  EXPECT_GE(got[1].at - got[0].at, std::chrono::seconds(5));  // not before the lease ended
  owner = login("owner@example.com");
  ASSERT_TRUE(wait_for([&] { return deliveries(owner, hook)[0]["state"] == "delivered"; }));
  auto log = deliveries(owner, hook);
  EXPECT_EQ(log[0]["attempts"], 2);
  // The killed attempt never recorded an answer; the second did.
  ASSERT_EQ(log[0]["attempt_log"].size(), 1u) << log;
  EXPECT_EQ(log[0]["attempt_log"][0]["attempt"], 2);
}

TEST_F(WebhookE2E, FailedDeliveriesAreRetriedWithBackoffAndThenStop) {
  start_server({"--webhook_max_attempts=3"});
  Login owner = account("owner@example.com", "Acme");
  auto [hook, secret] = create_webhook(owner, {"rental.active"});
  receiver_.answer(500);
  auto ping = post("/v1/webhooks/" + hook + "/test", json::object(), session(owner));
  ASSERT_EQ(ping.status, 202) << ping.body;
  ASSERT_TRUE(wait_for([&] { return deliveries(owner, hook)[0]["state"] == "failed"; },
                       std::chrono::seconds(20)));
  auto got = receiver_.received();
  ASSERT_EQ(got.size(), 3u);
  for (std::size_t i = 0; i < got.size(); ++i) {
    expect_signed(got[i], secret);
    EXPECT_EQ(got[i].header("x-webhook-attempt"), std::to_string(i + 1));
    EXPECT_EQ(got[i].json_body()["id"], ping.json()["event_id"]);
  }
  // Waits of at least half of 200 ms, then of 400 ms.
  EXPECT_GE(got[1].at - got[0].at, std::chrono::milliseconds(100));
  EXPECT_GE(got[2].at - got[1].at, std::chrono::milliseconds(200));
  auto log = deliveries(owner, hook);
  ASSERT_EQ(log.size(), 1u);
  EXPECT_EQ(log[0]["attempts"], 3);
  EXPECT_EQ(log[0]["last_status"], 500);
  EXPECT_EQ(log[0]["last_error"], "HTTP 500");
  EXPECT_EQ(log[0]["next_attempt_at"], nullptr);
  ASSERT_EQ(log[0]["attempt_log"].size(), 3u);
  // Given up: nothing more comes.
  std::this_thread::sleep_for(std::chrono::seconds(2));
  EXPECT_EQ(receiver_.received().size(), 3u);
}

TEST_F(WebhookE2E, ALowBalanceIsReportedOncePerCrossing) {
  // Orgs start with kAmpleFunds: the first hold takes the balance below this.
  start_server({"--webhook_low_balance=" + std::to_string(kAmpleFunds - 1)});
  seed_fleet({1});
  add_node("gpu-1");
  Login owner = account("owner@example.com", "Acme");
  auto [hook, secret] = create_webhook(owner, {"billing.low_balance"});
  ASSERT_EQ(book_now(owner, 1).status, 201);
  ASSERT_TRUE(receiver_.wait_for_count(1));
  ASSERT_EQ(book_now(owner, 1).status, 201);
  std::this_thread::sleep_for(std::chrono::seconds(1));
  auto got = receiver_.of_type("billing.low_balance");
  ASSERT_EQ(got.size(), 1u);
  expect_signed(got[0], secret);
  json data = got[0].json_body()["data"];
  EXPECT_EQ(data["org_id"], owner.org_id);
  EXPECT_LT(data["available"]["amount_minor"].get<long long>(), kAmpleFunds - 1);
  EXPECT_EQ(data["threshold"]["amount_minor"], kAmpleFunds - 1);
}

TEST_F(WebhookE2E, BadInputIsRefusedNamingTheFieldAndAnotherOrgsWebhookIs404) {
  start_server();
  Login owner = account("owner@example.com", "Acme");
  Login other = account("other@example.com", "Other");
  auto field_of = [&](const json& body) {
    auto r = post("/v1/webhooks", body, session(owner));
    EXPECT_EQ(r.status, 400) << body << " " << r.body;
    return r.json()["error"]["details"].value("field", "");
  };
  EXPECT_EQ(field_of({{"url", "ftp://example.com/"}, {"events", {"rental.active"}}}), "url");
  EXPECT_EQ(field_of({{"url", "https://u:p@example.com/"}, {"events", {"rental.active"}}}), "url");
  EXPECT_EQ(field_of({{"url", 7}, {"events", {"rental.active"}}}), "url");
  EXPECT_EQ(field_of({{"events", {"rental.active"}}}), "url");
  EXPECT_EQ(field_of({{"url", "https://example.com/"}}), "events");
  EXPECT_EQ(field_of({{"url", "https://example.com/"}, {"events", json::array()}}), "events");
  EXPECT_EQ(field_of({{"url", "https://example.com/"}, {"events", "rental.active"}}), "events");
  EXPECT_EQ(field_of({{"url", "https://example.com/"}, {"events", {"rental.exploded"}}}),
            "events[0]");
  EXPECT_EQ(field_of({{"url", "https://example.com/"}, {"events", {"rental.active", 1}}}),
            "events[1]");
  EXPECT_EQ(
      field_of({{"url", "https://example.com/"}, {"events", {"rental.active", "rental.active"}}}),
      "events[1]");
  EXPECT_EQ(field_of({{"url", "https://example.com/"}, {"events", {"webhook.ping"}}}), "events[0]");
  EXPECT_EQ(field_of({{"url", "https://example.com/"}, {"events", {"rental.active"}}, {"x", 1}}),
            "x");

  auto [hook, secret] = create_webhook(owner, {"rental.active"});
  for (const auto& [method, path] : std::vector<std::pair<std::string, std::string>>{
           {"GET", "/v1/webhooks/" + hook},
           {"DELETE", "/v1/webhooks/" + hook},
           {"GET", "/v1/webhooks/" + hook + "/deliveries"},
           {"POST", "/v1/webhooks/" + hook + "/test"},
           {"GET", "/v1/webhooks/whk_nope"}}) {
    SCOPED_TRACE(method + " " + path);
    auto r = send(method, path, method == "POST" ? "{}" : "", session(other));
    EXPECT_EQ(r.status, 404) << r.body;
    EXPECT_EQ(r.json()["error"]["code"], "not_found");
  }
  auto listed = get("/v1/webhooks", session(other));
  ASSERT_EQ(listed.status, 200);
  EXPECT_TRUE(listed.json()["items"].empty());
  // A viewer of the owner's org may not manage webhooks.
  Login viewer = member_of(owner, "viewer", "viewer@example.com");
  EXPECT_EQ(get("/v1/webhooks", session(viewer)).status, 403);
  // The owner's webhook is still there; deleting it takes it away.
  EXPECT_EQ(get("/v1/webhooks/" + hook, session(owner)).status, 200);
  EXPECT_EQ(send("DELETE", "/v1/webhooks/" + hook, "", session(owner)).status, 204);
  EXPECT_EQ(get("/v1/webhooks/" + hook, session(owner)).status, 404);
}

// Without webhook_allow_internal, a webhook cannot point into the platform's own network.
class WebhookInternalE2E : public ApiTest {};

TEST_F(WebhookInternalE2E, InternalAddressesAreRefusedUnlessAllowed) {
  Login owner = account("owner@example.com", "Acme");
  for (const char* url : {"http://127.0.0.1:8080/", "http://169.254.169.254/latest/meta-data/",
                          "http://[::1]/", "http://10.0.0.5/", "http://192.168.1.1/",
                          "http://localhost:9000/", "http://[::ffff:127.0.0.1]/"}) {
    SCOPED_TRACE(url);
    auto r = post("/v1/webhooks", {{"url", url}, {"events", {"rental.active"}}}, session(owner));
    EXPECT_EQ(r.status, 400) << r.body;
    EXPECT_EQ(r.json()["error"]["details"]["field"], "url");
  }
  auto ok =
      post("/v1/webhooks", {{"url", "https://hooks.example.com/in"}, {"events", {"rental.ended"}}},
           session(owner));
  EXPECT_EQ(ok.status, 201) << ok.body;
}

}  // namespace gpurent::testing::webhook_e2e
