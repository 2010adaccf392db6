// The health rules over one heartbeat, and what changed against what is stored.
#include "fleet/heartbeat_verdict.h"

#include <algorithm>

namespace gpurent::fleet {
namespace {

namespace proto = agent_proto;

using inventory::Health;

// A verdict's severity as a recorded health: what asks nothing of anyone (info) is ok.
Health health_of(proto::Severity severity) {
  switch (severity) {
    case proto::Severity::kWarning:
      return Health::kWarning;
    case proto::Severity::kCritical:
      return Health::kCritical;
    case proto::Severity::kOk:
    case proto::Severity::kInfo:
      break;
  }
  return Health::kOk;
}

JudgedHealth judged(const proto::HealthVerdict& v) {
  JudgedHealth out{health_of(v.severity), ""};
  if (out.health == Health::kOk) return out;
  for (const auto& f : v.findings) {
    if (f.severity != v.severity) continue;
    out.reason += (out.reason.empty() ? "" : "; ") + f.reason;
  }
  return out;
}

std::string xid_reason(const proto::XidEvent& e) {
  return "XID " + std::to_string(e.xid) + " (" + std::string(proto::xid_description(e.xid)) +
         "): " + e.message;
}

// The previous heartbeat's counters of GPU `index`, as the rules take a previous sample.
std::optional<proto::GpuTelemetry> previous_of(const std::optional<HeartbeatCounters>& previous,
                                               int index) {
  if (!previous) return std::nullopt;
  for (const auto& c : previous->gpus) {
    if (c.index != index) continue;
    proto::GpuTelemetry t;
    t.index = index;
    t.ecc_volatile_dbe = c.ecc_volatile_dbe;
    t.nvlink_crc_errors = c.nvlink_crc_errors;
    t.pcie_replays = c.pcie_replays;
    return t;
  }
  return std::nullopt;
}

}  // namespace

HeartbeatCounters counters_of(const proto::Heartbeat& beat) {
  HeartbeatCounters out{beat.sent_at, {}};
  for (const auto& g : beat.gpus) {
    out.gpus.push_back({g.index, g.ecc_volatile_dbe, g.nvlink_crc_errors, g.pcie_replays});
  }
  return out;
}

HeartbeatVerdict judge_heartbeat(const std::string& node_id, Timestamp at,
                                 const proto::Heartbeat& beat,
                                 const std::optional<HeartbeatCounters>& previous) {
  HeartbeatVerdict out;
  std::vector<std::optional<int>> event_gpu(beat.events.size());
  std::vector<proto::HealthVerdict> verdicts;
  auto since = std::chrono::seconds(0);
  if (previous && beat.sent_at > previous->at) {
    since = std::chrono::duration_cast<std::chrono::seconds>(beat.sent_at - previous->at);
  }
  for (const auto& gpu : beat.gpus) {
    std::vector<proto::XidEvent> on_gpu;
    for (std::size_t i = 0; i < beat.events.size(); ++i) {
      const auto& e = beat.events[i];
      if (event_gpu[i] || !gpu.pci_bus_id || !proto::same_pci_device(e.pci, *gpu.pci_bus_id))
        continue;
      event_gpu[i] = gpu.index;
      on_gpu.push_back(e);
    }
    auto verdict = proto::gpu_health(previous_of(previous, gpu.index), gpu, on_gpu, since);
    out.gpus[gpu.index] = judged(verdict);
    verdicts.push_back(std::move(verdict));
  }
  // An event on a bus address no reported GPU has still counts for the node: the driver saw
  // a fault on this machine.
  proto::HealthVerdict unattributed;
  for (std::size_t i = 0; i < beat.events.size(); ++i) {
    const auto& e = beat.events[i];
    auto severity = proto::severity_of(e);
    if (!event_gpu[i]) {
      unattributed.findings.push_back({severity, "PCI " + e.pci + ": " + xid_reason(e)});
      auto as_health = severity == proto::Severity::kInfo ? proto::Severity::kOk : severity;
      unattributed.severity = std::max(unattributed.severity, as_health);
    }
    out.xid_events.push_back({.node_id = node_id,
                              .at = e.at.value_or(at),
                              .gpu_index = event_gpu[i],
                              .kind = "xid",
                              .severity = std::string(proto::to_string(severity)),
                              .xid = e.xid,
                              .reason = xid_reason(e)});
  }
  verdicts.push_back(std::move(unattributed));
  // Silence is the lifecycle worker's to judge: a heartbeat is never silent.
  out.node = judged(proto::node_health(verdicts, std::chrono::seconds(0), std::chrono::seconds(0)));
  return out;
}

std::vector<inventory::HealthEvent> health_changes(const std::string& node_id, Timestamp at,
                                                   const StoredHealth& stored,
                                                   const HeartbeatVerdict& now) {
  std::vector<inventory::HealthEvent> out;
  auto change = [&](std::optional<int> gpu, Health before, const JudgedHealth& after) {
    if (before == after.health || (before == Health::kUnknown && after.health == Health::kOk))
      return;
    out.push_back({.node_id = node_id,
                   .at = at,
                   .gpu_index = gpu,
                   .kind = "health",
                   .severity = std::string(to_string(after.health)),
                   .reason = after.health == Health::kOk
                                 ? "back to ok from " + std::string(to_string(before))
                                 : after.reason});
  };
  change(std::nullopt, stored.node, now.node);
  for (const auto& [index, health] : now.gpus) {
    auto it = stored.gpus.find(index);
    change(index, it == stored.gpus.end() ? Health::kUnknown : it->second, health);
  }
  return out;
}

std::vector<inventory::GpuPoint> points_of(const proto::Heartbeat& beat) {
  std::vector<inventory::GpuPoint> out;
  for (const auto& g : beat.gpus) {
    out.push_back({.index = g.index,
                   .temperature_c = g.temperature_c,
                   .power_w = g.power_w,
                   .utilization_pct = g.utilization_pct,
                   .memory_used_mib = g.memory_used_mib,
                   .throttle_reasons = {},
                   .sm_clock_mhz = g.sm_clock_mhz});
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.index < b.index; });
  return out;
}

}  // namespace gpurent::fleet
