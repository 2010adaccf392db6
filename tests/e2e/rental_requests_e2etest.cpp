// Rental requests end to end beyond one named model: a request by constraints (memory,
// bf16/fp8, architecture) books the cheapest model that fits, a refusal offers other
// models, sizes and start days, and a waiting request shows its place and estimated start.
#include "core/time.h"
#include "tests/support/rental_fleet_fixture.h"

#include <gtest/gtest.h>

#include <pqxx/pqxx>

#include <chrono>
#include <set>
#include <string>

namespace gpurent::testing::rental_requests_e2e {

using nlohmann::json;

class RentalRequestsE2E : public RentalFleetTest {
 protected:
  static constexpr const char* kA100 = "A100-SXM4-80GB";
  static constexpr const char* kL4 = "L4-24GB";

  // One 8-GPU H100, one 8-GPU A100 and one 4-GPU L4 node; per GPU and day the L4 is the
  // cheapest, then the A100, then the H100.
  void SetUp() override {
    ApiTest::SetUp();
    seed_fleet({});
    set_prices({{kModel, 1, 650000},
                {kModel, 8, 5200000},
                {kA100, 1, 420000},
                {kA100, 8, 3360000},
                {kL4, 1, 100000},
                {kL4, 4, 400000}});
    h100_ = add_node("h100-1");
    a100_ = add_node("a100-1", kA100);
    l4_ = add_node("l4-1", kL4, 4);
    owner_ = account("owner@example.com", "Acme");
  }

  json by_constraints(json constraints, int gpus = 1, const std::string& start = "now") {
    return {{"constraints", std::move(constraints)},
            {"gpu_count", gpus},
            {"start", start},
            {"days", 1},
            {"image_id", image_id_}};
  }
  json by_model(const std::string& model, int gpus = 1) {
    // The L4s are PCIe cards: more than one of them is asked with any interconnect.
    return {{"gpu_model", model},
            {"gpu_count", gpus},
            {"interconnect", model == kL4 ? "any" : "nvlink"},
            {"start", "now"},
            {"days", 1},
            {"image_id", image_id_}};
  }

  long long count(const std::string& query) {
    pqxx::connection c(db_.url());
    pqxx::nontransaction tx(c);
    return tx.exec1(query)[0].as<long long>();
  }

  std::string h100_, a100_, l4_;
  Login owner_;
};

TEST_F(RentalRequestsE2E, ConstraintsBookTheCheapestModelThatMeetsThem) {
  // At least 40 GB: the A100 is cheaper than the H100; the L4 has 24 GB.
  auto r = post("/v1/rentals", by_constraints({{"min_vram_gb", 40}}), session(owner_));
  ASSERT_EQ(r.status, 201) << r.body;
  EXPECT_EQ(r.json()["gpu_model"], kA100);
  EXPECT_EQ(r.json()["node_id"], a100_);
  EXPECT_EQ(r.json()["price"]["per_day"], json({{"amount_minor", 420000}, {"currency", "RUB"}}));
  // fp8 as well: only Hopper and Ada compute in fp8, and the L4 is too small.
  r = post("/v1/rentals", by_constraints({{"min_vram_gb", 40}, {"fp8", true}}), session(owner_));
  ASSERT_EQ(r.status, 201) << r.body;
  EXPECT_EQ(r.json()["gpu_model"], kModel);
  EXPECT_EQ(r.json()["node_id"], h100_);
  // No demand on memory: the L4, by architecture in any case.
  r = post("/v1/rentals", by_constraints({{"architecture", "ada"}, {"bf16", true}}),
           session(owner_));
  ASSERT_EQ(r.status, 201) << r.body;
  EXPECT_EQ(r.json()["gpu_model"], kL4);
  EXPECT_EQ(r.json()["node_id"], l4_);
}

TEST_F(RentalRequestsE2E, WhenTheCheapestModelIsFullTheNextOneIsBooked) {
  ASSERT_EQ(post("/v1/rentals", by_model(kA100, 8), session(owner_)).status, 201);
  auto r = post("/v1/rentals", by_constraints({{"min_vram_gb", 80}}), session(owner_));
  ASSERT_EQ(r.status, 201) << r.body;
  EXPECT_EQ(r.json()["gpu_model"], kModel);
  // The quote says the same, and books nothing.
  long long before = count("SELECT count(*) FROM rentals");
  auto q = post("/v1/quotes", by_constraints({{"min_vram_gb", 80}}), session(owner_));
  ASSERT_EQ(q.status, 200) << q.body;
  EXPECT_EQ(q.json()["gpu_model"], kModel);
  EXPECT_EQ(q.json()["available"], true);
  EXPECT_EQ(q.json()["node_preview"]["node_id"], h100_);
  EXPECT_EQ(count("SELECT count(*) FROM rentals"), before);
}

TEST_F(RentalRequestsE2E, ConstraintsNobodyMeetsOrMalformedAreRefusedWithTheField) {
  struct Case {
    const char* what;
    json body;
    int status;
    const char* field;
  };
  const std::vector<Case> cases = {
      {"more memory than any model", by_constraints({{"min_vram_gb", 200}}), 400, "constraints"},
      {"an architecture nobody has", by_constraints({{"architecture", "Blackwell"}}), 400,
       "constraints"},
      {"no demand at all", by_constraints(json::object()), 400, "constraints"},
      {"an unknown demand", by_constraints({{"min_vram", 40}}), 400, "constraints.min_vram"},
      {"memory as text", by_constraints({{"min_vram_gb", "40"}}), 400, "constraints.min_vram_gb"},
      {"negative memory", by_constraints({{"min_vram_gb", -1}}), 400, "constraints.min_vram_gb"},
      {"fp8 as a number", by_constraints({{"fp8", 1}}), 400, "constraints.fp8"},
      {"not an object", by_constraints(json::array({"H100"})), 400, "constraints"},
      {"a count not on sale for any model meeting them", by_constraints({{"fp8", true}}, 2), 400,
       "gpu_count"},
  };
  for (const auto& c : cases) {
    auto r = post("/v1/rentals", c.body, session(owner_));
    EXPECT_EQ(r.status, c.status) << c.what << ": " << r.body;
    EXPECT_EQ(r.json()["error"]["details"]["field"], c.field) << c.what << ": " << r.body;
  }
  json both = by_model(kModel);
  both["constraints"] = {{"min_vram_gb", 40}};
  auto r = post("/v1/rentals", both, session(owner_));
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_EQ(r.json()["error"]["details"]["field"], "constraints");
  json neither = by_model(kModel);
  neither.erase("gpu_model");
  r = post("/v1/rentals", neither, session(owner_));
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_EQ(r.json()["error"]["details"]["field"], "gpu_model");
  EXPECT_EQ(count("SELECT count(*) FROM rentals"), 0) << "a refusal writes nothing";
}

TEST_F(RentalRequestsE2E, ARefusalOffersOtherModelsSizesAndTheEarliestDay) {
  ASSERT_EQ(post("/v1/rentals", by_model(kModel, 8), session(owner_)).status, 201);
  auto refused = post("/v1/rentals", by_model(kModel, 8), session(owner_));
  ASSERT_EQ(refused.status, 409) << refused.body;
  json details = refused.json()["error"]["details"];
  std::set<std::pair<std::string, int>> offered;
  for (const auto& a : details["alternatives"]) {
    ASSERT_TRUE(a["start"].is_string()) << a;
    offered.insert({a["gpu_model"].get<std::string>(), a["gpu_count"].get<int>()});
  }
  // The A100 node is free and priced for eight; the L4 has four GPUs and is not on sale by
  // eight; the H100 itself comes free after its day and the cleaning window.
  EXPECT_TRUE(offered.contains({kA100, 8})) << details;
  EXPECT_FALSE(offered.contains({kL4, 8})) << details;
  EXPECT_TRUE(offered.contains({kModel, 8})) << "the requested shape on a later day: " << details;
  ASSERT_TRUE(details["earliest_start"].is_string()) << details;
  bool later_day_listed = false;
  for (const auto& a : details["alternatives"]) {
    later_day_listed |= a["gpu_model"] == kModel && a["start"] == details["earliest_start"];
  }
  EXPECT_TRUE(later_day_listed) << details;
  // A quote of the same shows the same alternatives. The quote comes a moment later: a start
  // that is "now" on some day may have moved on by a second or two.
  auto q = post("/v1/quotes", by_model(kModel, 8), session(owner_));
  ASSERT_EQ(q.status, 200) << q.body;
  EXPECT_EQ(q.json()["available"], false);
  json quoted = q.json()["alternatives"];
  ASSERT_EQ(quoted.size(), details["alternatives"].size()) << quoted << "\n" << details;
  for (std::size_t i = 0; i < quoted.size(); ++i) {
    const json& a = quoted[i];
    const json& b = details["alternatives"][i];
    EXPECT_EQ(a["gpu_model"], b["gpu_model"]) << quoted << "\n" << details;
    EXPECT_EQ(a["gpu_count"], b["gpu_count"]) << quoted << "\n" << details;
    auto quoted_start = parse_rfc3339(a["start"].get<std::string>());
    auto refused_start = parse_rfc3339(b["start"].get<std::string>());
    ASSERT_TRUE(quoted_start && refused_start) << a << " " << b;
    EXPECT_GE(*quoted_start, *refused_start) << a << " " << b;
    EXPECT_LE(*quoted_start - *refused_start, std::chrono::seconds(10)) << a << " " << b;
  }
}

TEST_F(RentalRequestsE2E, AWaitingRentalShowsItsPlaceAndEstimatedStart) {
  auto booked = post("/v1/rentals", by_model(kL4, 4), session(owner_));
  ASSERT_EQ(booked.status, 201) << booked.body;
  json wait = by_model(kL4, 1);
  wait["wait_for_capacity"] = true;
  Login other = account("other@example.com", "Other");
  auto first = post("/v1/rentals", wait, session(owner_));
  ASSERT_EQ(first.status, 201) << first.body;
  EXPECT_EQ(first.json()["state"], "pending");
  auto second = post("/v1/rentals", wait, session(other));
  ASSERT_EQ(second.status, 201) << second.body;

  auto shown = get("/v1/rentals/" + second.json()["id"].get<std::string>(), session(other));
  ASSERT_EQ(shown.status, 200) << shown.body;
  json standing = shown.json()["waitlist"];
  EXPECT_EQ(standing["position"], 2) << shown.body;
  // The L4 node is booked for a day: the request fits from the next day on.
  ASSERT_TRUE(standing["estimated_start"].is_string()) << shown.body;
  EXPECT_GT(standing["estimated_start"].get<std::string>(),
            first.json()["period"]["start"].get<std::string>());
  shown = get("/v1/rentals/" + first.json()["id"].get<std::string>(), session(owner_));
  EXPECT_EQ(shown.json()["waitlist"]["position"], 1) << shown.body;
  // A booked rental has no waitlist standing (scheduled, or provisioning already: it starts
  // now, so the lifecycle worker is woken for it).
  auto placed = get("/v1/rentals/" + booked.json()["id"].get<std::string>(), session(owner_));
  ASSERT_EQ(placed.status, 200) << placed.body;
  EXPECT_NE(placed.json()["state"], "pending") << placed.body;
  EXPECT_FALSE(placed.json().contains("waitlist")) << placed.body;
}

}  // namespace gpurent::testing::rental_requests_e2e
