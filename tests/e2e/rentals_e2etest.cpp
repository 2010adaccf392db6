// Rentals end to end: booking through the API places GPUs on a real node, never twice, with
// many clients racing on two replicas; refusals say when capacity comes back; quotes book
// nothing; termination cancels before the start and releases after it; another org's
// rental is 404.
#include "core/clock.h"
#include "tests/support/rental_fleet_fixture.h"
#include "tests/support/wait_for.h"

#include <gtest/gtest.h>

#include <pqxx/pqxx>

#include <atomic>
#include <latch>
#include <mutex>
#include <set>
#include <thread>

namespace gpurent::testing::rentals_e2e {

using nlohmann::json;

class RentalsE2E : public RentalFleetTest {
 protected:
  void SetUp() override {
    ApiTest::SetUp();
    seed_fleet({1, 2, 4, 8});
  }

  json booking(int gpus, const std::string& start = "now", int days = 1) {
    return {{"gpu_model", "H100-SXM5-80GB"},
            {"gpu_count", gpus},
            {"start", start},
            {"days", days},
            {"image_id", image_id_}};
  }

  long long count(const std::string& query) {
    pqxx::connection c(db_.url());
    pqxx::nontransaction tx(c);
    return tx.exec1(query)[0].as<long long>();
  }
};

TEST_F(RentalsE2E, ABookingGetsNvlinkedGpusOnTheNodeAndShowsInTheList) {
  std::string node = add_node("gpu-1");
  Login owner = account("owner@example.com", "Acme");
  auto r = post("/v1/rentals", booking(4, "now", 2), session(owner));
  ASSERT_EQ(r.status, 201) << r.body;
  json rental = r.json();
  EXPECT_EQ(rental["state"], "scheduled");
  EXPECT_EQ(rental["node_id"], node);
  EXPECT_EQ(rental["gpu_indices"].size(), 4u);
  EXPECT_EQ(rental["days"], 2);
  EXPECT_EQ(rental["price"]["per_day"], json({{"amount_minor", 400000}, {"currency", "RUB"}}));
  EXPECT_EQ(rental["price"]["total"], json({{"amount_minor", 800000}, {"currency", "RUB"}}));
  std::string id = rental["id"];
  EXPECT_EQ(count("SELECT count(*) FROM allocations WHERE rental_id = '" + id + "'"), 4);

  auto shown = get("/v1/rentals/" + id, session(owner));
  ASSERT_EQ(shown.status, 200) << shown.body;
  EXPECT_EQ(shown.json(), rental);
  auto listed = get("/v1/rentals?state=scheduled", session(owner));
  ASSERT_EQ(listed.status, 200) << listed.body;
  ASSERT_EQ(listed.json()["items"].size(), 1u);
  EXPECT_EQ(listed.json()["items"][0]["id"], id);
  auto events = get("/v1/rentals/" + id + "/events", session(owner));
  ASSERT_EQ(events.status, 200) << events.body;
  ASSERT_EQ(events.json()["items"].size(), 1u);
  EXPECT_EQ(events.json()["items"][0]["to_state"], "scheduled");

  // Platform admins see it on the node.
  auto node_view = get("/v1/admin/nodes/" + node, session(admin_));
  ASSERT_EQ(node_view.status, 200) << node_view.body;
  ASSERT_EQ(node_view.json()["rentals"].size(), 1u) << node_view.body;
  EXPECT_EQ(node_view.json()["rentals"][0]["id"], id);
  EXPECT_EQ(node_view.json()["rentals"][0]["org_id"], owner.org_id);

  // Another org sees nothing of it.
  Login other = account("other@example.com", "Other");
  EXPECT_EQ(get("/v1/rentals/" + id, session(other)).status, 404);
  EXPECT_EQ(get("/v1/rentals/" + id + "/events", session(other)).status, 404);
  EXPECT_EQ(post("/v1/rentals/" + id + "/terminate", json::object(), session(other)).status, 404);
  EXPECT_TRUE(get("/v1/rentals", session(other)).json()["items"].empty());
}

TEST_F(RentalsE2E, AFullNodeRefusesWithTheEarliestStartAndSmallerFits) {
  add_node("gpu-1");
  Login owner = account("owner@example.com", "Acme");
  // Six of the eight GPUs for two days (six is not a shape on sale: four and two).
  ASSERT_EQ(post("/v1/rentals", booking(4, "now", 2), session(owner)).status, 201);
  ASSERT_EQ(post("/v1/rentals", booking(2, "now", 2), session(owner)).status, 201);
  auto refused = post("/v1/rentals", booking(4, "now", 1), session(owner));
  ASSERT_EQ(refused.status, 409) << refused.body;
  json error = refused.json()["error"];
  EXPECT_EQ(error["code"], "insufficient_capacity");
  EXPECT_FALSE(refused.header("retry-after").empty());
  // The six GPUs come free after two days and the cleaning window: the first whole day
  // after that is the earliest start, and two GPUs fit at once.
  EXPECT_TRUE(error["details"]["earliest_start"].is_string()) << error;
  bool two_fit = false;
  for (const auto& a : error["details"]["alternatives"]) two_fit |= a["gpu_count"] == 2;
  EXPECT_TRUE(two_fit) << error;
  EXPECT_EQ(count("SELECT count(*) FROM rentals"), 2) << "a refusal writes nothing";
  EXPECT_EQ(count("SELECT count(*) FROM allocations"), 6);
}

TEST_F(RentalsE2E, AQuoteBooksNothing) {
  std::string node = add_node("gpu-1");
  Login owner = account("owner@example.com", "Acme");
  auto q = post("/v1/quotes", booking(8, "now", 3), session(owner));
  ASSERT_EQ(q.status, 200) << q.body;
  EXPECT_EQ(q.json()["available"], true);
  EXPECT_EQ(q.json()["price"]["total"], json({{"amount_minor", 2400000}, {"currency", "RUB"}}));
  EXPECT_EQ(q.json()["node_preview"]["node_id"], node);
  EXPECT_EQ(count("SELECT count(*) FROM rentals"), 0);
  EXPECT_EQ(count("SELECT count(*) FROM allocations"), 0);
}

TEST_F(RentalsE2E, BadRequestsAreRefusedWithTheField) {
  add_node("gpu-1");
  Login owner = account("owner@example.com", "Acme");
  auto field_of = [&](json body) {
    auto r = post("/v1/rentals", body, session(owner));
    EXPECT_EQ(r.status, 400) << r.body;
    return r.json()["error"]["details"].value("field", "");
  };
  EXPECT_EQ(field_of(booking(0)), "gpu_count");
  EXPECT_EQ(field_of(booking(3)), "gpu_count") << "no price for three GPUs";
  EXPECT_EQ(field_of(booking(1, "yesterday")), "start");
  EXPECT_EQ(field_of(booking(1, "2020-01-01T00:00:00Z")), "start");
  EXPECT_EQ(field_of(booking(1, "2026-02-31")), "start");
  json unknown = booking(1);
  unknown["gpu_model"] = "H100-PCIe-999GB";
  EXPECT_EQ(field_of(unknown), "gpu_model");
  json foreign_key = booking(1);
  foreign_key["ssh_key_ids"] = {"key_0000000000000000000000"};
  EXPECT_EQ(field_of(foreign_key), "ssh_key_ids");
  json extra = booking(1);
  extra["colour"] = "red";
  EXPECT_EQ(field_of(extra), "colour");
  EXPECT_EQ(count("SELECT count(*) FROM rentals"), 0);
}

TEST_F(RentalsE2E, TerminatingCancelsBeforeTheStartAndFreesTheGpus) {
  add_node("gpu-1");
  Login owner = account("owner@example.com", "Acme");
  auto tomorrow = post("/v1/rentals", booking(8, "2099-01-01"), session(owner));
  // A date that far ahead is past the booking horizon.
  EXPECT_EQ(tomorrow.status, 400) << tomorrow.body;
  auto booked = post("/v1/rentals", booking(8, "now", 1), session(owner));
  ASSERT_EQ(booked.status, 201) << booked.body;
  std::string id = booked.json()["id"];
  auto cancelled = post("/v1/rentals/" + id + "/terminate", json::object(), session(owner));
  ASSERT_EQ(cancelled.status, 200) << cancelled.body;
  EXPECT_EQ(cancelled.json()["state"], "cancelled");
  EXPECT_EQ(count("SELECT count(*) FROM allocations"), 0);
  auto again = post("/v1/rentals/" + id + "/terminate", json::object(), session(owner));
  EXPECT_EQ(again.status, 409) << again.body;
  EXPECT_EQ(again.json()["error"]["code"], "invalid_state");
  // The whole node is free again at once.
  EXPECT_EQ(post("/v1/rentals", booking(8), session(owner)).status, 201);
}

TEST_F(RentalsE2E, RetriesWithOneIdempotencyKeyBookOnce) {
  add_node("gpu-1");
  Login owner = account("owner@example.com", "Acme");
  Headers h = session(owner);
  h["Idempotency-Key"] = "ci-run-42";
  auto first = post("/v1/rentals", booking(2), h);
  auto second = post("/v1/rentals", booking(2), h);
  ASSERT_EQ(first.status, 201) << first.body;
  EXPECT_EQ(second.status, 201) << second.body;
  EXPECT_EQ(second.json()["id"], first.json()["id"]);
  EXPECT_EQ(count("SELECT count(*) FROM rentals"), 1);
}

TEST_F(RentalsE2E, ExtendingKeepsTheGpusOrSaysTheyAreBookedAfter) {
  add_node("gpu-1");
  Login owner = account("owner@example.com", "Acme");
  auto first = post("/v1/rentals", booking(8, "now", 1), session(owner));
  ASSERT_EQ(first.status, 201) << first.body;
  std::string id = first.json()["id"];
  auto longer = post("/v1/rentals/" + id + "/extend", {{"days", 2}}, session(owner));
  ASSERT_EQ(longer.status, 200) << longer.body;
  EXPECT_EQ(longer.json()["days"], 3);
  EXPECT_EQ(longer.json()["gpu_indices"], first.json()["gpu_indices"]);
  EXPECT_EQ(longer.json()["price"]["total"],
            json({{"amount_minor", 2400000}, {"currency", "RUB"}}));
  // Someone books the whole node from the day after the extended end (past the cleaning
  // window): one more day no longer fits on the same GPUs.
  auto next = post("/v1/rentals", booking(8, "now", 1), session(owner));
  EXPECT_EQ(next.status, 409) << "the node is taken for three days";
  std::string end = longer.json()["period"]["end"];
  auto later = post("/v1/quotes", booking(8, end, 1), session(owner));
  ASSERT_EQ(later.status, 200) << later.body;
  EXPECT_EQ(later.json()["available"], false) << "the cleaning window follows the end";
  auto after = post("/v1/rentals", booking(8, later.json()["earliest_start"], 1), session(owner));
  ASSERT_EQ(after.status, 201) << after.body;
  auto refused = post("/v1/rentals/" + id + "/extend", {{"days", 1}}, session(owner));
  ASSERT_EQ(refused.status, 409) << refused.body;
  EXPECT_EQ(refused.json()["error"]["code"], "insufficient_capacity");
  EXPECT_EQ(get("/v1/rentals/" + id, session(owner)).json()["days"], 3) << "nothing changed";
  auto cancelled = post("/v1/rentals/" + id + "/terminate", json::object(), session(owner));
  ASSERT_EQ(cancelled.status, 200);
  auto too_late = post("/v1/rentals/" + id + "/extend", {{"days", 1}}, session(owner));
  EXPECT_EQ(too_late.status, 409);
  EXPECT_EQ(too_late.json()["error"]["code"], "invalid_state");
}

TEST_F(RentalsE2E, WaitingAnswersWhenTheStateIsReachedOrTheTimeoutPasses) {
  add_node("gpu-1");
  Login owner = account("owner@example.com", "Acme");
  // From tomorrow, so the lifecycle worker cannot start it while the test waits.
  auto tomorrow = format_rfc3339(std::chrono::time_point_cast<std::chrono::microseconds>(
      std::chrono::system_clock::now() + std::chrono::hours(24)));
  auto booked = post("/v1/rentals", booking(1, tomorrow), session(owner));
  ASSERT_EQ(booked.status, 201) << booked.body;
  std::string id = booked.json()["id"];
  // Already scheduled: at once.
  auto now = get("/v1/rentals/" + id + "/wait?state=scheduled&timeout_s=30", session(owner));
  ASSERT_EQ(now.status, 200) << now.body;
  EXPECT_EQ(now.json()["state"], "scheduled");
  // Not active within a second: the rental as it is, after the timeout.
  auto start = std::chrono::steady_clock::now();
  auto timed_out = get("/v1/rentals/" + id + "/wait?state=active&timeout_s=1", session(owner));
  auto waited = std::chrono::steady_clock::now() - start;
  ASSERT_EQ(timed_out.status, 200) << timed_out.body;
  EXPECT_EQ(timed_out.json()["state"], "scheduled");
  EXPECT_GE(waited, std::chrono::milliseconds(900));
  // A rental that can never become active answers at once.
  ASSERT_EQ(post("/v1/rentals/" + id + "/terminate", json::object(), session(owner)).status, 200);
  auto final_state = get("/v1/rentals/" + id + "/wait?state=active&timeout_s=300", session(owner));
  ASSERT_EQ(final_state.status, 200) << final_state.body;
  EXPECT_EQ(final_state.json()["state"], "cancelled");
  EXPECT_EQ(get("/v1/rentals/" + id + "/wait?timeout_s=301", session(owner)).status, 400);
  EXPECT_EQ(get("/v1/rentals/" + id + "/wait?state=asleep", session(owner)).status, 400);
}

TEST_F(RentalsE2E, PlatformAdminsSeeEveryOrgsRentals) {
  add_node("gpu-1");
  Login a = account("a@example.com", "A");
  Login b = account("b@example.com", "B");
  ASSERT_EQ(post("/v1/rentals", booking(1), session(a)).status, 201);
  ASSERT_EQ(post("/v1/rentals", booking(2), session(b)).status, 201);
  auto all = get("/v1/admin/rentals", session(admin_));
  ASSERT_EQ(all.status, 200) << all.body;
  EXPECT_EQ(all.json()["items"].size(), 2u);
  auto of_b = get("/v1/admin/rentals?org_id=" + b.org_id, session(admin_));
  ASSERT_EQ(of_b.status, 200) << of_b.body;
  ASSERT_EQ(of_b.json()["items"].size(), 1u);
  EXPECT_EQ(of_b.json()["items"][0]["gpu_count"], 2);
  EXPECT_EQ(get("/v1/admin/rentals", session(a)).status, 403);
}

TEST_F(RentalsE2E, OffersAndAvailabilityFollowTheBookings) {
  add_node("gpu-1");
  Login owner = account("owner@example.com", "Acme");
  auto offers = get("/v1/offers?gpu_model=H100-SXM5-80GB&gpu_count=8", session(owner));
  ASSERT_EQ(offers.status, 200) << offers.body;
  ASSERT_EQ(offers.json()["items"].size(), 1u) << offers.body;
  json offer = offers.json()["items"][0];
  EXPECT_EQ(offer["available_now"], true);
  EXPECT_EQ(offer["interconnect"], "nvswitch");
  EXPECT_EQ(offer["vram_total_gb"], 640);
  EXPECT_EQ(offer["site"], "Test DC");
  EXPECT_EQ(offer["price_per_day"], json({{"amount_minor", 800000}, {"currency", "RUB"}}));

  // Three dates from today's in UTC. The site keeps Moscow time, three hours ahead: from
  // 21:00 UTC its midnight of the second date has passed too, so only the third is ahead at
  // every hour of the day. That date: one whole node, two 4-GPU rentals.
  auto calendar =
      get("/v1/availability?gpu_model=H100-SXM5-80GB&gpu_count=4&days=3", session(owner));
  ASSERT_EQ(calendar.status, 200) << calendar.body;
  ASSERT_EQ(calendar.json()["days"].size(), 3u) << calendar.body;
  std::string day2 = calendar.json()["days"][2]["date"];
  EXPECT_EQ(calendar.json()["days"][2]["available"], 2) << calendar.body;

  // The whole node booked for that date: the shape is gone that day, and the offer's
  // earliest start moves past it when asked from then.
  auto booked = post("/v1/rentals", booking(8, day2, 1), session(owner));
  ASSERT_EQ(booked.status, 201) << booked.body;
  auto after = get("/v1/availability?gpu_model=H100-SXM5-80GB&gpu_count=4&days=3", session(owner));
  ASSERT_EQ(after.status, 200) << after.body;
  EXPECT_EQ(after.json()["days"][2]["available"], 0) << after.body;
  auto later = get("/v1/offers?gpu_model=H100-SXM5-80GB&gpu_count=8&start=" +
                       std::string(booked.json()["period"]["start"]),
                   session(owner));
  ASSERT_EQ(later.status, 200) << later.body;
  EXPECT_EQ(later.json()["items"][0]["available_now"], false) << later.body;
  EXPECT_TRUE(later.json()["items"][0]["earliest_start"].is_string());
  // A booking's date means the site's midnight: an offer's earliest_date is the first date the
  // calendar shows free for the same shape from its midnight (the site's today, its midnight
  // gone, counts what can start now: from_now).
  auto calendar8 =
      get("/v1/availability?gpu_model=H100-SXM5-80GB&gpu_count=8&days=10", session(owner)).json();
  std::string first_free;
  for (const auto& d : calendar8["days"]) {
    if (d["available"].get<int>() > 0 && !d["from_now"].get<bool>()) {
      first_free = d["date"];
      break;
    }
  }
  ASSERT_FALSE(first_free.empty()) << calendar8;
  auto offer8 = get("/v1/offers?gpu_model=H100-SXM5-80GB&gpu_count=8", session(owner)).json();
  EXPECT_EQ(offer8["items"][0]["earliest_date"], first_free) << offer8 << calendar8;
  // And a booking of that date is taken (its midnight has not passed at the site).
  EXPECT_EQ(post("/v1/quotes", booking(8, first_free, 1), session(owner)).status, 200);

  EXPECT_EQ(get("/v1/availability?gpu_count=4", session(owner)).status, 400);
  EXPECT_EQ(get("/v1/availability?gpu_model=H100-SXM5-80GB&from=2026-13-01", session(owner)).status,
            400);
  EXPECT_EQ(get("/v1/offers?gpu_count=0", session(owner)).status, 400);
  EXPECT_EQ(get("/v1/offers", {}).status, 401);
}

// Each replica serves calendars from memory; a booking on one drops the others' calendars
// through the database's announcement, so they show it a moment later.
TEST_F(RentalsE2E, ACalendarOnAnotherReplicaFollowsABooking) {
  add_node("gpu-1");
  ServerProcess other(
      ServerOptions{.database_url = db_.url(),
                    .flags = {"--rate_limit_per_credential=0", "--rate_limit_per_ip=0"}});
  Login owner = account("owner@example.com", "Acme");
  std::string calendar = "/v1/availability?gpu_model=H100-SXM5-80GB&gpu_count=8&days=3";
  auto on_other = [&] {
    auto r = http_request(other.port(), "GET", calendar, "", session(owner));
    EXPECT_EQ(r.status, 200) << r.body;
    return r.json()["days"];
  };
  json before = on_other();
  ASSERT_EQ(before.size(), 3u);
  ASSERT_EQ(before[2]["available"], 1) << before;
  EXPECT_EQ(on_other(), before) << "asked again: the same answer, from memory";
  std::string day = before[2]["date"];
  ASSERT_EQ(post("/v1/rentals", booking(8, day, 1), session(owner)).status, 201);
  EXPECT_TRUE(wait_for([&] { return on_other()[2]["available"] == 0; }))
      << "the other replica still shows the booked day free";
}

// The must-show race: two replicas on one database, 40 clients asking at once for more GPUs
// than exist. The database's exclusion constraint is the last word: accepted rentals never
// exceed the GPUs, no two allocations of a GPU overlap, every 201 has its rows and every
// refusal has none.
TEST_F(RentalsE2E, ManyClientsOnTwoReplicasNeverDoubleBook) {
  add_node("gpu-1");
  add_node("gpu-2");  // 16 GPUs in all
  auto other = std::make_unique<ServerProcess>(
      ServerOptions{.database_url = db_.url(),
                    .flags = {"--rate_limit_per_credential=0", "--rate_limit_per_ip=0"}});
  Login owner = account("owner@example.com", "Acme");
  auto token =
      post("/v1/api-tokens", {{"name", "ci"}, {"scopes", {"rentals:read", "rentals:write"}}},
           session(owner));
  ASSERT_EQ(token.status, 201) << token.body;
  Headers h = bearer(token.json()["token"]);
  h["Content-Type"] = "application/json";

  constexpr int kClients = 40;  // asking for 2 GPUs each: 80 GPUs wanted, 16 exist
  std::latch go(kClients);
  std::mutex mutex;
  std::set<std::string> accepted;
  std::map<int, int> statuses;
  std::vector<std::thread> clients;
  for (int i = 0; i < kClients; ++i) {
    clients.emplace_back([&, i] {
      int target = i % 2 ? other->port() : port();
      std::string body = booking(2).dump();
      go.arrive_and_wait();
      auto r = http_request(target, "POST", "/v1/rentals", body, h);
      std::lock_guard lock(mutex);
      ++statuses[r.status];
      if (r.status == 201) accepted.insert(r.json()["id"].get<std::string>());
    });
  }
  for (auto& t : clients) t.join();
  EXPECT_EQ(statuses[201], 8) << "16 GPUs hold eight 2-GPU rentals at once";
  EXPECT_EQ(statuses[409], kClients - 8);
  EXPECT_EQ(statuses[201] + statuses[409], kClients) << "no other answer";
  EXPECT_EQ(count("SELECT count(*) FROM allocations a JOIN allocations b ON a.gpu_id = b.gpu_id"
                  " AND a.ctid < b.ctid AND a.period && b.period"),
            0);
  EXPECT_EQ(count("SELECT count(*) FROM rentals"), static_cast<long long>(accepted.size()))
      << "every refusal left nothing";
  for (const auto& id : accepted) {
    EXPECT_EQ(count("SELECT count(*) FROM allocations WHERE rental_id = '" + id + "'"), 2) << id;
  }
}

}  // namespace gpurent::testing::rentals_e2e
