// NodeHealthLog: batches go to PostgreSQL as one JSON document each (jsonb_to_recordset),
// so a heartbeat batch of any size is one statement for its samples and one for its events.
#include "inventory/node_health_log.h"

#include "core/pg_array.h"

#include "core/sql.h"

namespace gpurent::inventory {
namespace {

constexpr std::size_t kMaxReason = 2000;

constexpr Statement kRecordSamples = {
    "health_log_record_samples",
    "WITH s AS (SELECT * FROM jsonb_to_recordset($1::jsonb) AS s(node_id text, at timestamptz,"
    " telemetry jsonb, gpu_index smallint[], temperature_c real[], power_w real[],"
    " utilization_pct smallint[], memory_used_mib integer[], sm_clock_mhz integer[])),"
    " latest AS (UPDATE nodes AS n SET telemetry = s.telemetry, telemetry_at = s.at FROM s"
    " WHERE n.id = s.node_id AND (n.telemetry_at IS NULL OR n.telemetry_at <= s.at))"
    " INSERT INTO node_telemetry_samples (node_id, at, gpu_index, temperature_c, power_w,"
    " utilization_pct, memory_used_mib, sm_clock_mhz, throttle_reasons)"
    " SELECT node_id, at, gpu_index, temperature_c, power_w, utilization_pct, memory_used_mib,"
    " sm_clock_mhz,"
    " (SELECT jsonb_object_agg(g->>'index', g->'throttle_reasons') FROM jsonb_array_elements("
    " CASE WHEN jsonb_typeof(s.telemetry) = 'array' THEN s.telemetry ELSE '[]' END) g"
    " WHERE jsonb_typeof(g) = 'object' AND jsonb_typeof(g->'throttle_reasons') = 'array')"
    " FROM s WHERE s.node_id IN (SELECT id FROM nodes) ON CONFLICT DO NOTHING"};
constexpr Statement kRecordHealthEvents = {
    "health_log_record_events",
    "INSERT INTO health_events (node_id, at, gpu_index, kind, severity, xid, reason)"
    " SELECT node_id, at, gpu_index, kind, severity, xid, reason"
    " FROM jsonb_to_recordset($1::jsonb) AS e(node_id text, at timestamptz, gpu_index integer,"
    " kind text, severity text, xid integer, reason text)"
    " WHERE e.node_id IN (SELECT id FROM nodes)"};
constexpr Statement kLatestTelemetry = {
    "health_log_latest",
    "SELECT " SQL_MICROS("telemetry_at") ", telemetry::text FROM nodes"
    " WHERE id = $1 AND telemetry IS NOT NULL"};
// The agent's GPUs array is checked when it arrives; the guards keep one odd row from
// failing the whole list.
constexpr Statement kTelemetrySummaries = {
    "health_log_summaries",
    "SELECT id, " SQL_MICROS("telemetry_at") ", (SELECT max((g->>'temperature_c')::float8)"
    " FROM jsonb_array_elements(CASE WHEN jsonb_typeof(telemetry) = 'array' THEN telemetry"
    " ELSE '[]'::jsonb END) AS g WHERE jsonb_typeof(g->'temperature_c') = 'number')"
    " FROM nodes WHERE id = ANY($1::text[]) AND telemetry IS NOT NULL"};
constexpr Statement kTelemetryHistory = {
    "health_log_history",
    "SELECT " SQL_MICROS("at") ", json_build_array(gpu_index, temperature_c, power_w,"
    " utilization_pct, memory_used_mib, coalesce(throttle_reasons, '{}'), sm_clock_mhz)::text"
    " FROM node_telemetry_samples"
    " WHERE node_id = $1 AND at >= $2::timestamptz AND at < $3::timestamptz ORDER BY at LIMIT $4"};
constexpr Statement kHealthEvents = {
    "health_log_events",
    "SELECT id, " SQL_MICROS("at") ", gpu_index, kind, severity, xid, reason FROM health_events"
    " WHERE node_id = $1 AND ($3::bigint IS NULL OR id < $3) ORDER BY id DESC LIMIT $2"};
constexpr Statement kGpuEvents = {
    "health_log_gpu_events",
    "SELECT id, " SQL_MICROS("at") ", gpu_index, kind, severity, xid, reason FROM health_events"
    " WHERE node_id = $1 AND gpu_index = ANY($2::int[]) AND at >= $3::timestamptz"
    " AND at < $4::timestamptz ORDER BY at, id LIMIT $5"};
constexpr Statement kPurgeSamples = {
    "health_log_purge",
    "DELETE FROM node_telemetry_samples WHERE ctid = ANY (ARRAY(SELECT ctid FROM"
    " node_telemetry_samples WHERE at < $1::timestamptz LIMIT $2))"};

// Cut at a character boundary: the text is UTF-8 (JSON from the agent).
std::string bounded_reason(const std::string& text) {
  if (text.size() <= kMaxReason) return text;
  std::size_t end = kMaxReason;
  while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;
  return text.substr(0, end);
}

template <typename T>
nlohmann::json optional_json(const std::optional<T>& value) {
  return value ? nlohmann::json(*value) : nlohmann::json(nullptr);
}

template <typename T>
std::optional<T> optional_from(const nlohmann::json& value) {
  return value.is_null() ? std::nullopt : std::optional<T>(value.get<T>());
}

std::vector<HealthEvent> events_of(const std::string& node_id, const pqxx::result& rows) {
  std::vector<HealthEvent> out;
  for (const auto& row : rows) {
    out.push_back({.id = row[0].as<std::int64_t>(),
                   .node_id = node_id,
                   .at = read_timestamp(row[1]),
                   .gpu_index = optional_field<int>(row[2]),
                   .kind = row[3].as<std::string>(),
                   .severity = row[4].as<std::string>(),
                   .xid = optional_field<int>(row[5]),
                   .reason = row[6].as<std::string>()});
  }
  return out;
}

}  // namespace

std::vector<std::string> throttle_reasons_of(const nlohmann::json& by_index, int index) {
  std::vector<std::string> out;
  if (!by_index.is_object()) return out;
  auto it = by_index.find(std::to_string(index));
  if (it == by_index.end() || !it->is_array()) return out;
  for (const auto& r : *it) {
    if (r.is_string()) out.push_back(r.get<std::string>());
  }
  return out;
}

void NodeHealthLog::record_samples(Tx& tx, const std::vector<TelemetrySample>& samples) {
  if (samples.empty()) return;
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& s : samples) {
    nlohmann::json index = nlohmann::json::array(), temperature = nlohmann::json::array(),
                   power = nlohmann::json::array(), utilization = nlohmann::json::array(),
                   memory = nlohmann::json::array(), clock = nlohmann::json::array();
    for (const auto& g : s.gpus) {
      index.push_back(g.index);
      temperature.push_back(optional_json(g.temperature_c));
      power.push_back(optional_json(g.power_w));
      utilization.push_back(optional_json(g.utilization_pct));
      memory.push_back(optional_json(g.memory_used_mib));
      clock.push_back(optional_json(g.sm_clock_mhz));
    }
    rows.push_back({{"node_id", s.node_id},
                    {"at", sql_timestamp(s.at)},
                    {"telemetry", s.telemetry},
                    {"gpu_index", std::move(index)},
                    {"temperature_c", std::move(temperature)},
                    {"power_w", std::move(power)},
                    {"utilization_pct", std::move(utilization)},
                    {"memory_used_mib", std::move(memory)},
                    {"sm_clock_mhz", std::move(clock)}});
  }
  tx.exec(kRecordSamples, rows.dump());
}

void NodeHealthLog::record_events(Tx& tx, const std::vector<HealthEvent>& events) {
  if (events.empty()) return;
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& e : events) {
    rows.push_back({{"node_id", e.node_id},
                    {"at", sql_timestamp(e.at)},
                    {"gpu_index", optional_json(e.gpu_index)},
                    {"kind", e.kind},
                    {"severity", e.severity},
                    {"xid", optional_json(e.xid)},
                    {"reason", bounded_reason(e.reason)}});
  }
  tx.exec(kRecordHealthEvents, rows.dump());
}

std::map<std::string, TelemetrySummary> NodeHealthLog::summaries(
    Tx& tx, const std::vector<std::string>& node_ids) {
  std::map<std::string, TelemetrySummary> out;
  if (node_ids.empty()) return out;
  for (const auto& row : tx.exec(kTelemetrySummaries, pg_array_literal(node_ids))) {
    TelemetrySummary s{read_timestamp(row[1]), std::nullopt};
    if (!row[2].is_null()) s.hottest_gpu_temperature_c = row[2].as<double>();
    out.emplace(row[0].as<std::string>(), s);
  }
  return out;
}

std::optional<LatestTelemetry> NodeHealthLog::latest(Tx& tx, const std::string& node_id) {
  auto rows = tx.exec(kLatestTelemetry, node_id);
  if (rows.empty()) return std::nullopt;
  return LatestTelemetry{read_timestamp(rows[0][0]),
                         nlohmann::json::parse(rows[0][1].as<std::string>())};
}

std::vector<TelemetryPoint> NodeHealthLog::history(Tx& tx, const std::string& node_id,
                                                   Timestamp from, Timestamp to, int limit) {
  std::vector<TelemetryPoint> out;
  for (const auto& row :
       tx.exec(kTelemetryHistory, node_id, sql_timestamp(from), sql_timestamp(to), limit)) {
    auto columns = nlohmann::json::parse(row[1].as<std::string>());
    const auto& index = columns[0];
    TelemetryPoint point{read_timestamp(row[0]), {}};
    for (std::size_t i = 0; i < index.size(); ++i) {
      point.gpus.push_back(
          {.index = index[i].get<int>(),
           .temperature_c = optional_from<double>(columns[1][i]),
           .power_w = optional_from<double>(columns[2][i]),
           .utilization_pct = optional_from<int>(columns[3][i]),
           .memory_used_mib = optional_from<std::int64_t>(columns[4][i]),
           .throttle_reasons = throttle_reasons_of(columns[5], index[i].get<int>()),
           // Null for the whole row when it was written before the column.
           .sm_clock_mhz =
               columns[6].is_array() ? optional_from<int>(columns[6][i]) : std::nullopt});
    }
    out.push_back(std::move(point));
  }
  return out;
}

std::vector<HealthEvent> NodeHealthLog::events(Tx& tx, const std::string& node_id, int limit,
                                               std::optional<std::int64_t> before_id) {
  return events_of(node_id, tx.exec(kHealthEvents, node_id, limit, before_id));
}

std::vector<HealthEvent> NodeHealthLog::gpu_events(Tx& tx, const std::string& node_id,
                                                   const std::vector<int>& gpus, Timestamp from,
                                                   Timestamp to, int limit) {
  return events_of(node_id, tx.exec(kGpuEvents, node_id, pg_array_literal(gpus),
                                    sql_timestamp(from), sql_timestamp(to), limit));
}

int NodeHealthLog::purge_samples(Tx& tx, Timestamp before, int limit) {
  return static_cast<int>(tx.exec(kPurgeSamples, sql_timestamp(before), limit).affected_rows());
}

}  // namespace gpurent::inventory
