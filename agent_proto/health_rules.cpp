// GPU and node health rules: XID classification, counter and threshold checks, heartbeat
// silence.
#include "agent_proto/health_rules.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdio>

namespace gpurent::agent_proto {
namespace {

struct XidRule {
  int xid;
  Severity severity;
  std::string_view what;
};

// health-rules.md names these; the rest come from the catalog's immediate actions.
constexpr std::array kXidRules = {
    XidRule{8, Severity::kInfo, "channel idle timeout (RESTART_APP)"},
    XidRule{13, Severity::kInfo, "graphics engine exception (application error)"},
    XidRule{31, Severity::kWarning, "GPU memory page fault"},
    XidRule{32, Severity::kInfo, "invalid push buffer stream (RESTART_APP)"},
    XidRule{43, Severity::kWarning, "GPU stopped processing"},
    XidRule{45, Severity::kInfo, "preemptive cleanup (application ended)"},
    XidRule{46, Severity::kWarning, "GPU timeout (RESET_GPU)"},
    XidRule{48, Severity::kCritical, "double-bit ECC error"},
    XidRule{54, Severity::kWarning, "power reduced clocking (CHECK_MECHANICALS)"},
    XidRule{61, Severity::kWarning, "PMU breakpoint (CONTACT_SUPPORT)"},
    XidRule{62, Severity::kWarning, "PMU halt error"},
    XidRule{63, Severity::kWarning, "ECC page retirement or row remap recorded"},
    XidRule{64, Severity::kCritical, "ECC page retirement or row remap failure"},
    XidRule{74, Severity::kCritical, "NVLink error"},
    XidRule{79, Severity::kCritical, "GPU has fallen off the bus"},
    XidRule{92, Severity::kWarning, "high single-bit ECC error rate"},
    XidRule{93, Severity::kWarning, "InfoROM erase limit exceeded (CONTACT_SUPPORT)"},
    XidRule{94, Severity::kWarning, "contained memory error"},
    XidRule{95, Severity::kCritical, "uncontained memory error"},
    XidRule{109, Severity::kWarning, "context switch timeout (RESET_GPU)"},
    XidRule{110, Severity::kWarning, "security fault (RESET_GPU)"},
    XidRule{119, Severity::kCritical, "GSP RPC timeout"},
    XidRule{120, Severity::kCritical, "GSP error"},
    XidRule{121, Severity::kWarning, "C2C link error (CONTACT_SUPPORT)"},
    XidRule{136, Severity::kWarning, "NVLink training failure (RESET_GPU)"},
    XidRule{137, Severity::kWarning, "NVLink privilege error (XID_137_FLOW)"},
    XidRule{140, Severity::kCritical, "unrecovered ECC error"},
    XidRule{143, Severity::kWarning, "GPU initialization error (RESET_GPU)"},
    XidRule{154, Severity::kWarning, "GPU recovery action changed"},
    XidRule{155, Severity::kWarning, "NVLink software-defined error (RESET_GPU)"},
    XidRule{156, Severity::kWarning, "resource retirement event (RESET_GPU)"},
    XidRule{157, Severity::kWarning, "resource retirement failure (CONTACT_SUPPORT)"},
    XidRule{158, Severity::kWarning, "GPU fatal timeout (RESET_GPU)"},
};

bool is_nvlink5(int xid) {
  return xid >= 144 && xid <= 150;
}

// NVLink5 lines say "<unit> Fatal XC0 ..." or "<unit> Nonfatal XC0 ...".
bool says_fatal(std::string_view message) {
  for (auto pos = message.find("Fatal"); pos != std::string_view::npos;
       pos = message.find("Fatal", pos + 1)) {
    bool word_start = pos == 0 || message[pos - 1] == ' ';
    bool word_end = pos + 5 == message.size() || message[pos + 5] == ' ';
    if (word_start && word_end) return true;
  }
  return false;
}

std::string gpu_name(const GpuTelemetry& gpu) {
  return "GPU " + std::to_string(gpu.index);
}

std::string number(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", x);
  return buf;
}

class Collector {
 public:
  explicit Collector(std::string who) : who_(std::move(who)) {}
  void add(Severity severity, const std::string& reason) {
    verdict_.findings.push_back({severity, who_.empty() ? reason : who_ + ": " + reason});
    auto as_health = severity == Severity::kInfo ? Severity::kOk : severity;
    verdict_.severity = std::max(verdict_.severity, as_health);
  }
  // A verdict passed on whole: its severity counts even where its findings say less.
  void add(const HealthVerdict& verdict) {
    for (const auto& f : verdict.findings) verdict_.findings.push_back(f);
    verdict_.severity = std::max(verdict_.severity, verdict.severity);
  }
  HealthVerdict take() { return std::move(verdict_); }

 private:
  std::string who_;
  HealthVerdict verdict_;
};

bool has_reason(const GpuTelemetry& gpu, std::string_view reason) {
  return std::find(gpu.throttle_reasons.begin(), gpu.throttle_reasons.end(), reason) !=
         gpu.throttle_reasons.end();
}

// ---- PCI addresses ----

struct PciAddress {
  unsigned domain = 0, bus = 0, device = 0;
  bool operator==(const PciAddress&) const = default;
};

bool hex(std::string_view s, unsigned& out) {
  if (s.empty() || s.size() > 8) return false;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out, 16);
  return ec == std::errc() && end == s.data() + s.size();
}

// "[domain:]bus:device[.function]"; the function is ignored (XID lines never carry it, and a
// GPU is function 0).
std::optional<PciAddress> parse_pci(std::string_view s) {
  if (auto dot = s.rfind('.'); dot != std::string_view::npos) s = s.substr(0, dot);
  PciAddress a;
  auto last = s.rfind(':');
  if (last == std::string_view::npos || !hex(s.substr(last + 1), a.device)) return std::nullopt;
  s = s.substr(0, last);
  auto first = s.rfind(':');
  if (!hex(s.substr(first == std::string_view::npos ? 0 : first + 1), a.bus)) return std::nullopt;
  if (first != std::string_view::npos && !hex(s.substr(0, first), a.domain)) return std::nullopt;
  return a;
}

}  // namespace

std::string_view xid_description(int xid) {
  for (const auto& r : kXidRules) {
    if (r.xid == xid) return r.what;
  }
  if (is_nvlink5(xid)) return "NVLink5 error";
  return "unclassified XID";
}

std::string_view to_string(Severity severity) {
  switch (severity) {
    case Severity::kOk:
      return "ok";
    case Severity::kInfo:
      return "info";
    case Severity::kWarning:
      return "warning";
    case Severity::kCritical:
      return "critical";
  }
  return "critical";
}

std::optional<Severity> parse_severity(std::string_view text) {
  for (auto s : {Severity::kOk, Severity::kInfo, Severity::kWarning, Severity::kCritical}) {
    if (to_string(s) == text) return s;
  }
  return std::nullopt;
}

Severity severity_of(const XidEvent& event) {
  for (const auto& r : kXidRules) {
    if (r.xid == event.xid) return r.severity;
  }
  if (is_nvlink5(event.xid)) {
    return says_fatal(event.message) ? Severity::kCritical : Severity::kWarning;
  }
  return Severity::kWarning;
}

bool same_pci_device(std::string_view xid_pci, std::string_view bus_id) {
  auto a = parse_pci(xid_pci);
  auto b = parse_pci(bus_id);
  return a && b && *a == *b;
}

HealthVerdict gpu_health(const std::optional<GpuTelemetry>& previous, const GpuTelemetry& current,
                         const std::vector<XidEvent>& events, std::chrono::seconds since_previous,
                         const GpuHealthLimits& limits) {
  Collector out(gpu_name(current));
  const GpuTelemetry* prev = previous ? &*previous : nullptr;

  for (const auto& e : events) {
    out.add(severity_of(e), "XID " + std::to_string(e.xid) + " (" +
                                std::string(xid_description(e.xid)) + "): " + e.message);
  }

  // Volatile counts restart at zero when the driver reloads: a count below the previous one
  // is a fresh start, compared with zero.
  if (current.ecc_volatile_dbe) {
    std::int64_t before = 0;
    if (prev && prev->ecc_volatile_dbe && *prev->ecc_volatile_dbe <= *current.ecc_volatile_dbe) {
      before = *prev->ecc_volatile_dbe;
    }
    if (*current.ecc_volatile_dbe > before) {
      out.add(Severity::kCritical, "volatile double-bit ECC errors rose from " +
                                       std::to_string(before) + " to " +
                                       std::to_string(*current.ecc_volatile_dbe));
    }
  }

  if (current.retired_pages_sbe || current.retired_pages_dbe) {
    auto retired = current.retired_pages_sbe.value_or(0) + current.retired_pages_dbe.value_or(0);
    if (retired >= limits.max_retired_pages) {
      out.add(Severity::kCritical, std::to_string(retired) + " retired pages (limit " +
                                       std::to_string(limits.max_retired_pages) + ")");
    }
  }
  if (current.retired_pages_pending.value_or(false)) {
    out.add(Severity::kWarning, "page retirement pending (applies at the next reset)");
  }
  if (current.remapped_rows_failure.value_or(false)) {
    out.add(Severity::kCritical, "row remapping failed");
  }
  if (current.remapped_rows_pending.value_or(false)) {
    out.add(Severity::kWarning, "row remapping pending (applies at the next reset)");
  }

  if (current.temperature_c && current.shutdown_temperature_c &&
      *current.temperature_c >= *current.shutdown_temperature_c) {
    out.add(Severity::kCritical, "temperature " + number(*current.temperature_c) +
                                     " C at or above the limit of " +
                                     number(*current.shutdown_temperature_c) + " C");
  }
  for (std::string_view reason :
       {"hw_slowdown", "hw_thermal_slowdown", "sw_thermal_slowdown", "hw_power_brake_slowdown"}) {
    if (has_reason(current, reason)) {
      out.add(Severity::kWarning, "clocks slowed down: " + std::string(reason));
    }
  }

  if (current.nvlink_links_down.value_or(0) > 0) {
    out.add(Severity::kCritical,
            std::to_string(*current.nvlink_links_down) + " NVLink link(s) down");
  }
  // A minute stands for a sample whose interval is unknown.
  double seconds = since_previous.count() > 0 ? static_cast<double>(since_previous.count()) : 60;
  if (prev && prev->nvlink_crc_errors && current.nvlink_crc_errors &&
      *current.nvlink_crc_errors > *prev->nvlink_crc_errors) {
    auto rise = *current.nvlink_crc_errors - *prev->nvlink_crc_errors;
    double per_second = static_cast<double>(rise) / seconds;
    bool critical = since_previous.count() > 0 && per_second >= limits.nvlink_crc_critical_per_s;
    out.add(critical ? Severity::kCritical : Severity::kWarning,
            "NVLink CRC errors rose by " + std::to_string(rise) +
                (since_previous.count() > 0 ? " (" + number(per_second) + "/s)" : ""));
  }
  if (prev && prev->pcie_replays && current.pcie_replays &&
      *current.pcie_replays > *prev->pcie_replays) {
    auto rise = *current.pcie_replays - *prev->pcie_replays;
    double per_minute = static_cast<double>(rise) * 60 / seconds;
    if (per_minute > limits.pcie_replays_per_minute) {
      out.add(Severity::kWarning,
              "PCIe replays rose by " + std::to_string(rise) + " (" + number(per_minute) + "/min)");
    }
  }
  return out.take();
}

HealthVerdict node_health(const std::vector<HealthVerdict>& gpus,
                          std::chrono::seconds since_last_heartbeat,
                          std::chrono::seconds heartbeat_interval,
                          std::chrono::seconds silence_limit) {
  Collector out("");
  auto silent = std::to_string(since_last_heartbeat.count());
  if (since_last_heartbeat > silence_limit) {
    out.add(Severity::kCritical, "no heartbeat for " + silent + " s (limit " +
                                     std::to_string(silence_limit.count()) +
                                     " s): node unreachable");
  } else if (heartbeat_interval.count() > 0 && since_last_heartbeat >= 2 * heartbeat_interval) {
    out.add(Severity::kWarning, "no heartbeat for " + silent + " s (due every " +
                                    std::to_string(heartbeat_interval.count()) + " s)");
  }
  for (const auto& gpu : gpus) out.add(gpu);
  return out.take();
}

}  // namespace gpurent::agent_proto
