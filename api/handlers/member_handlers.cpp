// Member routes: each turns one request into one MemberStore call in a transaction of its
// own, for the caller's org only.
// Owners manage everyone; admins (members:write) manage everyone but owners; anyone may leave.
#include "api/handlers/member_handlers.h"

#include "api/handlers/json_values.h"

#include "api/handlers/auth_handlers.h"
#include "api/handlers/query_params.h"
#include "api/json_body.h"
#include "api/responses.h"
#include "core/clock.h"
#include "core/error.h"
#include "core/id.h"

#include <nlohmann/json.hpp>

namespace gpurent::http {
namespace {

constexpr std::size_t kMaxEmailBytes = 254;
constexpr std::size_t kMaxRoleBytes = 32;

nlohmann::json member_json(const identity::MemberRecord& m) {
  return {{"user_id", m.user_id},
          {"email", m.email},
          {"role", m.role},
          {"joined_at", time_json(m.joined_at)}};
}

std::string validated_role(JsonObjectReader& in) {
  std::string role = in.required_string("role", kMaxRoleBytes);
  if (!identity::is_valid_role(role)) {
    throw Error::invalid_field("role", "must be one of owner, admin, member, billing, viewer");
  }
  return role;
}

identity::OwnerAuthority authority_of(const Principal& p) {
  return p.role == "owner" ? identity::OwnerAuthority::kMayManageOwners
                           : identity::OwnerAuthority::kCannotManageOwners;
}

Error no_such_member() {
  return Error(ErrorCode::kNotFound, "No such member.");
}

// The user id from the path; a malformed one is simply a member that does not exist.
std::string member_id(const Request& req) {
  return path_id(req, "user_id", id_prefix::kUser, no_such_member().what());
}

}  // namespace

void add_member_routes(Router& router, MemberRoutesState& state) {
  router.add({.method = Method::kGet,
              .pattern = "/v1/members",
              .handler =
                  [&state](const Request& req, const Principal& p) {
                    const std::string& org_id = *p.org_id;
                    QueryParams query(req, {"limit", "cursor"});
                    auto page = state.pool->read("member_list", [&](Tx& tx) {
                      return state.store->list(tx, org_id, query.limit(), query.cursor());
                    });
                    nlohmann::json items = nlohmann::json::array();
                    for (const auto& m : page.items) items.push_back(member_json(m));
                    return list_response(200, std::move(items), page.next_cursor);
                  },
              .needs_org = true,
              .summary = "The organisation's members, in the order they joined.",
              .tag = "identity"});

  router.add({.method = Method::kPost,
              .pattern = "/v1/members",
              .handler =
                  [&state](const Request& req, const Principal& p) {
                    const std::string& org_id = *p.org_id;
                    auto body = parse_json_body(req);
                    JsonObjectReader in(body);
                    std::string email =
                        validated_email(in.required_string("email", kMaxEmailBytes));
                    std::string role = validated_role(in);
                    in.finish();
                    auto member = state.pool->transact("member_add", [&](Tx& tx) {
                      return state.store->add_by_email(tx, org_id, email, role, actor_of(req, p),
                                                       authority_of(p));
                    });
                    return json_response(201, member_json(member));
                  },
              .needs_org = true,
              .scope = "members:write",
              .changes_credentials = true,
              .summary = "Add an existing user to the organisation by email.",
              .tag = "identity"});

  router.add({.method = Method::kPatch,
              .pattern = "/v1/members/{user_id}",
              .handler =
                  [&state](const Request& req, const Principal& p) {
                    const std::string& org_id = *p.org_id;
                    auto body = parse_json_body(req);
                    JsonObjectReader in(body);
                    std::string role = validated_role(in);
                    in.finish();
                    std::string user_id = member_id(req);
                    auto member = state.pool->transact("member_set_role", [&](Tx& tx) {
                      return state.store->set_role(tx, org_id, user_id, role, actor_of(req, p),
                                                   authority_of(p));
                    });
                    if (!member) throw no_such_member();
                    return json_response(200, member_json(*member));
                  },
              .needs_org = true,
              .scope = "members:write",
              .changes_credentials = true,
              .summary = "Change a member's role.",
              .tag = "identity"});

  router.add({.method = Method::kDelete,
              .pattern = "/v1/members/{user_id}",
              .handler =
                  [&state](const Request& req, const Principal& p) {
                    const std::string& org_id = *p.org_id;
                    std::string user_id = member_id(req);
                    // Leaving needs no permission; removing someone else does.
                    bool leaving = user_id == p.user.id;
                    if (!leaving) require_scope(p, "members:write");
                    auto authority =
                        leaving ? identity::OwnerAuthority::kMayManageOwners : authority_of(p);
                    bool removed = state.pool->transact("member_remove", [&](Tx& tx) {
                      return state.store->remove(tx, org_id, user_id, actor_of(req, p), authority);
                    });
                    if (!removed) {
                      throw no_such_member();
                    }
                    Response r;
                    r.status = 204;
                    return r;
                  },
              .needs_org = true,
              .changes_credentials = true,
              .summary = "Remove a member from the organisation (or leave it).",
              .tag = "identity"});
}

}  // namespace gpurent::http
