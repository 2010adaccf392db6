// Maintenance window routes: each reads its input and makes one Maintenance call.
#include "api/handlers/maintenance_handlers.h"

#include "api/auth.h"
#include "api/handlers/json_values.h"
#include "api/handlers/query_params.h"
#include "api/json_body.h"
#include "api/responses.h"
#include "core/error.h"
#include "core/id.h"
#include "core/time.h"

namespace gpurent::http {
namespace {

struct PlanRequest {
  std::vector<std::string> node_ids;
  std::optional<std::string> site_id;  // instead of node_ids: every node of the site
  scheduler::Period period;
  std::string reason;
};

Timestamp read_time(JsonObjectReader& in, const char* field) {
  auto at = parse_rfc3339(in.required_string(field, 64));
  if (!at) throw Error::invalid_field(field, "must be an RFC 3339 time");
  return *at;
}

PlanRequest read_plan(const Request& req) {
  auto body = parse_json_body(req);
  JsonObjectReader in(body);
  PlanRequest out;
  out.site_id = in.optional_string("site_id", 64);
  const auto* ids = in.optional_value("node_ids");
  if (out.site_id && ids)
    throw Error::invalid_field("site_id", "give node_ids or site_id, not both");
  if (!out.site_id) {
    if (!ids || !ids->is_array()) throw Error::invalid_field("node_ids", "must be an array of ids");
    for (const auto& id : *ids) {
      if (!id.is_string() || id.get<std::string>().size() > 64) {
        throw Error::invalid_field("node_ids", "must hold node ids");
      }
      out.node_ids.push_back(id.get<std::string>());
    }
  }
  Timestamp start = read_time(in, "start");
  out.period = {start, read_time(in, "end")};
  constexpr auto kMax = scheduler::Maintenance::kMaxReasonBytes;
  out.reason = printable_text("reason", in.required_string("reason", kMax), kMax);
  in.finish();
  return out;
}

std::string window_id(const Request& req) {
  return path_id(req, "id", id_prefix::kMaintenance, "No such maintenance window.");
}

}  // namespace

nlohmann::json maintenance_window_json(const scheduler::MaintenanceWindow& w) {
  return {{"id", w.id},
          {"node_id", w.node_id},
          {"start", time_json(w.period.start)},
          {"end", time_json(w.period.end)},
          {"reason", w.reason},
          {"created_by", optional_json(w.created_by)},
          {"created_at", time_json(w.created_at)},
          {"cancelled_at", optional_json(w.cancelled_at)}};
}

void add_maintenance_routes(Router& router, MaintenanceRoutesState& state) {
  router.add(
      {.method = Method::kPost,
       .pattern = "/v1/admin/maintenance",
       .handler =
           [&state](const Request& req, const Principal& p) {
             auto asked = read_plan(req);
             auto by = actor_of(req, p).user_id;
             auto planned =
                 asked.site_id
                     ? state.maintenance->plan_site(*asked.site_id, asked.period, asked.reason, by)
                     : state.maintenance->plan(asked.node_ids, asked.period, asked.reason, by);
             nlohmann::json items = nlohmann::json::array(), moved = nlohmann::json::array();
             for (const auto& w : planned.windows) items.push_back(maintenance_window_json(w));
             for (const auto& m : planned.moved) {
               moved.push_back({{"rental_id", m.rental_id},
                                {"from_node_id", m.from_node_id},
                                {"to_node_id", m.to_node_id}});
             }
             return json_response(
                 201, {{"items", items}, {"moved", moved}, {"notified", planned.notified}});
           },
       .platform_admin = true,
       .summary =
           "Plan maintenance windows {node_ids or site_id, start, end, reason}: each holds its "
           "node's GPUs; the scheduled rentals in the way move to other GPUs, and "
           "the tenants of those that stay are notified with choices (409 within "
           "the notice lead time) (platform admins).",
       .tag = "admin"});
  router.add({.method = Method::kGet,
              .pattern = "/v1/admin/maintenance",
              .handler =
                  [&state](const Request& req, const Principal&) {
                    QueryParams query(req, {"node_id", "include_past", "include_cancelled"});
                    auto windows = state.pool->read("maintenance_list", [&](Tx& tx) {
                      return state.maintenance->list(
                          tx, query.text("node_id"), query.text("include_past") == "true",
                          query.text("include_cancelled") == "true", 500);
                    });
                    nlohmann::json items = nlohmann::json::array();
                    for (const auto& w : windows) items.push_back(maintenance_window_json(w));
                    return json_response(200, {{"items", items}});
                  },
              .platform_admin = true,
              .summary = "Maintenance windows not over yet, by start; ?node_id=, "
                         "?include_past=true, ?include_cancelled=true (platform admins).",
              .tag = "admin"});
  router.add({.method = Method::kDelete,
              .pattern = "/v1/admin/maintenance/{id}",
              .handler =
                  [&state](const Request& req, const Principal&) {
                    return json_response(
                        200, maintenance_window_json(state.maintenance->cancel(window_id(req))));
                  },
              .platform_admin = true,
              .summary = "Cancel a maintenance window: its GPUs are free again (platform admins).",
              .tag = "admin"});
}

}  // namespace gpurent::http
