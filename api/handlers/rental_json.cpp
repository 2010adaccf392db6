// The one encoder of a rental, for the API's answers and the webhooks' rental events.
#include "api/handlers/rental_json.h"

#include "api/handlers/json_values.h"

namespace gpurent::http {
namespace {

// What the owner may ask of the rental in its state, by name (scheduler/rental_state.h).
nlohmann::json rental_actions_json(scheduler::RentalState state) {
  nlohmann::json out = nlohmann::json::array();
  for (auto a : scheduler::allowed_actions(state)) out.push_back(scheduler::to_string(a));
  return out;
}

// The states the rental may still come to (scheduler::reachable_from), by name.
nlohmann::json rental_reachable_json(scheduler::RentalState state) {
  nlohmann::json out = nlohmann::json::array();
  for (auto s : scheduler::reachable_from(state)) out.push_back(scheduler::to_string(s));
  return out;
}

}  // namespace

nlohmann::json period_json(const scheduler::Period& p) {
  return {{"start", time_json(p.start)}, {"end", time_json(p.end)}};
}

nlohmann::json rental_json(const scheduler::RentalRecord& r) {
  return {{"id", r.id},
          {"name", r.name},
          {"state", scheduler::to_string(r.state)},
          {"final", scheduler::is_final(r.state)},
          {"allowed_actions", rental_actions_json(r.state)},
          {"reachable_states", rental_reachable_json(r.state)},
          {"gpu_model", r.gpu_model},
          {"gpu_count", r.gpu_count},
          {"interconnect", scheduler::to_string(r.link_need)},
          {"node_id", optional_json(r.node_id)},
          {"gpu_indices", r.gpu_indices},
          {"period", period_json(r.period)},
          {"days", r.days},
          {"image", {{"id", r.image_id}}},
          {"ssh_key_ids", r.ssh_key_ids},
          // Filled in by the owner's views, which read the node: null until the rental is active.
          {"ssh", nullptr},
          {"price", {{"per_day", r.price_per_day.to_json()}, {"total", r.total_price().to_json()}}},
          {"pending_expires_at", optional_json(r.pending_expires_at)},
          {"created_at", time_json(r.created_at)},
          {"created_by", r.created_by},
          {"state_changed_at", time_json(r.state_changed_at)}};
}

}  // namespace gpurent::http
