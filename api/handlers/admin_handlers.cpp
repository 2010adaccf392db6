// Admin routes: authenticate, require a platform admin, then one store call each, in a
// transaction of its own.
#include "api/handlers/admin_handlers.h"
#include "api/handlers/json_values.h"

#include "api/handlers/audit_handlers.h"
#include "api/handlers/guardrails.h"
#include "api/handlers/query_params.h"
#include "api/json_body.h"
#include "api/responses.h"
#include "core/clock.h"
#include "core/error.h"
#include "core/id.h"

#include <nlohmann/json.hpp>

namespace gpurent::http {
namespace {

// The spend limit is printed in minor units, as API tokens print theirs: the platform bills
// in one currency and only the amount is stored.
nlohmann::json org_json(const identity::OrgRecord& o) {
  return {{"id", o.id},
          {"name", o.name},
          {"created_at", time_json(o.created_at)},
          {"max_concurrent_gpus", optional_json(o.guardrails.max_concurrent_gpus)},
          {"max_days", optional_json(o.guardrails.max_days)},
          {"spend_limit_minor", optional_json(o.guardrails.spend_limit_minor)},
          {"member_count", o.member_count}};
}

Error no_such_org() {
  return Error(ErrorCode::kNotFound, "No such organisation.");
}

// The org id from the path; a malformed one is simply an org that does not exist.
std::string org_id_param(const Request& req) {
  return path_id(req, "id", id_prefix::kOrg, no_such_org().what());
}

}  // namespace

void add_admin_routes(Router& router, AdminRoutesState& state) {
  router.add({.method = Method::kGet,
              .pattern = "/v1/admin/orgs",
              .handler =
                  [&state](const Request& req, const Principal&) {
                    QueryParams query(req, {"limit", "cursor"});
                    std::map<std::string, nlohmann::json> balances;
                    auto page = state.pool->read("org_admin_list", [&](Tx& tx) {
                      auto page = state.orgs->list(tx, query.limit(), query.cursor());
                      if (state.balances) {
                        std::vector<std::string> ids;
                        for (const auto& o : page.items) ids.push_back(o.id);
                        balances = state.balances->balances_json(tx, ids);
                      }
                      return page;
                    });
                    // With each org's balance, so the list needs no request per org.
                    nlohmann::json items = nlohmann::json::array();
                    for (const auto& o : page.items) {
                      auto item = org_json(o);
                      auto b = balances.find(o.id);
                      if (b != balances.end()) item["balance"] = b->second;
                      items.push_back(std::move(item));
                    }
                    return list_response(200, std::move(items), page.next_cursor);
                  },
              .platform_admin = true,
              .summary = "Every organisation with its member count, guardrails and balance, "
                         "oldest first (platform admins).",
              .tag = "admin"});

  router.add({.method = Method::kGet,
              .pattern = "/v1/admin/orgs/{id}",
              .handler =
                  [&state](const Request& req, const Principal&) {
                    std::string org_id = org_id_param(req);
                    auto org = state.pool->read(
                        "org_admin_get", [&](Tx& tx) { return state.orgs->get(tx, org_id); });
                    if (!org) throw no_such_org();
                    return json_response(200, org_json(*org));
                  },
              .platform_admin = true,
              .summary = "One organisation (platform admins).",
              .tag = "admin"});

  router.add({.method = Method::kPatch,
              .pattern = "/v1/admin/orgs/{id}",
              .handler =
                  [&state](const Request& req, const Principal& p) {
                    std::string org_id = org_id_param(req);
                    auto body = parse_json_body(req);
                    JsonObjectReader in(body);
                    auto change = read_guardrails_change(body, in);
                    in.finish();
                    // Nothing to change writes nothing, not even an audit row.
                    auto org =
                        change.empty()
                            ? state.pool->read("org_admin_get",
                                               [&](Tx& tx) { return state.orgs->get(tx, org_id); })
                            : state.pool->transact("org_admin_set_guardrails", [&](Tx& tx) {
                                return state.orgs->set_guardrails(tx, org_id, change,
                                                                  actor_of(req, p));
                              });
                    if (!org) throw no_such_org();
                    return json_response(200, org_json(*org));
                  },
              .platform_admin = true,
              .changes_credentials = true,
              .summary = "Set an organisation's guardrails: {max_concurrent_gpus?, max_days?, "
                         "spend_limit?}; null clears a limit, an absent field leaves it (platform "
                         "admins; audited as org.guardrails_set).",
              .tag = "admin"});

  router.add(
      {.method = Method::kGet,
       .pattern = "/v1/admin/audit",
       .handler =
           [&state](const Request& req, const Principal&) {
             QueryParams query(
                 req, {"org_id", "action", "actor_user_id", "since", "until", "limit", "cursor"});
             auto org_id = query.id("org_id", id_prefix::kOrg);
             auto filter = read_audit_filter(query);
             auto page = state.pool->read("audit_list_all", [&](Tx& tx) {
               return state.audit->list_all(tx, org_id, filter, query.limit(), query.cursor());
             });
             return json_response(200, audit_page_json(page));
           },
       .platform_admin = true,
       .summary = "The audit log of every organisation, newest first; filters org_id, action, "
                  "actor_user_id, since, until (RFC 3339, half-open) (platform admins).",
       .tag = "admin"});
}

}  // namespace gpurent::http
