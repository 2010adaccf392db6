// Tenant operation routes: each reads its input and makes one use-case call.
#include "api/handlers/tenant_operation_handlers.h"

#include "api/auth.h"
#include "api/handlers/json_values.h"
#include "api/handlers/rental_json.h"
#include "api/json_body.h"
#include "api/responses.h"
#include "core/error.h"
#include "core/id.h"
#include "core/money.h"

namespace gpurent::http {
namespace {

std::string rental_of(const Request& req) {
  return path_id(req, "id", id_prefix::kRental, "No such rental.");
}

std::string read_choice(const Request& req) {
  auto body = parse_json_body(req);
  JsonObjectReader in(body);
  std::string choice = in.required_string("choice", 32);
  in.finish();
  if (choice != "other_node" && choice != "shift" && choice != "cancel") {
    throw Error::invalid_field("choice", "must be other_node, shift or cancel");
  }
  return choice;
}

scheduler::Rentals::Checkpoint read_checkpoint(const Request& req) {
  auto body = parse_json_body(req);
  JsonObjectReader in(body);
  scheduler::Rentals::Checkpoint out;
  out.command = in.required_string("command", 4096);
  if (const auto* t = in.optional_value("timeout_s")) {
    if (!t->is_number_integer() || t->get<long long>() < 1 || t->get<long long>() > 86400) {
      throw Error::invalid_field("timeout_s", "must be a whole number of seconds, 1 to 86400");
    }
    out.timeout_s = t->get<int>();
  }
  in.finish();
  return out;
}

nlohmann::json checkpoint_json(const scheduler::Rentals::Checkpoint& c) {
  return {{"command", optional_json(c.command)}, {"timeout_s", c.timeout_s}};
}

}  // namespace

void add_tenant_operation_routes(Router& router, TenantOperationRoutesState& state) {
  router.add({.method = Method::kPost,
              .pattern = "/v1/rentals/{id}/notices/{notice_id}/choice",
              .handler =
                  [&state](const Request& req, const Principal& p) {
                    std::string id = rental_of(req);
                    std::string notice =
                        path_id(req, "notice_id", id_prefix::kNotice, "No such notice.");
                    auto answered = state.maintenance->choose(
                        *p.org_id, id, notice, read_choice(req), actor_of(req, p).user_id);
                    return json_response(200, scheduler::notice_json(answered));
                  },
              .needs_org = true,
              .scope = "rentals:write",
              .summary = "Answer a maintenance notice {choice: other_node | shift | cancel}, "
                         "applied at once: another node now, a start after the window, or "
                         "cancel free.",
              .tag = "rentals"});
  router.add({.method = Method::kPost,
              .pattern = "/v1/rentals/{id}/reboot",
              .handler =
                  [&state](const Request& req, const Principal& p) {
                    auto rental = state.rentals->reboot(caller_of(req, p), rental_of(req));
                    return json_response(202, rental_json(rental));
                  },
              .needs_org = true,
              .scope = "rentals:write",
              .summary = "Reboot an active rental's node (a rental of the whole node): "
                         "provisioning until the agent has checked the access again.",
              .tag = "rentals"});
  router.add({.method = Method::kPut,
              .pattern = "/v1/rentals/{id}/checkpoint",
              .handler =
                  [&state](const Request& req, const Principal& p) {
                    auto set = state.rentals->set_checkpoint(caller_of(req, p), rental_of(req),
                                                             read_checkpoint(req));
                    return json_response(200, checkpoint_json(set));
                  },
              .needs_org = true,
              .scope = "rentals:write",
              .summary = "Set the command {command, timeout_s} the node's agent runs as the "
                         "rental's login when a notice reaches it, so a job can save first.",
              .tag = "rentals"});
  router.add({.method = Method::kGet,
              .pattern = "/v1/rentals/{id}/checkpoint",
              .handler =
                  [&state](const Request& req, const Principal& p) {
                    return json_response(200, checkpoint_json(state.rentals->checkpoint(
                                                  caller_of(req, p), rental_of(req))));
                  },
              .needs_org = true,
              .scope = "rentals:read",
              .summary = "The rental's checkpoint command and its time limit.",
              .tag = "rentals"});
  router.add({.method = Method::kDelete,
              .pattern = "/v1/rentals/{id}/checkpoint",
              .handler =
                  [&state](const Request& req, const Principal& p) {
                    auto cleared = state.rentals->set_checkpoint(caller_of(req, p), rental_of(req),
                                                                 {std::nullopt, 600});
                    return json_response(200, checkpoint_json(cleared));
                  },
              .needs_org = true,
              .scope = "rentals:write",
              .summary = "Clear the rental's checkpoint command.",
              .tag = "rentals"});
  router.add({.method = Method::kGet,
              .pattern = "/v1/rentals/{id}/handovers",
              .handler =
                  [&state](const Request& req, const Principal& p) {
                    nlohmann::json items = nlohmann::json::array();
                    for (const auto& h :
                         state.rentals->handovers(caller_of(req, p), rental_of(req))) {
                      auto item = scheduler::handover_json(h);
                      item["credited"] = h.credited_minor
                                             ? Money(*h.credited_minor, state.currency).to_json()
                                             : nlohmann::json(nullptr);
                      items.push_back(std::move(item));
                    }
                    return json_response(200, {{"items", items}});
                  },
              .needs_org = true,
              .scope = "rentals:read",
              .summary = "The rental's handovers, oldest first: swaps to a spare (a fault, a "
                         "maintenance window), reboots and power actions, each with what it "
                         "credited.",
              .tag = "rentals"});
}

}  // namespace gpurent::http
