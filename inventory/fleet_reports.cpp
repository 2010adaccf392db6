// FleetReports: the admins' reads of nodes and their agents' reports.
#include "inventory/fleet_reports.h"

#include "core/error.h"
#include "inventory/node_state.h"

#include <charconv>

namespace gpurent::inventory {
namespace {

Error no_such_node() {
  return Error(ErrorCode::kNotFound, "No such node.");
}

// A health-events cursor: the id of the last event shown, a positive number.
std::optional<std::int64_t> events_before(const std::optional<std::string>& cursor) {
  if (!cursor) return std::nullopt;
  std::int64_t before = 0;
  auto [end, ec] = std::from_chars(cursor->data(), cursor->data() + cursor->size(), before);
  if (ec != std::errc() || end != cursor->data() + cursor->size() || before <= 0) {
    throw Error::invalid_field("cursor", "is not a cursor of this list");
  }
  return before;
}

}  // namespace

Page<NodeListItem> FleetReports::nodes(const NodeFilter& filter, int limit,
                                       const std::optional<std::string>& cursor) {
  if (filter.state && !parse_node_state(*filter.state)) {
    throw Error::invalid_field("state", "is not a node state");
  }
  return pool_.read("node_list", [&](Tx& tx) {
    auto page = nodes_.list(tx, filter, limit, cursor);
    std::map<std::string, TelemetrySummary> telemetry;
    if (health_log_) {
      std::vector<std::string> ids;
      for (const auto& n : page.items) ids.push_back(n.id);
      telemetry = health_log_->summaries(tx, ids);
    }
    Page<NodeListItem> out{.next_cursor = page.next_cursor};
    for (auto& n : page.items) {
      auto t = telemetry.find(n.id);
      out.items.push_back({std::move(n), t == telemetry.end()
                                             ? std::nullopt
                                             : std::optional<TelemetrySummary>(t->second)});
    }
    return out;
  });
}

TelemetryWindow FleetReports::telemetry(const std::string& node_id, std::optional<Timestamp> from,
                                        std::optional<Timestamp> to) {
  TelemetryWindow w;
  w.to = to.value_or(clock_.now() + std::chrono::microseconds(1));
  w.from = from.value_or(w.to - std::chrono::hours(24));
  if (w.from >= w.to) throw Error::invalid_field("from", "must be before `to`");
  if (w.to - w.from > kMaxTelemetryWindow) {
    throw Error::invalid_field("from", "must be at most 7 days before `to`");
  }
  if (!health_log_) throw no_such_node();
  auto points =
      pool_.read("node_telemetry", [&](Tx& tx) -> std::optional<std::vector<TelemetryPoint>> {
        if (!nodes_.health_state(tx, node_id)) return std::nullopt;
        return health_log_->history(tx, node_id, w.from, w.to, kMaxTelemetryRows);
      });
  if (!points) throw no_such_node();
  w.points = std::move(*points);
  return w;
}

Page<HealthEvent> FleetReports::health_events(const std::string& node_id, int limit,
                                              const std::optional<std::string>& cursor) {
  auto before = events_before(cursor);
  if (!health_log_) throw no_such_node();
  auto events =
      pool_.read("node_health_events", [&](Tx& tx) -> std::optional<std::vector<HealthEvent>> {
        if (!nodes_.health_state(tx, node_id)) return std::nullopt;
        // One more than the page: whether there is a next one.
        return health_log_->events(tx, node_id, limit + 1, before);
      });
  if (!events) throw no_such_node();
  Page<HealthEvent> page{.items = std::move(*events)};
  if (static_cast<int>(page.items.size()) > limit) {
    page.items.pop_back();
    page.next_cursor = std::to_string(page.items.back().id);
  }
  return page;
}

}  // namespace gpurent::inventory
