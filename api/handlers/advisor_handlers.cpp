// The sizing advisor's route: the body read strictly, the estimate and the choice made by
// the pure rules of advisor/, the catalog and the offers read in one read-only transaction.
#include "api/handlers/advisor_handlers.h"

#include "advisor/recommend.h"
#include "advisor/sizing.h"
#include "api/auth.h"
#include "api/handlers/json_values.h"
#include "api/handlers/measured_json.h"
#include "api/json_body.h"
#include "api/responses.h"
#include "core/error.h"
#include "core/limits.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <map>
#include <tuple>

namespace gpurent::http {
namespace {

using advisor::Precision;
using advisor::Task;

struct AdvisorRequest {
  advisor::SizingRequest sizing;
  int days = 1;
};

AdvisorRequest read_request(const Request& req) {
  auto body = parse_json_body(req);
  JsonObjectReader in(body);
  AdvisorRequest r;
  if (auto preset = in.optional_string("preset", 64)) r.sizing.preset = *preset;
  if (const auto* size = in.optional_value("model_params_billion")) {
    if (!size->is_number()) {
      throw Error::invalid_field("model_params_billion", "must be a number (billions)");
    }
    r.sizing.params_billion = size->get<double>();
  }
  auto precision = advisor::parse_precision(in.required_string("precision", 16));
  if (!precision) {
    throw Error::invalid_field("precision", "must be fp32, bf16, fp16, fp8, int8 or int4");
  }
  r.sizing.precision = *precision;
  auto task = advisor::parse_task(in.required_string("task", 32));
  if (!task) {
    throw Error::invalid_field("task", "must be inference, lora, qlora, full_finetune or pretrain");
  }
  r.sizing.task = *task;
  if (auto c = in.optional_int("context_tokens", 1, 1 << 20)) {
    r.sizing.context_tokens = static_cast<int>(*c);
  }
  if (auto b = in.optional_int("batch_size", 1, 4096)) r.sizing.batch_size = static_cast<int>(*b);
  if (auto d = in.optional_int("days", limits::kMinRentalDays, limits::kMaxRentalDays))
    r.days = static_cast<int>(*d);
  in.finish();
  return r;
}

// GB to one decimal, as the panel shows them.
double tenth(double gb) {
  return std::round(gb * 10.0) / 10.0;
}

// The shapes on sale, each dated for the interconnect its booking would ask: NVLink where
// every GPU pair has it (one GPU, an NVSwitch board, a bridged pair), any elsewhere, so a
// PCIe set still gets a start date for work that can use it.
// The offerings, and each model's measured figures (the offers').
struct Offerings {
  std::vector<advisor::Offering> items;
  std::map<std::string, inventory::ModelMeasurement> measured;
};

Offerings offerings(Tx& tx, scheduler::CatalogViews& views, int days) {
  scheduler::OfferQuery q;
  q.days = days;
  q.link_need = scheduler::LinkNeed::kNvlink;
  auto nvlink = views.offers(tx, q);
  q.link_need = scheduler::LinkNeed::kAny;
  auto any = views.offers(tx, q);
  using Key = std::tuple<std::string, int, std::string, std::string>;
  std::map<Key, const scheduler::Offer*> any_by_key;
  for (const auto& o : any) any_by_key[{o.gpu_model, o.gpu_count, o.interconnect, o.site}] = &o;
  Offerings out;
  for (const auto& n : nvlink) {
    if (n.measured) out.measured[n.gpu_model] = *n.measured;
    advisor::Offering o{.gpu_model = n.gpu_model,
                        .gpu_count = n.gpu_count,
                        .interconnect = n.interconnect,
                        .price_per_day = n.price_per_day,
                        .available_now = n.available_now,
                        .earliest_start = n.earliest_start,
                        .site = n.site,
                        .earliest_date = n.earliest_date};
    if (!advisor::nvlink_connected(o)) {
      if (auto it = any_by_key.find({n.gpu_model, n.gpu_count, n.interconnect, n.site});
          it != any_by_key.end()) {
        o.available_now = it->second->available_now;
        o.earliest_start = it->second->earliest_start;
        o.earliest_date = it->second->earliest_date;
      }
    }
    out.items.push_back(std::move(o));
  }
  return out;
}

nlohmann::json breakdown_json(const advisor::Breakdown& b) {
  return {{"weights_gb", tenth(b.weights_gb)},         {"kv_cache_gb", tenth(b.kv_cache_gb)},
          {"gradients_gb", tenth(b.gradients_gb)},     {"optimizer_gb", tenth(b.optimizer_gb)},
          {"activations_gb", tenth(b.activations_gb)}, {"overhead_gb", tenth(b.overhead_gb)}};
}

nlohmann::json model_json(const advisor::Estimate& e) {
  bool language = e.kind == advisor::ModelKind::kLanguage;
  auto shape = [&](int v) { return language ? nlohmann::json(v) : nlohmann::json(nullptr); };
  return {{"preset", e.preset.empty() ? nlohmann::json(nullptr) : nlohmann::json(e.preset)},
          {"params_billion", e.params_billion},
          {"layers", shape(e.layers)},
          {"hidden_size", shape(e.hidden_size)},
          {"kv_heads", shape(e.kv_heads)},
          {"shape", e.shape_estimated ? "estimated" : "published"}};
}

nlohmann::json advice_json(const advisor::Estimate& e, const advisor::Advice& a,
                           const std::map<std::string, inventory::ModelMeasurement>& measured) {
  nlohmann::json recommendations = nlohmann::json::array();
  for (const auto& r : a.recommendations) {
    auto m = measured.find(r.gpu_model);
    nlohmann::json figures =
        measured_fields(m == measured.end() ? std::nullopt : std::optional(m->second),
                        r.price_per_day, r.gpu_count);
    recommendations.push_back(
        {{"gpu_model", r.gpu_model},
         {"gpu_count", r.gpu_count},
         {"interconnect", r.interconnect},
         {"booking_interconnect", r.booking_interconnect},
         {"price_per_day", r.price_per_day.to_json()},
         {"available_now", r.available_now},
         {"earliest_start", optional_json(r.earliest_start)},
         {"earliest_date", optional_json(r.earliest_date)},
         {"site", r.site},
         {"vram_per_gpu_gb", r.vram_per_gpu_gb},
         {"required_per_gpu_gb", tenth(r.required_per_gpu_gb)},
         {"sharding_required", r.sharding_required},
         {"fits", true},
         {"why", r.why},
         {"measured", figures["measured"]},
         {"price_per_measured_tflops_day", figures["price_per_measured_tflops_day"]},
         {"price_per_measured_tensor_tflops_day",
          figures["price_per_measured_tensor_tflops_day"]}});
  }
  nlohmann::json excluded = nlohmann::json::array();
  for (const auto& x : a.excluded) {
    excluded.push_back({{"gpu_model", x.gpu_model},
                        {"gpu_count", optional_json(x.gpu_count)},
                        {"fits", false},
                        {"why", x.why}});
  }
  return {{"vram_required_gb", tenth(e.total_gb())},
          {"breakdown", breakdown_json(e.breakdown)},
          {"sharding_required", a.sharding_required},
          {"model", model_json(e)},
          {"precision", advisor::to_string(e.precision)},
          {"task", advisor::to_string(e.task)},
          {"context_tokens", e.context_tokens > 0 ? nlohmann::json(e.context_tokens) : nullptr},
          {"batch_size", e.batch_size},
          {"recommendations", recommendations},
          {"excluded", excluded}};
}

}  // namespace

void add_advisor_routes(Router& router, AdvisorRoutesState& state) {
  // A catalog read like GET /v1/offers: any signed-in caller, no org (prices are the price
  // list's, the same for every org), no scope. A POST only because the question is a body;
  // it changes nothing, so a repeated Idempotency-Key simply replays the answer.
  router.add({.method = Method::kPost,
              .pattern = "/v1/advisor",
              .handler =
                  [&state](const Request& req, const Principal&) {
                    auto request = read_request(req);
                    // Sized before the database is asked: a request that cannot be sized is
                    // refused without a transaction.
                    auto estimate = advisor::estimate(request.sizing);
                    auto [models, offers] = state.pool->read("advisor_offers", [&](Tx& tx) {
                      return std::make_pair(state.catalog->gpu_models(tx),
                                            offerings(tx, *state.views, request.days));
                    });
                    auto advice = advisor::advise(estimate, models, offers.items);
                    return json_response(200, advice_json(estimate, advice, offers.measured));
                  },
              .summary = "How much GPU memory a workload needs, and the rentals that hold it.",
              .tag = "catalog"});
}

}  // namespace gpurent::http
