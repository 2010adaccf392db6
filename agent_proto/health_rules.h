// GPU and node health from telemetry, XID events and heartbeat silence: pure rules after
// shared/reference/health-rules.md (NVIDIA DCGM's health watches).
#pragma once

#include "agent_proto/telemetry.h"

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpurent::agent_proto {

// Ordered: a verdict is the worst of its findings. kInfo is an event worth recording that
// changes nothing (XID 13, an application's own fault); a verdict reads it as ok.
enum class Severity { kOk, kInfo, kWarning, kCritical };

// "ok", "info", "warning", "critical".
std::string_view to_string(Severity severity);
std::optional<Severity> parse_severity(std::string_view text);

// The XID table of health-rules.md; codes it does not name follow NVIDIA's catalog
// (shared/reference/xid_catalog.csv): an immediate action of RESTART_APP (the tenant's
// program) is kInfo, and so is IGNORE when NVIDIA asks for no follow-up; anything that
// needs a GPU reset, a reboot, a mechanical check or NVIDIA support is kWarning. The
// NVLink5 codes 144-150 are kCritical when the driver calls the error "Fatal" (like XID 74)
// and kWarning otherwise. Codes in neither table are kWarning: the driver reported an error
// nobody has classified, so the node drains rather than takes new work.
Severity severity_of(const XidEvent& event);
// What the code means, in a few words: "GPU has fallen off the bus", "unclassified XID".
std::string_view xid_description(int xid);

struct Finding {
  Severity severity = Severity::kOk;
  std::string reason;  // one English sentence for admins, e.g. "GPU 3: XID 79 (...)"

  bool operator==(const Finding&) const = default;
};

struct HealthVerdict {
  Severity severity = Severity::kOk;  // the worst finding, kInfo read as kOk
  std::vector<Finding> findings;      // every finding, kInfo included, in rule order

  bool operator==(const HealthVerdict&) const = default;
};

// Thresholds from health-rules.md; tests and operators may tighten them.
struct GpuHealthLimits {
  std::int64_t max_retired_pages = 63;     // sbe + dbe at or above this: critical
  double nvlink_crc_critical_per_s = 100;  // CRC errors per second at or above: critical
  double pcie_replays_per_minute = 16;     // above: warning (Gen4 x16: ~1 per lane a minute)
};

// One GPU's health from its current telemetry, the previous sample (for counters that only
// matter when they rise) and the XID events seen on it since the previous sample.
// `since_previous` is the time between the samples; zero when unknown, in which case rates are
// judged per sample (a sample standing for a minute).
//   critical: volatile double-bit ECC count rose (or is above zero with no previous sample),
//     retired pages >= max_retired_pages, remap failure, temperature at or above the GPU's
//     limit, an NVLink link down, NVLink CRC errors at or above the critical rate, and the
//     critical XIDs;
//   warning: retirement or remap pending, a thermal or power-brake slowdown active,
//     NVLink CRC errors rising, PCIe replays above the rate, and the warning XIDs.
// A slowdown from the software power cap alone is a loaded GPU at its power limit, not a fault.
HealthVerdict gpu_health(const std::optional<GpuTelemetry>& previous, const GpuTelemetry& current,
                         const std::vector<XidEvent>& events,
                         std::chrono::seconds since_previous = std::chrono::seconds(0),
                         const GpuHealthLimits& limits = {});

// True when an XID line's bus address ("0000:83:00", "83:00", "0000:83:00.0") names the same
// device as nvidia-smi's pci.bus_id ("00000000:83:00.0"): how events find their GPU.
bool same_pci_device(std::string_view xid_pci, std::string_view bus_id);

// The node's health: the worst of its GPUs' verdicts and of the heartbeat's silence.
// Heartbeats are due every `heartbeat_interval`; silent for two intervals (one missed) is a
// warning, silent for more than `silence_limit` (default 60 s) is critical: unreachable.
HealthVerdict node_health(const std::vector<HealthVerdict>& gpus,
                          std::chrono::seconds since_last_heartbeat,
                          std::chrono::seconds heartbeat_interval,
                          std::chrono::seconds silence_limit = std::chrono::seconds(60));

}  // namespace gpurent::agent_proto
