// JSON form of GPU telemetry and XID events, and its strict readers: what an agent sends is
// untrusted, so every member is type- and range-checked and anything unknown is refused.
#include "agent_proto/telemetry.h"
#include "agent_proto/wire_time.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string_view>

namespace gpurent::agent_proto {
namespace {

using nlohmann::json;

// Names, UUIDs and bus ids are short; a longer string is not nvidia-smi's.
constexpr std::size_t kMaxStringBytes = 128;
// The text after the XID code is longer (an MMU fault names engine, address and fault type);
// xid_log keeps at most this much of it.
constexpr std::size_t kTelemetryMaxMessageBytes = 512;
// Keys and values quoted back in errors are cut to this; the error ends up in logs.
constexpr std::size_t kTelemetryMaxQuote = 40;
// Counters stay below 2^53 so that every JSON reader (doubles included) reads them exactly.
constexpr std::int64_t kMaxCount = (std::int64_t{1} << 53) - 1;
constexpr int kMaxGpuIndex = 1023;
constexpr int kMaxNvlinks = 1024;
constexpr std::size_t kMaxThrottleReasons = 32;
constexpr double kMinTemperatureC = -50;
constexpr double kMaxTemperatureC = 200;
// Well above any board or module (a GB200 superchip module is a few kW).
constexpr double kMaxPowerW = 100000;
constexpr std::int64_t kMaxClockMhz = 20000;
constexpr int kTelemetryMaxXid = 9999;
// Linux pids fit in 22 bits; anything in int range is accepted as a pid.
constexpr int kMaxPid = std::numeric_limits<int>::max();

// ---- Errors ----

// A member name as it may appear in an error: printable ASCII, cut short.
std::string telemetry_quote(std::string_view s) {
  std::string out;
  for (char ch : s) {
    auto c = static_cast<unsigned char>(ch);
    out += (c >= 0x20 && c < 0x7f) ? ch : '?';
    if (out.size() >= kTelemetryMaxQuote) {
      out += "...";
      break;
    }
  }
  return out;
}

std::string telemetry_member_path(const std::string& path, std::string_view key) {
  return path.empty() ? std::string(key) : path + "." + std::string(key);
}

[[noreturn]] void telemetry_fail(std::string path, const std::string& reason) {
  throw ProtocolError(std::move(path), reason);
}

std::string type_name(const json& value) {
  if (value.is_number()) return "a number";
  if (value.is_array() || value.is_object()) return std::string("an ") + value.type_name();
  return std::string("a ") + value.type_name();
}

// ---- Typed readers: each takes the member's full path for its errors ----

std::int64_t telemetry_read_integer(const json& value, const std::string& path, std::int64_t min,
                                    std::int64_t max) {
  if (!value.is_number_integer())
    telemetry_fail(path, "must be an integer, not " + type_name(value));
  // A value beyond int64 arrives as unsigned; it is out of range whatever the bounds.
  if (value.is_number_unsigned() &&
      value.get<std::uint64_t>() > static_cast<std::uint64_t>(max < 0 ? 0 : max)) {
    telemetry_fail(path, "must be from " + std::to_string(min) + " to " + std::to_string(max));
  }
  auto n = value.get<std::int64_t>();
  if (n < min || n > max) {
    telemetry_fail(path, "must be from " + std::to_string(min) + " to " + std::to_string(max));
  }
  return n;
}

double read_number(const json& value, const std::string& path, double min, double max) {
  if (!value.is_number()) telemetry_fail(path, "must be a number, not " + type_name(value));
  auto x = value.get<double>();
  if (!std::isfinite(x) || x < min || x > max) {
    char bounds[64];
    std::snprintf(bounds, sizeof bounds, "must be from %g to %g", min, max);
    telemetry_fail(path, bounds);
  }
  return x;
}

bool telemetry_read_bool(const json& value, const std::string& path) {
  if (!value.is_boolean()) telemetry_fail(path, "must be true or false, not " + type_name(value));
  return value.get<bool>();
}

// Printable text without control characters; the JSON parser already guarantees UTF-8.
std::string telemetry_read_string(const json& value, const std::string& path, std::size_t max_bytes,
                                  bool may_be_empty) {
  if (!value.is_string()) telemetry_fail(path, "must be a string, not " + type_name(value));
  const auto& s = value.get_ref<const std::string&>();
  if (s.size() > max_bytes) {
    telemetry_fail(path, "must be at most " + std::to_string(max_bytes) + " bytes, not " +
                             std::to_string(s.size()));
  }
  if (s.empty() && !may_be_empty) telemetry_fail(path, "must not be empty");
  for (char ch : s) {
    auto c = static_cast<unsigned char>(ch);
    if (c < 0x20 || c == 0x7f) telemetry_fail(path, "must not contain control characters");
  }
  return s;
}

// "hw_thermal_slowdown": lower-case letters, digits and underscores, as telemetry.h names them.
std::string read_reason(const json& value, const std::string& path) {
  auto s = telemetry_read_string(value, path, kTelemetryMaxQuote, false);
  for (char c : s) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) {
      telemetry_fail(
          path, "must be a reason name like \"sw_power_cap\", not \"" + telemetry_quote(s) + "\"");
    }
  }
  return s;
}

// ---- Timestamps: RFC 3339 in UTC, microseconds when there are any ----

std::string telemetry_format_time(Timestamp t) {
  return format_wire_time(t);
}

std::optional<Timestamp> telemetry_parse_time(std::string_view s) {
  return parse_wire_time(s);
}

// ---- Object walking ----

// Calls `read(key, value, member_path)` for each member, after refusing a non-object and
// unknown members, so that a reader only handles names it knows.
template <typename Read>
void read_members(const json& value, const std::string& path,
                  std::initializer_list<std::string_view> known, Read read) {
  if (!value.is_object()) telemetry_fail(path, "must be an object, not " + type_name(value));
  for (const auto& [key, member] : value.items()) {
    bool is_known = false;
    for (auto k : known) is_known = is_known || k == key;
    if (!is_known)
      telemetry_fail(telemetry_member_path(path, telemetry_quote(key)), "unknown member");
    read(std::string_view(key), member, telemetry_member_path(path, key));
  }
}

template <typename T>
void put(json& out, const char* key, const std::optional<T>& value) {
  if (value) out[key] = *value;
}

}  // namespace

nlohmann::json to_json(const GpuTelemetry& gpu) {
  json out = json::object();
  out["index"] = gpu.index;
  put(out, "uuid", gpu.uuid);
  put(out, "name", gpu.name);
  put(out, "pci_bus_id", gpu.pci_bus_id);
  put(out, "temperature_c", gpu.temperature_c);
  put(out, "shutdown_temperature_c", gpu.shutdown_temperature_c);
  put(out, "power_w", gpu.power_w);
  put(out, "power_limit_w", gpu.power_limit_w);
  put(out, "utilization_pct", gpu.utilization_pct);
  put(out, "sm_clock_mhz", gpu.sm_clock_mhz);
  put(out, "memory_used_mib", gpu.memory_used_mib);
  put(out, "memory_total_mib", gpu.memory_total_mib);
  put(out, "ecc_volatile_sbe", gpu.ecc_volatile_sbe);
  put(out, "ecc_volatile_dbe", gpu.ecc_volatile_dbe);
  put(out, "ecc_aggregate_dbe", gpu.ecc_aggregate_dbe);
  put(out, "retired_pages_sbe", gpu.retired_pages_sbe);
  put(out, "retired_pages_dbe", gpu.retired_pages_dbe);
  put(out, "retired_pages_pending", gpu.retired_pages_pending);
  put(out, "remapped_rows_correctable", gpu.remapped_rows_correctable);
  put(out, "remapped_rows_uncorrectable", gpu.remapped_rows_uncorrectable);
  put(out, "remapped_rows_pending", gpu.remapped_rows_pending);
  put(out, "remapped_rows_failure", gpu.remapped_rows_failure);
  // Left out when empty like an absent optional: most GPUs, most of the time, have none.
  if (!gpu.throttle_reasons.empty()) out["throttle_reasons"] = gpu.throttle_reasons;
  put(out, "nvlink_crc_errors", gpu.nvlink_crc_errors);
  put(out, "nvlink_links_down", gpu.nvlink_links_down);
  put(out, "pcie_replays", gpu.pcie_replays);
  return out;
}

nlohmann::json to_json(const XidEvent& event) {
  json out = json::object();
  out["pci"] = event.pci;
  out["xid"] = event.xid;
  put(out, "pid", event.pid);
  put(out, "process", event.process);
  out["message"] = event.message;
  if (event.at) out["at"] = telemetry_format_time(*event.at);
  return out;
}

GpuTelemetry gpu_telemetry_from_json(const nlohmann::json& value, const std::string& path) {
  GpuTelemetry gpu;
  bool has_index = false;
  auto count = [](const json& v, const std::string& p) {
    return telemetry_read_integer(v, p, 0, kMaxCount);
  };
  read_members(
      value, path,
      {"index",
       "uuid",
       "name",
       "pci_bus_id",
       "temperature_c",
       "shutdown_temperature_c",
       "power_w",
       "power_limit_w",
       "utilization_pct",
       "sm_clock_mhz",
       "memory_used_mib",
       "memory_total_mib",
       "ecc_volatile_sbe",
       "ecc_volatile_dbe",
       "ecc_aggregate_dbe",
       "retired_pages_sbe",
       "retired_pages_dbe",
       "retired_pages_pending",
       "remapped_rows_correctable",
       "remapped_rows_uncorrectable",
       "remapped_rows_pending",
       "remapped_rows_failure",
       "throttle_reasons",
       "nvlink_crc_errors",
       "nvlink_links_down",
       "pcie_replays"},
      [&](std::string_view key, const json& v, const std::string& p) {
        if (key == "index") {
          gpu.index = static_cast<int>(telemetry_read_integer(v, p, 0, kMaxGpuIndex));
          has_index = true;
        } else if (key == "uuid") {
          gpu.uuid = telemetry_read_string(v, p, kMaxStringBytes, false);
        } else if (key == "name") {
          gpu.name = telemetry_read_string(v, p, kMaxStringBytes, false);
        } else if (key == "pci_bus_id") {
          gpu.pci_bus_id = telemetry_read_string(v, p, kMaxStringBytes, false);
        } else if (key == "temperature_c") {
          gpu.temperature_c = read_number(v, p, kMinTemperatureC, kMaxTemperatureC);
        } else if (key == "shutdown_temperature_c") {
          gpu.shutdown_temperature_c = read_number(v, p, kMinTemperatureC, kMaxTemperatureC);
        } else if (key == "power_w") {
          gpu.power_w = read_number(v, p, 0, kMaxPowerW);
        } else if (key == "power_limit_w") {
          gpu.power_limit_w = read_number(v, p, 0, kMaxPowerW);
        } else if (key == "utilization_pct") {
          gpu.utilization_pct = static_cast<int>(telemetry_read_integer(v, p, 0, 100));
        } else if (key == "sm_clock_mhz") {
          gpu.sm_clock_mhz = static_cast<int>(telemetry_read_integer(v, p, 0, kMaxClockMhz));
        } else if (key == "memory_used_mib") {
          gpu.memory_used_mib = count(v, p);
        } else if (key == "memory_total_mib") {
          gpu.memory_total_mib = count(v, p);
        } else if (key == "ecc_volatile_sbe") {
          gpu.ecc_volatile_sbe = count(v, p);
        } else if (key == "ecc_volatile_dbe") {
          gpu.ecc_volatile_dbe = count(v, p);
        } else if (key == "ecc_aggregate_dbe") {
          gpu.ecc_aggregate_dbe = count(v, p);
        } else if (key == "retired_pages_sbe") {
          gpu.retired_pages_sbe = count(v, p);
        } else if (key == "retired_pages_dbe") {
          gpu.retired_pages_dbe = count(v, p);
        } else if (key == "retired_pages_pending") {
          gpu.retired_pages_pending = telemetry_read_bool(v, p);
        } else if (key == "remapped_rows_correctable") {
          gpu.remapped_rows_correctable = count(v, p);
        } else if (key == "remapped_rows_uncorrectable") {
          gpu.remapped_rows_uncorrectable = count(v, p);
        } else if (key == "remapped_rows_pending") {
          gpu.remapped_rows_pending = telemetry_read_bool(v, p);
        } else if (key == "remapped_rows_failure") {
          gpu.remapped_rows_failure = telemetry_read_bool(v, p);
        } else if (key == "throttle_reasons") {
          if (!v.is_array()) telemetry_fail(p, "must be an array, not " + type_name(v));
          if (v.size() > kMaxThrottleReasons) {
            telemetry_fail(p,
                           "must have at most " + std::to_string(kMaxThrottleReasons) + " entries");
          }
          for (std::size_t i = 0; i < v.size(); ++i) {
            auto item_path = p + "[" + std::to_string(i) + "]";
            auto reason = read_reason(v[i], item_path);
            for (const auto& seen : gpu.throttle_reasons) {
              if (seen == reason) telemetry_fail(item_path, "\"" + reason + "\" is listed twice");
            }
            gpu.throttle_reasons.push_back(std::move(reason));
          }
        } else if (key == "nvlink_crc_errors") {
          gpu.nvlink_crc_errors = count(v, p);
        } else if (key == "nvlink_links_down") {
          gpu.nvlink_links_down = static_cast<int>(telemetry_read_integer(v, p, 0, kMaxNvlinks));
        } else if (key == "pcie_replays") {
          gpu.pcie_replays = count(v, p);
        }
      });
  if (!has_index) telemetry_fail(telemetry_member_path(path, "index"), "is required");
  return gpu;
}

XidEvent xid_event_from_json(const nlohmann::json& value, const std::string& path) {
  XidEvent event;
  bool has_pci = false, has_xid = false, has_message = false;
  read_members(value, path, {"pci", "xid", "pid", "process", "message", "at"},
               [&](std::string_view key, const json& v, const std::string& p) {
                 if (key == "pci") {
                   event.pci = telemetry_read_string(v, p, kMaxStringBytes, false);
                   has_pci = true;
                 } else if (key == "xid") {
                   event.xid = static_cast<int>(telemetry_read_integer(v, p, 1, kTelemetryMaxXid));
                   has_xid = true;
                 } else if (key == "pid") {
                   event.pid = static_cast<int>(telemetry_read_integer(v, p, 0, kMaxPid));
                 } else if (key == "process") {
                   event.process = telemetry_read_string(v, p, kMaxStringBytes, false);
                 } else if (key == "message") {
                   event.message = telemetry_read_string(v, p, kTelemetryMaxMessageBytes, true);
                   has_message = true;
                 } else if (key == "at") {
                   auto text = telemetry_read_string(v, p, kTelemetryMaxQuote, false);
                   event.at = telemetry_parse_time(text);
                   if (!event.at) {
                     telemetry_fail(
                         p, "must be a UTC time like \"2026-07-03T22:10:46.123456Z\", not \"" +
                                telemetry_quote(text) + "\"");
                   }
                 }
               });
  if (!has_pci) telemetry_fail(telemetry_member_path(path, "pci"), "is required");
  if (!has_xid) telemetry_fail(telemetry_member_path(path, "xid"), "is required");
  if (!has_message) telemetry_fail(telemetry_member_path(path, "message"), "is required");
  return event;
}

}  // namespace gpurent::agent_proto
