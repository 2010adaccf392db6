// FleetReports: the platform admins' reads of what the fleet reported (API.md "Admin"): the
// node list with each node's latest telemetry, a node's telemetry history over a window,
// and its health history page by page. The windows and page rules live here, not in the
// routes; each read is one connection, no transaction (they need no common snapshot).
#pragma once

#include "core/clock.h"
#include "core/db_pool.h"
#include "core/paging.h"
#include "inventory/node_health_log.h"
#include "inventory/node_store.h"

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace gpurent::inventory {

struct NodeListItem {
  NodeRecord node;
  // Its latest telemetry's time and hottest GPU, so the fleet overview colours each node
  // without asking for every node's detail; none before its first sample.
  std::optional<TelemetrySummary> telemetry;
};

struct TelemetryWindow {
  Timestamp from;
  Timestamp to;
  std::vector<TelemetryPoint> points;  // oldest first
};

// The longest telemetry window one request reads, and its rows (a week of one-minute
// samples).
inline constexpr auto kMaxTelemetryWindow = std::chrono::hours(24 * 7);
inline constexpr int kMaxTelemetryRows = 7 * 24 * 60;

class FleetReports {
 public:
  // `health_log` absent: no telemetry in the list, and no histories (not_found).
  FleetReports(PgPool& pool, const Clock& clock, NodeStore& nodes, NodeHealthLog* health_log)
      : pool_(pool), clock_(clock), nodes_(nodes), health_log_(health_log) {}

  // Nodes, oldest first. invalid_request naming state for one that is not a node state.
  Page<NodeListItem> nodes(const NodeFilter& filter, int limit,
                           const std::optional<std::string>& cursor);

  // The node's samples in [from, to): by default the 24 hours up to now inclusive (a sample
  // taken this instant is shown), `from` 24 hours before `to`. invalid_request naming from
  // when it is not before `to` or more than kMaxTelemetryWindow before it; not_found for no
  // such node.
  TelemetryWindow telemetry(const std::string& node_id, std::optional<Timestamp> from,
                            std::optional<Timestamp> to);

  // The node's health events, newest first, `limit` a page after `cursor` (a next_cursor
  // of this list; invalid_request naming cursor otherwise). not_found for no such node.
  Page<HealthEvent> health_events(const std::string& node_id, int limit,
                                  const std::optional<std::string>& cursor);

 private:
  PgPool& pool_;
  const Clock& clock_;
  NodeStore& nodes_;
  NodeHealthLog* health_log_;
};

}  // namespace gpurent::inventory
