// The sizing advisor through HTTP on the real gpurentd: its recommendations come from the
// fleet and price list actually on sale, can be quoted as they are, follow bookings, and
// bad questions are 400s naming the field.
#include "tests/support/rental_fleet_fixture.h"

#include <gtest/gtest.h>

#include <string>

namespace gpurent::testing::advisor_e2e {

using nlohmann::json;

class AdvisorE2E : public RentalFleetTest {
 protected:
  static constexpr const char* kH200 = "H200-SXM5-141GB";
  static constexpr const char* kL4 = "L4-24GB";

  // An 8-GPU H100 and an 8-GPU H200 board (NVSwitch) and a 4-GPU L4 box (PCIe); the L4 is
  // the cheapest per GPU, then the H100, then the H200.
  void SetUp() override {
    ApiTest::SetUp();
    seed_fleet({});
    set_prices({{kModel, 1, 650000},
                {kModel, 2, 1300000},
                {kModel, 8, 5200000},
                {kH200, 1, 850000},
                {kH200, 2, 1700000},
                {kL4, 1, 100000},
                {kL4, 4, 400000}});
    add_node("h100-1");
    add_node("h200-1", kH200);
    add_node("l4-1", kL4, 4);
    owner_ = account("owner@example.com", "Acme");
  }

  HttpResult ask(const json& body) { return post("/v1/advisor", body, session(owner_)); }

  static const json* find(const json& advice, const std::string& model) {
    for (const auto& r : advice["recommendations"]) {
      if (r["gpu_model"] == model) return &r;
    }
    return nullptr;
  }

  Login owner_;
};

TEST_F(AdvisorE2E, SeventyBillionFp16IsOfferedOnTwoH100sOrH200sAndTheAdviceCanBeQuoted) {
  auto r = ask({{"preset", "llama-2-70b"}, {"precision", "fp16"}, {"task", "inference"}});
  ASSERT_EQ(r.status, 200) << r.body;
  json advice = r.json();
  EXPECT_GT(advice["vram_required_gb"].get<double>(), 141.0);
  EXPECT_NEAR(advice["breakdown"]["weights_gb"].get<double>(), 138.0, 0.1);
  EXPECT_GT(advice["breakdown"]["kv_cache_gb"].get<double>(), 1.0);
  EXPECT_EQ(advice["model"]["layers"], 80);
  EXPECT_EQ(advice["context_tokens"], 4096);
  for (const auto& rec : advice["recommendations"]) {
    EXPECT_FALSE(rec["gpu_count"] == 1 && rec["vram_per_gpu_gb"].get<int>() <= 94) << rec.dump();
    EXPECT_EQ(rec["fits"], true);
  }
  // Only what is priced: no L4 in four (4 × 24 GB < 140 GB).
  EXPECT_EQ(find(advice, kL4), nullptr);
  const json* h100 = find(advice, kModel);
  ASSERT_NE(h100, nullptr) << advice.dump(2);
  EXPECT_EQ((*h100)["gpu_count"], 2);
  EXPECT_EQ((*h100)["interconnect"], "nvswitch");
  EXPECT_EQ((*h100)["booking_interconnect"], "nvlink");
  EXPECT_EQ((*h100)["price_per_day"], json({{"amount_minor", 1300000}, {"currency", "RUB"}}));
  EXPECT_EQ((*h100)["available_now"], true);
  EXPECT_TRUE((*h100)["earliest_start"].is_string());
  EXPECT_EQ((*h100)["site"], "Test DC");
  const json* h200 = find(advice, kH200);
  ASSERT_NE(h200, nullptr);
  EXPECT_LE((*h200)["gpu_count"].get<int>(), 2);
  // Cheapest first: two H100s (13,000 ₽) before two H200s (17,000 ₽).
  EXPECT_EQ(advice["recommendations"][0]["gpu_model"], kModel);
  bool one_h100_refused = false;
  for (const auto& x : advice["excluded"]) {
    EXPECT_EQ(x["fits"], false);
    if (x["gpu_model"] == kModel && x["gpu_count"] == 1) one_h100_refused = true;
  }
  EXPECT_TRUE(one_h100_refused) << advice["excluded"].dump(2);

  // The recommendation is what a quote of that shape prices and finds free.
  auto quote = post("/v1/quotes",
                    {{"gpu_model", (*h100)["gpu_model"]},
                     {"gpu_count", (*h100)["gpu_count"]},
                     {"interconnect", (*h100)["booking_interconnect"]},
                     {"start", "now"},
                     {"days", 1},
                     {"image_id", image_id_}},
                    session(owner_));
  ASSERT_EQ(quote.status, 200) << quote.body;
  EXPECT_EQ(quote.json()["available"], true);
  EXPECT_EQ(quote.json()["price"]["list_per_day"], (*h100)["price_per_day"]);
}

TEST_F(AdvisorE2E, SdxlOnOneL4AndTheStartFollowsBookings) {
  auto r = ask({{"preset", "sdxl"}, {"precision", "fp16"}, {"task", "inference"}});
  ASSERT_EQ(r.status, 200) << r.body;
  json advice = r.json();
  ASSERT_FALSE(advice["recommendations"].empty());
  const json first = advice["recommendations"][0];  // a copy: `advice` is asked again below
  EXPECT_EQ(first["gpu_model"], kL4);
  EXPECT_EQ(first["gpu_count"], 1);
  EXPECT_EQ(first["available_now"], true);
  EXPECT_EQ(advice["context_tokens"], nullptr);
  EXPECT_EQ(advice["breakdown"]["kv_cache_gb"], 0.0);

  // Every L4 booked for the next two days: the L4 is still the cheapest fit, but no longer
  // free now.
  auto booked = post("/v1/rentals",
                     {{"gpu_model", kL4},
                      {"gpu_count", 4},
                      {"interconnect", "any"},
                      {"start", "now"},
                      {"days", 2},
                      {"image_id", image_id_}},
                     session(owner_));
  ASSERT_EQ(booked.status, 201) << booked.body;
  advice = ask({{"preset", "sdxl"}, {"precision", "fp16"}, {"task", "inference"}}).json();
  const json* l4 = find(advice, kL4);
  ASSERT_NE(l4, nullptr);
  EXPECT_EQ((*l4)["available_now"], false);
  EXPECT_TRUE((*l4)["earliest_start"].is_string()) << "free again after the rental";
  EXPECT_TRUE((*l4)["earliest_date"].is_string()) << "the site's first date it fits from";
  EXPECT_GT((*l4)["earliest_start"].get<std::string>(), first["earliest_start"].get<std::string>());
}

TEST_F(AdvisorE2E, FullFineTuneOf7bIsShardedOverNvlink) {
  auto r = ask({{"model_params_billion", 7}, {"precision", "bf16"}, {"task", "full_finetune"}});
  ASSERT_EQ(r.status, 200) << r.body;
  json advice = r.json();
  EXPECT_EQ(advice["model"]["shape"], "estimated");
  EXPECT_NEAR(advice["breakdown"]["optimizer_gb"].get<double>(), 84.0, 0.1);
  const json* h100 = find(advice, kModel);
  ASSERT_NE(h100, nullptr) << advice.dump(2);
  EXPECT_EQ((*h100)["gpu_count"], 2);
  EXPECT_EQ((*h100)["sharding_required"], true);
  EXPECT_EQ((*h100)["booking_interconnect"], "nvlink");
  // The L4s are too small even four together (and would talk over PCIe).
  EXPECT_EQ(find(advice, kL4), nullptr);
}

TEST_F(AdvisorE2E, BadQuestionsAre400NamingTheField) {
  struct Case {
    json body;
    const char* field;
  };
  const json ok = {{"preset", "llama-3-8b"}, {"precision", "bf16"}, {"task", "lora"}};
  auto with = [&](const char* key, json value) {
    json b = ok;
    b[key] = std::move(value);
    return b;
  };
  const Case cases[] = {
      {with("colour", "red"), "colour"},
      {with("preset", "gpt-5"), "preset"},
      {with("precision", "fp64"), "precision"},
      {with("task", "distill"), "task"},
      {with("batch_size", 0), "batch_size"},
      {with("batch_size", 100000), "batch_size"},
      {with("context_tokens", 8193), "context_tokens"},  // Llama 3 reads 8k
      {with("context_tokens", "long"), "context_tokens"},
      {with("days", 366), "days"},
      {with("model_params_billion", 7), "preset"},  // both
      {{{"model_params_billion", "7"}, {"precision", "bf16"}, {"task", "lora"}},
       "model_params_billion"},
      {{{"model_params_billion", 0}, {"precision", "bf16"}, {"task", "lora"}},
       "model_params_billion"},
      {{{"precision", "bf16"}, {"task", "lora"}}, "model_params_billion"},
      {{{"model_params_billion", 7}, {"precision", "int4"}, {"task", "full_finetune"}},
       "precision"},
      {{{"preset", "sdxl"}, {"task", "inference"}}, "precision"},
  };
  for (const auto& c : cases) {
    auto r = ask(c.body);
    SCOPED_TRACE(c.body.dump());
    ASSERT_EQ(r.status, 400) << r.body;
    EXPECT_EQ(r.json()["error"]["code"], "invalid_request");
    EXPECT_EQ(r.json()["error"]["details"]["field"], c.field) << r.body;
  }
  auto bad_json = send("POST", "/v1/advisor", "{", session(owner_));
  EXPECT_EQ(bad_json.status, 400);
  EXPECT_EQ(bad_json.json()["error"]["code"], "invalid_json");
  // Signed-in callers only.
  EXPECT_EQ(post("/v1/advisor", ok).status, 401);
  // Fine as it is.
  EXPECT_EQ(ask(ok).status, 200);
}

}  // namespace gpurent::testing::advisor_e2e
