// Token routes: create (shown once), list (never the secret), revoke (effective at once).
#include "api/handlers/token_handlers.h"
#include "api/handlers/json_values.h"

#include "api/handlers/guardrails.h"
#include "api/handlers/query_params.h"
#include "api/json_body.h"
#include "api/responses.h"
#include "core/clock.h"
#include "core/error.h"
#include "core/limits.h"

#include <nlohmann/json.hpp>

#include <algorithm>

namespace gpurent::http {
namespace {

constexpr int kMaxExpiryDays = limits::kMaxTokenExpiryDays;

nlohmann::json token_json(const identity::TokenRecord& t) {
  return {{"id", t.id},
          {"name", t.name},
          {"prefix", t.prefix},
          {"scopes", t.scopes},
          {"created_at", time_json(t.created_at)},
          {"created_by", t.created_by},
          {"expires_at", optional_json(t.expires_at)},
          {"last_used_at", optional_json(t.last_used_at)},
          {"max_concurrent_gpus", optional_json(t.guardrails.max_concurrent_gpus)},
          {"max_days", optional_json(t.guardrails.max_days)},
          {"spend_limit_minor", optional_json(t.guardrails.spend_limit_minor)}};
}

std::vector<std::string> read_scopes(const nlohmann::json& body, const Principal& caller) {
  auto it = body.find("scopes");
  if (it == body.end() || !it->is_array() || it->empty() || it->size() > 16) {
    throw Error::invalid_field("scopes", "must be a non-empty list of scopes");
  }
  std::vector<std::string> scopes;
  for (const auto& s : *it) {
    if (!s.is_string() || !identity::is_valid_scope(s.get<std::string>())) {
      throw Error::invalid_field("scopes",
                                 "must hold only known scopes (rentals:read, "
                                 "rentals:write, billing:read, ssh-keys:write, "
                                 "members:write, tokens:write, admin)");
    }
    auto scope = s.get<std::string>();
    // Nobody can mint a token stronger than themselves; only platform admins' sessions
    // carry `admin`, so only they can grant it.
    if (std::find(caller.scopes.begin(), caller.scopes.end(), scope) == caller.scopes.end()) {
      throw Error(ErrorCode::kForbidden, "You cannot grant " + scope + ", which you do not have.",
                  {{"scope", scope}});
    }
    if (std::find(scopes.begin(), scopes.end(), scope) == scopes.end()) scopes.push_back(scope);
  }
  return scopes;
}

struct NewToken {
  std::string name;
  std::vector<std::string> scopes;
  std::optional<int> expires_in_days;
  identity::Guardrails guardrails;
};

// {name, scopes, expires_in_days?, guardrails…}: scopes the caller has, nothing more.
NewToken read_new_token(const Request& req, const Principal& caller) {
  auto body = parse_json_body(req);
  JsonObjectReader in(body);
  NewToken t{.name = in.required_string("name", 200)};
  if (t.name.empty() || has_control_characters(t.name)) {
    throw Error::invalid_field("name", "must be 1 to 200 printable characters");
  }
  in.optional_value("scopes");  // validated by read_scopes
  t.scopes = read_scopes(body, caller);
  if (auto days = in.optional_int("expires_in_days", 1, kMaxExpiryDays)) {
    t.expires_in_days = static_cast<int>(*days);
  }
  t.guardrails = read_guardrails(in);
  in.finish();
  return t;
}

}  // namespace

void add_token_routes(Router& router, TokenRoutesState& state) {
  router.add({.method = Method::kGet,
              .pattern = "/v1/api-tokens",
              .handler =
                  [&state](const Request& req, const Principal& p) {
                    const auto& org = *p.org_id;
                    QueryParams query(req, {"limit", "cursor"});
                    auto page = state.pool->read("token_list", [&](Tx& tx) {
                      return state.store->list(tx, org, query.limit(), query.cursor());
                    });
                    nlohmann::json items = nlohmann::json::array();
                    for (const auto& t : page.items) items.push_back(token_json(t));
                    return list_response(200, std::move(items), page.next_cursor);
                  },
              .needs_org = true,
              .summary = "The org's live API tokens (never their secrets).",
              .tag = "identity"});

  router.add({.method = Method::kPost,
              .pattern = "/v1/api-tokens",
              .handler =
                  [&state](const Request& req, const Principal& p) {
                    auto t = read_new_token(req, p);
                    auto [record, token] = state.pool->transact("token_create", [&](Tx& tx) {
                      return state.store->create(tx, *p.org_id, t.name, t.scopes, t.expires_in_days,
                                                 t.guardrails, actor_of(req, p));
                    });
                    auto out = token_json(record);
                    out["token"] = token;
                    Response r = json_response(201, out);
                    r.set_header("Cache-Control", "no-store");
                    return r;
                  },
              .needs_org = true,
              .scope = "tokens:write",
              .summary = "Create an API token; the token is shown only in this response.",
              .tag = "identity"});

  router.add({.method = Method::kDelete,
              .pattern = "/v1/api-tokens/{id}",
              .handler =
                  [&state](const Request& req, const Principal& p) {
                    const auto& org = *p.org_id;
                    std::string id(req.path_param("id"));
                    bool revoked = state.pool->transact("token_revoke", [&](Tx& tx) {
                      return state.store->revoke(tx, org, id, actor_of(req, p));
                    });
                    if (!revoked) {
                      throw Error(ErrorCode::kNotFound, "No such API token.");
                    }
                    Response r;
                    r.status = 204;
                    return r;
                  },
              .needs_org = true,
              .scope = "tokens:write",
              .changes_credentials = true,
              .summary = "Revoke an API token; it stops working on the next request.",
              .tag = "identity"});
}

}  // namespace gpurent::http
