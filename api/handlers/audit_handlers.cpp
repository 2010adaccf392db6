// GET /v1/audit: one AuditStore read for the caller's org, which the statement itself fixes.
// Owners and admins only; an API token also needs members:write, the scope of those roles.
#include "api/handlers/audit_handlers.h"
#include "api/handlers/json_values.h"

#include "api/responses.h"
#include "core/clock.h"
#include "core/error.h"
#include "core/id.h"

#include <algorithm>

namespace gpurent::http {
namespace {

constexpr std::size_t kMaxActionBytes = 100;

bool is_action_name(std::string_view s) {
  return !s.empty() && s.size() <= kMaxActionBytes &&
         std::all_of(s.begin(), s.end(), [](unsigned char c) {
           return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '.' || c == '_' || c == ':' || c == '-';
         });
}

nlohmann::json audit_json(const identity::AuditRecord& r) {
  return {{"id", r.id},
          {"at", time_json(r.at)},
          {"org_id", optional_json(r.org_id)},
          {"actor_user_id", optional_json(r.actor_user_id)},
          {"actor_token_id", optional_json(r.actor_token_id)},
          {"action", r.action},
          {"target", optional_json(r.target)},
          {"ip", optional_json(r.ip)},
          {"request_id", optional_json(r.request_id)},
          {"details", r.details}};
}

}  // namespace

identity::AuditFilter read_audit_filter(const QueryParams& query) {
  identity::AuditFilter f;
  f.action = query.text("action");
  if (f.action && !is_action_name(*f.action)) {
    throw Error::invalid_field("action",
                               "must be an action name such as org.guardrails_set (letters, "
                               "digits, '.', '_', ':', '-'; at most 100)");
  }
  f.actor_user_id = query.id("actor_user_id", id_prefix::kUser);
  f.since = query.timestamp("since");
  f.until = query.timestamp("until");
  if (f.since && f.until && *f.until < *f.since) {
    throw Error::invalid_field("until", "must not be before since");
  }
  return f;
}

nlohmann::json audit_page_json(const identity::AuditPage& page) {
  nlohmann::json items = nlohmann::json::array();
  for (const auto& r : page.items) items.push_back(audit_json(r));
  return {{"items", std::move(items)}, {"next_cursor", optional_json(page.next_cursor)}};
}

void add_audit_routes(Router& router, AuditRoutesState& state) {
  router.add(
      {.method = Method::kGet,
       .pattern = "/v1/audit",
       .handler =
           [&state](const Request& req, const Principal& p) {
             const std::string& org_id = *p.org_id;
             if (p.role != "owner" && p.role != "admin") {
               throw Error(ErrorCode::kForbidden,
                           "The audit log is for the organisation's owners and admins.");
             }
             QueryParams query(req,
                               {"action", "actor_user_id", "since", "until", "limit", "cursor"});
             auto filter = read_audit_filter(query);
             auto page = state.pool->read("audit_list_org", [&](Tx& tx) {
               return state.store->list_org(tx, org_id, filter, query.limit(), query.cursor());
             });
             return json_response(200, audit_page_json(page));
           },
       .needs_org = true,
       .scope = "members:write",
       .summary = "The organisation's audit log, newest first; filters action, actor_user_id, "
                  "since, until (RFC 3339, half-open). Owners and admins; API tokens need "
                  "members:write.",
       .tag = "identity"});
}

}  // namespace gpurent::http
