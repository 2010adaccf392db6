// BMC routes: each reads its input and makes one NodePower call; the password goes in, never
// out.
#include "api/handlers/bmc_handlers.h"

#include "api/auth.h"
#include "api/handlers/json_values.h"
#include "api/handlers/query_params.h"
#include "api/json_body.h"
#include "api/responses.h"
#include "core/error.h"
#include "core/id.h"

namespace gpurent::http {
namespace {

std::string node_id_of(const Request& req) {
  return path_id(req, "id", id_prefix::kNode, "No such node.");
}

nlohmann::json settings_json(const std::string& node_id, const bmc::BmcSettings& s) {
  return {{"node_id", node_id},
          {"url", s.url},
          {"system_id", optional_json(s.system_id)},
          {"username", s.username},
          {"pinned_sha256", optional_json(s.pinned_sha256)},
          {"updated_at", optional_json(s.updated_at)},
          {"updated_by", optional_json(s.updated_by)}};
}

std::pair<bmc::BmcSettings, std::string> read_settings(const Request& req) {
  auto body = parse_json_body(req);
  JsonObjectReader in(body);
  bmc::BmcSettings s{.url = in.required_string("url", bmc::kMaxBmcUrlBytes),
                     .system_id = in.optional_string("system_id", bmc::kMaxBmcNameBytes),
                     .username = in.required_string("username", bmc::kMaxBmcNameBytes),
                     // 64 hex digits, with a colon between each pair at most.
                     .pinned_sha256 = in.optional_string("pinned_sha256", 95)};
  std::string password = in.required_string("password", bmc::kMaxBmcPasswordBytes);
  in.finish();
  return {std::move(s), std::move(password)};
}

std::string read_action(const Request& req) {
  auto body = parse_json_body(req);
  JsonObjectReader in(body);
  std::string action = in.required_string("action", 32);
  in.finish();
  return action;
}

}  // namespace

void add_bmc_routes(Router& router, BmcRoutesState& state) {
  router.add({.method = Method::kPut,
              .pattern = "/v1/admin/nodes/{id}/bmc",
              .handler =
                  [&state](const Request& req, const Principal& p) {
                    std::string id = node_id_of(req);
                    auto [settings, password] = read_settings(req);
                    return json_response(
                        200, settings_json(id, state.power->set(id, std::move(settings), password,
                                                                actor_of(req, p))));
                  },
              .platform_admin = true,
              .summary = "Set the node's BMC {url, username, password, system_id?, "
                         "pinned_sha256?}: the password is kept sealed and never shown "
                         "(platform admins).",
              .tag = "admin"});
  router.add({.method = Method::kGet,
              .pattern = "/v1/admin/nodes/{id}/bmc",
              .handler =
                  [&state](const Request& req, const Principal&) {
                    std::string id = node_id_of(req);
                    return json_response(200, settings_json(id, state.power->get(id)));
                  },
              .platform_admin = true,
              .summary = "The node's BMC, without its password (platform admins).",
              .tag = "admin"});
  router.add({.method = Method::kPost,
              .pattern = "/v1/admin/nodes/{id}/power",
              .handler =
                  [&state](const Request& req, const Principal& p) {
                    std::string id = node_id_of(req);
                    auto r = state.power->act(id, read_action(req), actor_of(req, p));
                    nlohmann::json state_json = nullptr;
                    if (r.power_state) state_json = std::string(bmc::to_string(*r.power_state));
                    return json_response(200, {{"node_id", r.node_id},
                                               {"action", r.action},
                                               {"reset_type", std::string(to_string(r.reset_type))},
                                               {"power_state", state_json}});
                  },
              .platform_admin = true,
              .summary = "A power action through the node's BMC {action: on, off, shutdown, "
                         "restart, force_restart, cycle}; only for a node in maintenance or "
                         "failed (platform admins).",
              .tag = "admin"});
}

}  // namespace gpurent::http
