// The events a webhook can subscribe to, and the one it cannot (the ping its owner sends).
#pragma once

#include <array>
#include <string_view>

namespace gpurent::webhooks {

// A rental's moves are "rental." + the state it moved to (scheduler/records.h);
// rental.expiring comes a configured time before a running rental's end; rental.notice with each
// notice to the rental's org (scheduler/notices.h); billing.low_balance when an org's available
// balance falls below the threshold.
inline constexpr std::array<std::string_view, 12> kEventTypes{
    "rental.pending",  "rental.scheduled",   "rental.provisioning", "rental.active",
    "rental.expiring", "rental.releasing",   "rental.ended",        "rental.cancelled",
    "rental.failed",   "rental.interrupted", "rental.notice",       "billing.low_balance"};

// Sent only by POST /v1/webhooks/{id}/test, to that webhook, whatever it subscribes to.
inline constexpr std::string_view kPingEvent = "webhook.ping";

inline bool is_event_type(std::string_view name) {
  for (auto t : kEventTypes) {
    if (t == name) return true;
  }
  return false;
}

}  // namespace gpurent::webhooks
