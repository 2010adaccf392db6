// Notice routes: one read each for the caller's org, which every statement fixes, so another
// org's rental is as unknown as one that does not exist.
#include "api/handlers/notice_handlers.h"

#include "api/handlers/query_params.h"
#include "api/responses.h"
#include "core/error.h"
#include "core/id.h"

namespace gpurent::http {
namespace {

constexpr int kNoticesShown = 100;

nlohmann::json notices_json(const std::vector<scheduler::RentalNotice>& notices) {
  nlohmann::json items = nlohmann::json::array();
  for (const auto& n : notices) items.push_back(scheduler::notice_json(n));
  return {{"items", std::move(items)}};
}

}  // namespace

void add_notice_routes(Router& router, NoticeRoutesState& state) {
  router.add({.method = Method::kGet,
              .pattern = "/v1/notices",
              .handler =
                  [&state](const Request& req, const Principal& p) {
                    QueryParams query(req, {});
                    auto notices = state.pool->read("notice_list", [&](Tx& tx) {
                      return state.notices->list(tx, *p.org_id, std::nullopt, kNoticesShown);
                    });
                    return json_response(200, notices_json(notices));
                  },
              .needs_org = true,
              .scope = "rentals:read",
              .summary = "What the platform told the org about its rentals (moves for "
                         "maintenance, coming windows, faults), newest first, the latest 100.",
              .tag = "rentals"});
  router.add({.method = Method::kGet,
              .pattern = "/v1/rentals/{id}/notices",
              .handler =
                  [&state](const Request& req, const Principal& p) {
                    std::string id = path_id(req, "id", id_prefix::kRental, "No such rental.");
                    auto notices = state.pool->read("notice_rental", [&](Tx& tx) {
                      if (!state.rentals->get(tx, *p.org_id, id)) {
                        throw Error(ErrorCode::kNotFound, "No such rental.");
                      }
                      return state.notices->list(tx, *p.org_id, id, kNoticesShown);
                    });
                    return json_response(200, notices_json(notices));
                  },
              .needs_org = true,
              .scope = "rentals:read",
              .summary = "The rental's notices, newest first.",
              .tag = "rentals"});
}

}  // namespace gpurent::http
