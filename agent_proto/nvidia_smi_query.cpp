// Parses `nvidia-smi --query-gpu` CSV (with or without header, with or without units) into
// GpuTelemetry. The text comes from a driver we do not control, through an agent on a machine
// a tenant has had root on, so every cell is checked and nothing is trusted to be well formed.
#include "agent_proto/nvidia_smi_query.h"

#include <array>
#include <charconv>
#include <cmath>
#include <optional>
#include <set>

namespace gpurent::agent_proto {
namespace {

constexpr std::size_t kQueryMaxQuote = 60;
constexpr std::size_t kMaxColumns = 4096;
constexpr std::size_t kMaxReasonName = 40;

[[noreturn]] void query_fail(const std::string& message) {
  throw QueryGpuParseError(message);
}

// The input as printable ASCII for an error message, cut short.
std::string query_quote(std::string_view s) {
  std::string out;
  for (char ch : s) {
    auto c = static_cast<unsigned char>(ch);
    if (c < 0x20 || c == 0x7f) continue;
    out += c < 0x80 ? ch : '?';
    if (out.size() >= kQueryMaxQuote) return out + "...";
  }
  return out;
}

std::string_view trim(std::string_view s) {
  constexpr std::string_view kSpace = " \t\r\v\f";
  auto first = s.find_first_not_of(kSpace);
  if (first == std::string_view::npos) return {};
  return s.substr(first, s.find_last_not_of(kSpace) - first + 1);
}

struct Line {
  std::size_t number;  // 1-based, as an editor shows the text
  std::string_view text;
};

// Non-blank lines; CRLF and a UTF-8 byte-order mark (Windows redirections add both) dropped.
std::vector<Line> split_lines(std::string_view text) {
  if (text.substr(0, 3) == "\xef\xbb\xbf") text.remove_prefix(3);
  std::vector<Line> lines;
  std::size_t pos = 0;
  for (std::size_t number = 1; pos <= text.size(); ++number) {
    auto end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    auto line = trim(text.substr(pos, end - pos));
    if (!line.empty()) lines.push_back({number, line});
    pos = end + 1;
  }
  return lines;
}

// nvidia-smi separates cells with ", " and never quotes them; no value it prints for the
// fields we read contains a comma.
std::vector<std::string_view> split_cells(std::string_view line) {
  std::vector<std::string_view> cells;
  std::size_t pos = 0;
  while (true) {
    auto end = line.find(',', pos);
    if (end == std::string_view::npos) {
      cells.push_back(trim(line.substr(pos)));
      return cells;
    }
    cells.push_back(trim(line.substr(pos, end - pos)));
    pos = end + 1;
  }
}

// ---- The fields we read ----

enum class Target {
  kIgnored,
  kIndex,
  kUuid,
  kName,
  kPciBusId,
  kTemperature,
  kTemperatureMargin,  // temperature.gpu.tlimit: degrees left below the GPU's T.Limit
  kPower,
  kPowerLimit,
  kUtilization,
  kSmClock,
  kMemoryUsed,
  kMemoryTotal,
  kEccVolatileSbe,
  kEccVolatileDbe,
  kEccAggregateDbe,
  kRetiredSbe,
  kRetiredDbe,
  kRetiredPending,
  kRemappedCorrectable,
  kRemappedUncorrectable,
  kRemappedPending,
  kRemappedFailure,
  kThrottleReason,  // one reason column: "Active" / "Not Active"
  kThrottleMask,    // the `.active` bitmask, used when no reason columns were asked for
  kPcieReplays,
  kCount
};

struct Column {
  Target target = Target::kIgnored;
  // Where several fields fill one value (power.draw, .instant, .average), the higher rank
  // wins when both are present.
  int rank = 0;
  std::string reason;  // for kThrottleReason
};

// "clocks_event_reasons" is the driver's newer name for "clocks_throttle_reasons".
std::optional<std::string_view> throttle_suffix(std::string_view field) {
  for (std::string_view prefix : {"clocks_event_reasons.", "clocks_throttle_reasons."}) {
    if (field.substr(0, prefix.size()) == prefix) return field.substr(prefix.size());
  }
  return std::nullopt;
}

bool is_reason_name(std::string_view s) {
  if (s.empty() || s.size() > kMaxReasonName) return false;
  for (char c : s) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return false;
  }
  return true;
}

Column column_for(std::string_view field) {
  struct Known {
    std::string_view field;
    Target target;
    int rank;
  };
  static constexpr std::array kKnown = {
      Known{"index", Target::kIndex, 0},
      Known{"uuid", Target::kUuid, 0},
      Known{"gpu_uuid", Target::kUuid, 0},
      Known{"name", Target::kName, 0},
      Known{"gpu_name", Target::kName, 0},
      Known{"pci.bus_id", Target::kPciBusId, 0},
      Known{"gpu_bus_id", Target::kPciBusId, 0},
      Known{"temperature.gpu", Target::kTemperature, 0},
      Known{"temperature.gpu.tlimit", Target::kTemperatureMargin, 0},
      Known{"power.draw", Target::kPower, 3},
      Known{"power.draw.instant", Target::kPower, 2},
      Known{"power.draw.average", Target::kPower, 1},
      Known{"power.limit", Target::kPowerLimit, 2},
      Known{"enforced.power.limit", Target::kPowerLimit, 1},
      Known{"utilization.gpu", Target::kUtilization, 0},
      Known{"clocks.current.sm", Target::kSmClock, 2},
      Known{"clocks.sm", Target::kSmClock, 1},
      Known{"memory.used", Target::kMemoryUsed, 0},
      Known{"memory.total", Target::kMemoryTotal, 0},
      // The chip-wide total when the driver has it, else device memory alone.
      Known{"ecc.errors.corrected.volatile.total", Target::kEccVolatileSbe, 3},
      Known{"ecc.errors.corrected.volatile.dram", Target::kEccVolatileSbe, 2},
      Known{"ecc.errors.corrected.volatile.device_memory", Target::kEccVolatileSbe, 1},
      Known{"ecc.errors.uncorrected.volatile.total", Target::kEccVolatileDbe, 3},
      Known{"ecc.errors.uncorrected.volatile.dram", Target::kEccVolatileDbe, 2},
      Known{"ecc.errors.uncorrected.volatile.device_memory", Target::kEccVolatileDbe, 1},
      Known{"ecc.errors.uncorrected.aggregate.total", Target::kEccAggregateDbe, 3},
      Known{"ecc.errors.uncorrected.aggregate.dram", Target::kEccAggregateDbe, 2},
      Known{"ecc.errors.uncorrected.aggregate.device_memory", Target::kEccAggregateDbe, 1},
      Known{"retired_pages.single_bit_ecc.count", Target::kRetiredSbe, 0},
      Known{"retired_pages.sbe", Target::kRetiredSbe, 0},
      Known{"retired_pages.double_bit.count", Target::kRetiredDbe, 0},
      Known{"retired_pages.dbe", Target::kRetiredDbe, 0},
      Known{"retired_pages.pending", Target::kRetiredPending, 0},
      Known{"remapped_rows.correctable", Target::kRemappedCorrectable, 0},
      Known{"remapped_rows.uncorrectable", Target::kRemappedUncorrectable, 0},
      Known{"remapped_rows.pending", Target::kRemappedPending, 0},
      Known{"remapped_rows.failure", Target::kRemappedFailure, 0},
      // Older drivers only; none of the captured ones accepts it.
      Known{"pcie.replay_counter", Target::kPcieReplays, 0},
  };
  for (const auto& k : kKnown) {
    if (k.field == field) return {k.target, k.rank, {}};
  }
  if (auto reason = throttle_suffix(field)) {
    if (*reason == "active") return {Target::kThrottleMask, 0, {}};
    if (*reason != "supported" && is_reason_name(*reason)) {
      return {Target::kThrottleReason, 0, std::string(*reason)};
    }
  }
  return {};
}

// The bits of nvml.h's nvmlClocksEventReason* constants, named as the reason columns are.
struct ReasonBit {
  std::uint64_t bit;
  std::string_view name;
};
constexpr std::array kReasonBits = {
    ReasonBit{0x1, "gpu_idle"},
    ReasonBit{0x2, "applications_clocks_setting"},
    ReasonBit{0x4, "sw_power_cap"},
    ReasonBit{0x8, "hw_slowdown"},
    ReasonBit{0x10, "sync_boost"},
    ReasonBit{0x20, "sw_thermal_slowdown"},
    ReasonBit{0x40, "hw_thermal_slowdown"},
    ReasonBit{0x80, "hw_power_brake_slowdown"},
    ReasonBit{0x100, "display_clock_setting"},
};

// A field name from the header, "power.draw [W]" -> "power.draw"; nullopt when the cell is
// not a field name at all (so the line is not a header).
std::optional<std::string_view> header_field(std::string_view cell) {
  auto bracket = cell.find(" [");
  std::string_view name = cell.substr(0, bracket);
  if (bracket != std::string_view::npos && cell.back() != ']') return std::nullopt;
  if (name.empty() || name.size() > 128) return std::nullopt;
  // A data row of numbers must not pass for a header.
  if (!((name[0] >= 'a' && name[0] <= 'z') || (name[0] >= 'A' && name[0] <= 'Z'))) {
    return std::nullopt;
  }
  for (char c : name) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_';
    if (!ok) return std::nullopt;
  }
  return name;
}

// ---- Cells ----

// Where nvidia-smi has no value: "[N/A]", "N/A", "[Not Supported]", "[Unknown Error]",
// "[Requested functionality has been deprecated]", "[Insufficient Permissions]", ... and the
// empty cell some fields print.
bool is_absent(std::string_view v) {
  return v.empty() || v == "N/A" || (v.front() == '[' && v.back() == ']');
}

class RowReader {
 public:
  RowReader(const Line& line, std::string_view field) : line_(line), field_(field) {}

  [[noreturn]] void bad(std::string_view value, std::string_view what) const {
    query_fail("line " + std::to_string(line_.number) + ", field " + std::string(field_) + ": '" +
               query_quote(value) + "' is not " + std::string(what));
  }

  // "70.25 W", "0 %", "8192 MiB" or, with nounits, "70.25": the number before the unit.
  std::string_view number_part(std::string_view v) const {
    auto space = v.find(' ');
    if (space == std::string_view::npos) return v;
    auto unit = v.substr(space + 1);
    bool unit_ok = !unit.empty() && unit.size() <= 8;
    for (char c : unit) {
      unit_ok =
          unit_ok && ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '%' || c == '/');
    }
    if (!unit_ok) bad(v, "a number with a unit");
    return v.substr(0, space);
  }

  double real(std::string_view v) const {
    auto s = number_part(v);
    double x = 0;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), x);
    if (ec != std::errc() || end != s.data() + s.size() || !std::isfinite(x)) bad(v, "a number");
    return x;
  }

  std::int64_t integer(std::string_view v) const {
    auto s = number_part(v);
    std::int64_t n = 0;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
    if (ec != std::errc() || end != s.data() + s.size()) bad(v, "an integer");
    return n;
  }

  bool yes_no(std::string_view v) const {
    if (v == "Yes") return true;
    if (v == "No") return false;
    bad(v, "Yes or No");
  }

  bool active(std::string_view v) const {
    if (v == "Active") return true;
    if (v == "Not Active") return false;
    bad(v, "Active or Not Active");
  }

  std::uint64_t mask(std::string_view v) const {
    if (v.size() < 3 || v.size() > 18 || v[0] != '0' || (v[1] != 'x' && v[1] != 'X')) {
      bad(v, "a hexadecimal bitmask");
    }
    std::uint64_t m = 0;
    auto [end, ec] = std::from_chars(v.data() + 2, v.data() + v.size(), m, 16);
    if (ec != std::errc() || end != v.data() + v.size()) bad(v, "a hexadecimal bitmask");
    return m;
  }

  // Names and ids: printable ASCII, so that they can go into JSON and logs as they are.
  std::string text(std::string_view v) const {
    if (v.size() > 128) bad(v, "at most 128 characters");
    for (char ch : v) {
      auto c = static_cast<unsigned char>(ch);
      if (c < 0x20 || c >= 0x7f) bad(v, "printable ASCII");
    }
    return std::string(v);
  }

 private:
  const Line& line_;
  std::string_view field_;
};

// Keeps the value from the highest-ranked field that had one.
template <typename T>
void set_ranked(std::optional<T>& slot, int& slot_rank, T value, int rank) {
  if (!slot || rank > slot_rank) {
    slot = std::move(value);
    slot_rank = rank;
  }
}

GpuTelemetry read_row(const Line& line, const std::vector<std::string_view>& fields,
                      const std::vector<Column>& columns, int row_index) {
  auto cells = split_cells(line.text);
  if (cells.size() != columns.size()) {
    query_fail("line " + std::to_string(line.number) + " has " + std::to_string(cells.size()) +
               (cells.size() == 1 ? " cell" : " cells") + " but the query has " +
               std::to_string(columns.size()) + " fields: '" + query_quote(line.text) + "'");
  }
  GpuTelemetry gpu;
  gpu.index = row_index;
  std::optional<double> margin;
  std::optional<std::uint64_t> reason_mask;
  bool has_reason_columns = false;
  std::array<int, static_cast<std::size_t>(Target::kCount)> ranks{};
  for (std::size_t i = 0; i < cells.size(); ++i) {
    const Column& col = columns[i];
    std::string_view v = cells[i];
    if (col.target == Target::kIgnored || is_absent(v)) continue;
    RowReader r(line, fields[i]);
    int& rank = ranks[static_cast<std::size_t>(col.target)];
    switch (col.target) {
      case Target::kIgnored:
      case Target::kCount:
        break;
      case Target::kIndex: {
        auto n = r.integer(v);
        if (n < 0 || n > 1023) r.bad(v, "a GPU index from 0 to 1023");
        gpu.index = static_cast<int>(n);
        break;
      }
      case Target::kUuid:
        gpu.uuid = r.text(v);
        break;
      case Target::kName:
        gpu.name = r.text(v);
        break;
      case Target::kPciBusId:
        gpu.pci_bus_id = r.text(v);
        break;
      case Target::kTemperature:
        gpu.temperature_c = r.real(v);
        break;
      case Target::kTemperatureMargin:
        margin = r.real(v);
        break;
      case Target::kPower:
        set_ranked(gpu.power_w, rank, r.real(v), col.rank);
        break;
      case Target::kPowerLimit:
        set_ranked(gpu.power_limit_w, rank, r.real(v), col.rank);
        break;
      case Target::kUtilization: {
        auto n = r.integer(v);
        if (n < 0 || n > 100) r.bad(v, "a percentage from 0 to 100");
        gpu.utilization_pct = static_cast<int>(n);
        break;
      }
      case Target::kSmClock: {
        auto n = r.integer(v);
        if (n < 0 || n > 20000) r.bad(v, "a clock from 0 to 20000 MHz");
        set_ranked(gpu.sm_clock_mhz, rank, static_cast<int>(n), col.rank);
        break;
      }
      case Target::kMemoryUsed:
        gpu.memory_used_mib = r.integer(v);
        break;
      case Target::kMemoryTotal:
        gpu.memory_total_mib = r.integer(v);
        break;
      case Target::kEccVolatileSbe:
        set_ranked(gpu.ecc_volatile_sbe, rank, r.integer(v), col.rank);
        break;
      case Target::kEccVolatileDbe:
        set_ranked(gpu.ecc_volatile_dbe, rank, r.integer(v), col.rank);
        break;
      case Target::kEccAggregateDbe:
        set_ranked(gpu.ecc_aggregate_dbe, rank, r.integer(v), col.rank);
        break;
      case Target::kRetiredSbe:
        gpu.retired_pages_sbe = r.integer(v);
        break;
      case Target::kRetiredDbe:
        gpu.retired_pages_dbe = r.integer(v);
        break;
      case Target::kRetiredPending:
        gpu.retired_pages_pending = r.yes_no(v);
        break;
      case Target::kRemappedCorrectable:
        gpu.remapped_rows_correctable = r.integer(v);
        break;
      case Target::kRemappedUncorrectable:
        gpu.remapped_rows_uncorrectable = r.integer(v);
        break;
      case Target::kRemappedPending:
        gpu.remapped_rows_pending = r.yes_no(v);
        break;
      case Target::kRemappedFailure:
        gpu.remapped_rows_failure = r.yes_no(v);
        break;
      case Target::kThrottleReason:
        has_reason_columns = true;
        if (r.active(v)) {
          // Both the old and the new name of one reason may have been asked for.
          bool seen = false;
          for (const auto& s : gpu.throttle_reasons) seen = seen || s == col.reason;
          if (!seen) gpu.throttle_reasons.push_back(col.reason);
        }
        break;
      case Target::kThrottleMask:
        reason_mask = r.mask(v);
        break;
      case Target::kPcieReplays:
        gpu.pcie_replays = r.integer(v);
        break;
    }
  }
  // T.Limit is reported as the margin below the limit; the limit itself is what the health
  // rules compare the temperature with.
  if (gpu.temperature_c && margin) gpu.shutdown_temperature_c = *gpu.temperature_c + *margin;
  // The reason columns are what nvidia-smi itself decoded; the bitmask is decoded here only when
  // they were not asked for. Bits this table does not know are left out.
  if (!has_reason_columns && reason_mask) {
    for (const auto& rb : kReasonBits) {
      if (*reason_mask & rb.bit) gpu.throttle_reasons.emplace_back(rb.name);
    }
  }
  // One set of range rules for what the agent reads and what the control plane accepts.
  try {
    gpu_telemetry_from_json(to_json(gpu), "");
  } catch (const ProtocolError& e) {
    query_fail("line " + std::to_string(line.number) + " (GPU " + std::to_string(gpu.index) +
               "): " + e.what());
  }
  return gpu;
}

std::vector<GpuTelemetry> read_rows(const std::vector<Line>& lines, std::size_t first,
                                    const std::vector<std::string_view>& fields) {
  if (lines.size() - first > kMaxQueryGpuRows) {
    query_fail("more than " + std::to_string(kMaxQueryGpuRows) + " GPU rows");
  }
  std::vector<Column> columns;
  columns.reserve(fields.size());
  for (auto f : fields) columns.push_back(column_for(f));
  std::vector<GpuTelemetry> gpus;
  std::set<int> indexes;
  for (std::size_t i = first; i < lines.size(); ++i) {
    auto gpu = read_row(lines[i], fields, columns, static_cast<int>(i - first));
    if (!indexes.insert(gpu.index).second) {
      query_fail("line " + std::to_string(lines[i].number) + ": GPU index " +
                 std::to_string(gpu.index) + " appears twice");
    }
    gpus.push_back(std::move(gpu));
  }
  return gpus;
}

void check_size(std::string_view text) {
  if (text.size() > kMaxQueryGpuTextBytes) {
    query_fail("the output is " + std::to_string(text.size()) + " bytes; at most " +
               std::to_string(kMaxQueryGpuTextBytes) + " are accepted");
  }
}

}  // namespace

std::vector<GpuTelemetry> parse_query_gpu_csv(std::string_view text) {
  check_size(text);
  auto lines = split_lines(text);
  if (lines.empty()) query_fail("the output is empty: no header line");
  auto header = split_cells(lines[0].text);
  if (header.size() > kMaxColumns) query_fail("the header has more than 4096 fields");
  std::vector<std::string_view> fields;
  for (auto cell : header) {
    auto field = header_field(cell);
    if (!field) {
      // Most often nvidia-smi's own complaint ("No devices were found", "NVIDIA-SMI has
      // failed ...", "Field ... is not a valid field to query.").
      query_fail("the first line is not a --query-gpu header: '" + query_quote(lines[0].text) +
                 "'");
    }
    fields.push_back(*field);
  }
  return read_rows(lines, 1, fields);
}

std::vector<GpuTelemetry> parse_query_gpu_csv(std::string_view text,
                                              const std::vector<std::string>& fields) {
  if (fields.empty()) throw std::invalid_argument("a query needs at least one field");
  check_size(text);
  std::vector<std::string_view> names(fields.begin(), fields.end());
  return read_rows(split_lines(text), 0, names);
}

}  // namespace gpurent::agent_proto
