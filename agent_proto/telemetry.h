// What an agent observes on its GPUs: per-GPU telemetry (from `nvidia-smi --query-gpu` or the
// simulated backend) and kernel-log events (XID lines). Plain values shared by the agent,
// which reads them, the heartbeat message, which carries them, and the health rules, which
// judge them. Every field a reader may not have is optional: a driver that prints
// `[N/A]` or a query that did not ask for a field leaves it absent, never zero.
#pragma once

#include "agent_proto/protocol_error.h"
#include "core/clock.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gpurent::agent_proto {

struct GpuTelemetry {
  int index = 0;                          // nvidia-smi's index on the node
  std::optional<std::string> uuid;        // "GPU-…"
  std::optional<std::string> name;        // "NVIDIA H200"
  std::optional<std::string> pci_bus_id;  // "00000000:83:00.0", as nvidia-smi prints it
  std::optional<double> temperature_c;
  std::optional<double> shutdown_temperature_c;  // temperature.gpu.tlimit-free form: the limit
  std::optional<double> power_w;
  std::optional<double> power_limit_w;
  std::optional<int> utilization_pct;
  std::optional<int> sm_clock_mhz;  // the SM clock now (clocks.current.sm)
  std::optional<std::int64_t> memory_used_mib;
  std::optional<std::int64_t> memory_total_mib;
  // ECC error counts (volatile: since the driver loaded; aggregate: lifetime).
  std::optional<std::int64_t> ecc_volatile_sbe;
  std::optional<std::int64_t> ecc_volatile_dbe;
  std::optional<std::int64_t> ecc_aggregate_dbe;
  std::optional<std::int64_t> retired_pages_sbe;
  std::optional<std::int64_t> retired_pages_dbe;
  std::optional<bool> retired_pages_pending;
  std::optional<std::int64_t> remapped_rows_correctable;
  std::optional<std::int64_t> remapped_rows_uncorrectable;
  std::optional<bool> remapped_rows_pending;
  std::optional<bool> remapped_rows_failure;
  // Active clock throttle ("clocks_event") reasons, by nvidia-smi's names without the
  // prefix: "hw_thermal_slowdown", "sw_thermal_slowdown", "hw_power_brake_slowdown",
  // "sw_power_cap", … Only the active ones are listed.
  std::vector<std::string> throttle_reasons;
  std::optional<std::int64_t> nvlink_crc_errors;  // summed over the GPU's links
  std::optional<int> nvlink_links_down;
  std::optional<std::int64_t> pcie_replays;

  bool operator==(const GpuTelemetry&) const = default;
};

// One `NVRM: Xid` kernel-log line, parsed.
struct XidEvent {
  std::string pci;  // "0000:83:00" (as the line gives it)
  int xid = 0;
  std::optional<int> pid;              // absent on lines that carry none ("pid='<unknown>'")
  std::optional<std::string> process;  // the process name, when the line carries one
  std::string message;                 // the rest of the line after the code
  std::optional<Timestamp> at;         // when the line carries a time (dmesg -T, syslog, …)

  bool operator==(const XidEvent&) const = default;
};

// JSON as the heartbeat and `gpurent-agent probe` print them: absent optionals are left
// out. The readers throw ProtocolError naming the field on a value
// of the wrong type or out of range (agent_proto/protocol_error.h); unknown members are
// refused.
nlohmann::json to_json(const GpuTelemetry& gpu);
nlohmann::json to_json(const XidEvent& event);
GpuTelemetry gpu_telemetry_from_json(const nlohmann::json& value, const std::string& path);
XidEvent xid_event_from_json(const nlohmann::json& value, const std::string& path);

}  // namespace gpurent::agent_proto
