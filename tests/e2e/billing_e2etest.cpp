// Billing end to end: a booking needs the money (402 with what is required and available),
// an admin's credit pays for it, the days are captured as the rental runs and the unstarted
// ones released when it ends early, the ledger and the invoice show it; the payment webhook
// refuses forged, stale and replayed calls and applies a payment once; concurrent bookings on
// two replicas never spend more than the balance; spend limits give 422.
#include "billing/payment_signature.h"
#include "core/subprocess.h"
#include "tests/support/paths.h"
#include "tests/support/rental_fleet_fixture.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <latch>
#include <thread>

namespace gpurent::testing::billing_e2e {

using nlohmann::json;

constexpr const char* kWebhookSecret = "whsec_test_0123456789abcdef";

json rub(long long minor) {
  return {{"amount_minor", minor}, {"currency", "RUB"}};
}

class BillingE2E : public RentalFleetTest {
 protected:
  void SetUp() override {
    fund_new_orgs_minor_ = 0;  // every org here starts with nothing
    server_ = start_server();
    seed_fleet({1, 2, 4, 8});
    node_id_ = add_node("gpu-1");
  }
  std::unique_ptr<ServerProcess> start_server() {
    return std::make_unique<ServerProcess>(
        ServerOptions{.database_url = db_.url(),
                      .flags = {"--rate_limit_per_credential=0", "--rate_limit_per_ip=0",
                                "--lifecycle_interval=60s",
                                std::string("--payment_webhook_secret=") + kWebhookSecret}});
  }
  json booking(int gpus, int days) {
    return {{"gpu_model", kModel},
            {"gpu_count", gpus},
            {"start", "now"},
            {"days", days},
            {"image_id", image_id_}};
  }
  json balance(const Login& owner) {
    auto r = get("/v1/billing/balance", session(owner));
    EXPECT_EQ(r.status, 200) << r.body;
    return r.json();
  }
  HttpResult credit(const std::string& org_id, long long minor) {
    return post("/v1/admin/orgs/" + org_id + "/credit",
                {{"amount", rub(minor)}, {"reason", "bank transfer 42"}}, session(admin_));
  }
  HttpResult webhook(const std::string& body, const std::string& signature) {
    Headers h{{"X-Signature", signature}};
    return send("POST", "/v1/billing/payments/webhook", body, h);
  }
  static std::int64_t unix_now() {
    return std::chrono::duration_cast<std::chrono::seconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  }
  std::string state_of(const Login& owner, const std::string& id) {
    return get("/v1/rentals/" + id, session(owner)).json().value("state", "");
  }

  std::string node_id_;
};

TEST_F(BillingE2E, ARentalIsPaidDayByDayFromTheBalanceAndItsUnusedDaysComeBack) {
  Login owner = account("owner@example.com", "Acme");
  auto refused = post("/v1/rentals", booking(4, 3), session(owner));
  ASSERT_EQ(refused.status, 402) << refused.body;
  EXPECT_EQ(refused.json()["error"]["code"], "insufficient_funds");
  EXPECT_EQ(refused.json()["error"]["details"]["required"], rub(1'200'000));
  EXPECT_EQ(refused.json()["error"]["details"]["available"], rub(0));
  EXPECT_EQ(get("/v1/rentals", session(owner)).json()["items"].size(), 0u);

  auto credited = credit(owner.org_id, 1'500'000);
  ASSERT_EQ(credited.status, 201) << credited.body;
  EXPECT_EQ(credited.json()["available"], rub(1'500'000));
  auto booked = post("/v1/rentals", booking(4, 3), session(owner));
  ASSERT_EQ(booked.status, 201) << booked.body;
  std::string id = booked.json()["id"];
  json b = balance(owner);
  EXPECT_EQ(b["balance"], rub(1'500'000));
  EXPECT_EQ(b["held"], rub(1'200'000));
  EXPECT_EQ(b["available"], rub(300'000));

  // Provisioned and active: the first day is captured.
  advance(1);
  run_lifecycle();
  complete_queued(id);
  advance(61);
  run_lifecycle();
  ASSERT_EQ(state_of(owner, id), "active");
  b = balance(owner);
  EXPECT_EQ(b["balance"], rub(1'100'000));
  EXPECT_EQ(b["held"], rub(800'000));
  // The second day is captured when it starts, once, however often the worker runs.
  advance(24 * 3600);
  owner = login("owner@example.com");
  run_lifecycle();
  run_lifecycle();
  EXPECT_EQ(balance(owner)["balance"], rub(700'000));
  // Ended early: the third day, not started, comes back.
  auto ended = post("/v1/rentals/" + id + "/terminate", json::object(), session(owner));
  ASSERT_EQ(ended.status, 200) << ended.body;
  b = balance(owner);
  EXPECT_EQ(b["balance"], rub(700'000));
  EXPECT_EQ(b["held"], rub(0));
  EXPECT_EQ(b["available"], rub(700'000));

  auto history = walk("/v1/billing/transactions", session(owner), 2);
  std::vector<std::string> kinds;
  for (const auto& t : history) kinds.push_back(t["kind"]);
  EXPECT_EQ(kinds, (std::vector<std::string>{"release", "capture", "capture", "hold", "top_up"}));
  EXPECT_EQ(history[0]["rental_id"], id);
  EXPECT_EQ(history[1]["amount"], rub(-400'000));
  EXPECT_EQ(history[4]["amount"], rub(1'500'000));

  // This month's draft invoice: one line, two days at the day's price, VAT within it.
  auto invoices = get("/v1/invoices", session(owner));
  ASSERT_EQ(invoices.status, 200) << invoices.body;
  json list = invoices.json()["items"];
  ASSERT_GE(list.size(), 1u);
  long long days = 0, total = 0;
  for (const auto& item : list) {
    auto invoice = get("/v1/invoices/" + item["id"].get<std::string>(), session(owner));
    ASSERT_EQ(invoice.status, 200) << invoice.body;
    json doc = invoice.json();
    EXPECT_EQ(doc["status"], "draft");
    for (const auto& line : doc["lines"]) days += line["days"].get<long long>();
    total += doc["total"]["amount_minor"].get<long long>();
    auto csv = get("/v1/invoices/" + item["id"].get<std::string>() + "?format=csv", session(owner));
    ASSERT_EQ(csv.status, 200) << csv.body;
    EXPECT_NE(csv.header("content-type").find("text/csv"), std::string::npos);
    EXPECT_NE(csv.body.find(id), std::string::npos);
  }
  EXPECT_EQ(days, 2);
  EXPECT_EQ(total, 800'000);

  // After the month: the invoice is issued with its number, and a correction is a credit
  // note of its own, never an edit; its amount comes back to the balance.
  advance(32 * 24 * 3600);
  owner = login("owner@example.com");
  admin_ = login("root@example.com");
  run_lifecycle();
  std::string invoice_id = list[0]["id"];
  json issued = get("/v1/invoices/" + invoice_id, session(owner)).json();
  ASSERT_EQ(issued["status"], "issued") << issued;
  EXPECT_TRUE(issued["number"].is_string());
  auto note =
      post("/v1/admin/invoices/" + invoice_id + "/credit-notes",
           {{"amount", rub(100'000)}, {"reason", "provisioning was slow"}}, session(admin_));
  ASSERT_EQ(note.status, 201) << note.body;
  EXPECT_EQ(note.json()["kind"], "credit_note");
  EXPECT_EQ(note.json()["corrects_invoice_id"], invoice_id);
  EXPECT_EQ(note.json()["total"], rub(-100'000));
  EXPECT_EQ(note.json()["status"], "issued");
  EXPECT_NE(note.json()["number"], issued["number"]);
  EXPECT_EQ(balance(owner)["available"], rub(800'000));
  EXPECT_EQ(get("/v1/invoices/" + invoice_id, session(owner)).json(), issued) << "unchanged";
  auto too_much =
      post("/v1/admin/invoices/" + invoice_id + "/credit-notes",
           {{"amount", rub(700'001)}, {"reason", "more than is left"}}, session(admin_));
  EXPECT_EQ(too_much.status, 400) << too_much.body;
  EXPECT_EQ(post("/v1/admin/invoices/" + note.json()["id"].get<std::string>() + "/credit-notes",
                 {{"amount", rub(1)}, {"reason", "a note of a note"}}, session(admin_))
                .status,
            409);
  EXPECT_EQ(
      post("/v1/invoices/" + invoice_id + "/credit-notes", json::object(), session(owner)).status,
      404);
  bool listed = false;
  for (const auto& item : walk("/v1/invoices", session(owner), 10)) {
    listed |= item["id"] == note.json()["id"];
  }
  EXPECT_TRUE(listed);

  // Another org sees none of it, and its balance is its own.
  Login other = account("other@example.com", "Other");
  EXPECT_EQ(balance(other)["balance"], rub(0));
  EXPECT_EQ(get("/v1/billing/transactions", session(other)).json()["items"].size(), 0u);
  EXPECT_EQ(get("/v1/invoices", session(other)).json()["items"].size(), 0u);
  EXPECT_EQ(get("/v1/invoices/" + list[0]["id"].get<std::string>(), session(other)).status, 404);
}

TEST_F(BillingE2E, TheWebhookRefusesForgedStaleAndReplayedCallsAndAppliesAPaymentOnce) {
  Login owner = account("owner@example.com", "Acme");
  std::string body = json{
      {"id", "pay_0001"},
      {"type", "payment.succeeded"},
      {"org_id", owner.org_id},
      {"amount",
       rub(250'000)}}.dump();
  auto now = unix_now();
  std::string signature = billing::sign_payment(body, kWebhookSecret, now);
  // Forged: another secret, a changed body, a made-up MAC, no signature at all.
  EXPECT_EQ(webhook(body, billing::sign_payment(body, "not-the-secret-at-all", now)).status, 401);
  std::string richer = body;
  richer.replace(richer.find("250000"), 6, "950000");
  EXPECT_EQ(webhook(richer, signature).status, 401);
  EXPECT_EQ(webhook(body, "t=" + std::to_string(now) + ",v1=" + std::string(64, 'a')).status, 401);
  EXPECT_EQ(webhook(body, "").status, 401);
  // Stale: signed ten minutes ago (a capture replayed later), or in the future.
  EXPECT_EQ(webhook(body, billing::sign_payment(body, kWebhookSecret, now - 600)).status, 401);
  EXPECT_EQ(webhook(body, billing::sign_payment(body, kWebhookSecret, now + 600)).status, 401);
  EXPECT_EQ(balance(owner)["balance"], rub(0));

  auto first = webhook(body, signature);
  ASSERT_EQ(first.status, 200) << first.body;
  EXPECT_EQ(first.json()["duplicate"], false);
  // Delivered again, as providers do until they hear 2xx: accepted, applied once.
  auto again = webhook(body, billing::sign_payment(body, kWebhookSecret, unix_now()));
  ASSERT_EQ(again.status, 200) << again.body;
  EXPECT_EQ(again.json()["duplicate"], true);
  EXPECT_EQ(balance(owner)["balance"], rub(250'000));
  // A signed body that is not a payment is a 400 naming the field.
  std::string odd = json{
      {"id", "pay_0002"},
      {"type", "payment.succeeded"},
      {"org_id", owner.org_id},
      {"amount",
       rub(-5)}}.dump();
  auto bad = webhook(odd, billing::sign_payment(odd, kWebhookSecret, unix_now()));
  EXPECT_EQ(bad.status, 400) << bad.body;
  EXPECT_EQ(balance(owner)["balance"], rub(250'000));
}

TEST_F(BillingE2E, ConcurrentBookingsOnTwoReplicasNeverSpendMoreThanTheBalance) {
  add_node("gpu-2");
  auto replica = start_server();
  Login owner = account("owner@example.com", "Acme");
  ASSERT_EQ(credit(owner.org_id, 1'000'000).status, 201);
  // Each replica learns that gpu-2 takes rentals from PostgreSQL's announcement, which a
  // loaded machine may deliver after the clients start: until both see two whole nodes, a
  // replica may find too few GPUs and answer 409.
  for (ServerProcess* s : {server_.get(), replica.get()}) {
    EXPECT_TRUE(wait_for([&] {
      auto r = http_request(s->port(), "GET",
                            "/v1/availability?gpu_model=H100-SXM5-80GB&gpu_count=8&days=3", "",
                            session(owner));
      return r.status == 200 && r.json()["days"][2]["available"] == 2;
    })) << "a replica never saw gpu-2";
  }
  // Sixteen GPUs free, money for ten one-GPU days: exactly ten bookings get through.
  constexpr int kClients = 16;
  std::latch go(kClients);
  std::atomic<int> booked{0}, short_of_money{0}, other{0};
  std::vector<std::thread> clients;
  for (int i = 0; i < kClients; ++i) {
    clients.emplace_back([&, i] {
      int port = i % 2 == 0 ? server_->port() : replica->port();
      std::string body = booking(1, 1).dump();
      Headers h = session(owner);
      h.emplace("Content-Type", "application/json");
      go.arrive_and_wait();
      auto r = http_request(port, "POST", "/v1/rentals", body, h);
      if (r.status == 201) {
        ++booked;
      } else if (r.status == 402) {
        ++short_of_money;
      } else {
        ++other;
        ADD_FAILURE() << r.status << " " << r.body;
      }
    });
  }
  for (auto& t : clients) t.join();
  EXPECT_EQ(booked.load(), 10);
  EXPECT_EQ(short_of_money.load(), 6);
  json b = balance(owner);
  EXPECT_EQ(b["available"], rub(0));
  EXPECT_EQ(b["held"], rub(1'000'000));
}

TEST_F(BillingE2E, SpendLimitsAndExtensionsAreHeldToTheMoney) {
  Login owner = account("owner@example.com", "Acme");
  ASSERT_EQ(credit(owner.org_id, 10'000'000).status, 201);
  std::string open_token = token(session(owner), {"rentals:read", "rentals:write"}).second;
  ASSERT_FALSE(open_token.empty());
  auto limited = post("/v1/api-tokens",
                      {{"name", "ci"},
                       {"scopes", {"rentals:read", "rentals:write"}},
                       {"spend_limit", rub(250'000)}},
                      session(owner));
  ASSERT_EQ(limited.status, 201) << limited.body;
  std::string ci = limited.json()["token"];
  ASSERT_EQ(post("/v1/rentals", booking(1, 2), bearer(ci)).status, 201);
  auto over = post("/v1/rentals", booking(1, 1), bearer(ci));
  ASSERT_EQ(over.status, 422) << over.body;
  EXPECT_EQ(over.json()["error"]["code"], "quota_exceeded");
  // The org's own limit, set by an admin.
  auto limit =
      patch("/v1/admin/orgs/" + owner.org_id, {{"spend_limit", rub(500'000)}}, session(admin_));
  ASSERT_EQ(limit.status, 200) << limit.body;
  auto booked = post("/v1/rentals", booking(1, 3), bearer(open_token));
  ASSERT_EQ(booked.status, 201) << booked.body;
  auto past = post("/v1/rentals", booking(1, 1), bearer(open_token));
  EXPECT_EQ(past.status, 422) << past.body;
  // An extension needs the money too: none left under the limit.
  std::string id = booked.json()["id"];
  auto extended = post("/v1/rentals/" + id + "/extend", {{"days", 1}}, bearer(open_token));
  EXPECT_EQ(extended.status, 422) << extended.body;
  ASSERT_EQ(
      patch("/v1/admin/orgs/" + owner.org_id, {{"spend_limit", nullptr}}, session(admin_)).status,
      200);
  extended = post("/v1/rentals/" + id + "/extend", {{"days", 1}}, bearer(open_token));
  ASSERT_EQ(extended.status, 200) << extended.body;
  EXPECT_EQ(balance(owner)["held"], rub(200'000 + 400'000));
}

// A billing time zone PostgreSQL does not know stops the start with one line naming it,
// rather than failing every capture later.
TEST_F(BillingE2E, AnUnknownBillingTimeZoneStopsTheStart) {
  auto r = run_subprocess({"timeout", "60", gpurentd_path(), "serve", "--database_url=" + db_.url(),
                           "--listen=127.0.0.1:0", "--agent_listen=off",
                           "--billing_time_zone=Mars/Olympus_Mons"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.exit_code, 124) << "it served instead";
  EXPECT_NE(r.output.find("billing_time_zone"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("Mars/Olympus_Mons"), std::string::npos) << r.output;
}

}  // namespace gpurent::testing::billing_e2e
