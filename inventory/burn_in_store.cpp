// Burn-ins in PostgreSQL.
#include "inventory/burn_in_store.h"

#include "agent_proto/burn_in/figures.h"
#include "core/sql.h"

namespace gpurent::inventory {
namespace {

constexpr Statement kNodeModel = {
    "burn_in_node_model",
    "SELECT n.gpu_model, m.nvlink_connection, m.nvlink_bandwidth_gbps"
    " FROM nodes n JOIN gpu_models m ON m.name = n.gpu_model WHERE n.id = $1"};
// Each other node's latest burn-in of the model, when it passed: a node whose latest failed
// sets no bar.
constexpr Statement kLatestPassed = {
    "burn_in_latest_passed",
    "SELECT figures::text FROM (SELECT DISTINCT ON (node_id) figures, passed FROM burn_ins"
    " WHERE gpu_model = $1 AND node_id <> $2 ORDER BY node_id, finished_at DESC)"
    " latest WHERE passed LIMIT $3"};
constexpr Statement kInsert = {
    "burn_in_insert",
    "INSERT INTO burn_ins (task_id, node_id, rental_id, phase, gpu_model, passed, figures,"
    " findings, finished_at, telemetry) SELECT $1, $2, $3, $4, $5, $6, $7::jsonb, $8::jsonb, $9,"
    " (SELECT telemetry FROM nodes WHERE id = $2) ON CONFLICT (task_id) DO NOTHING"};
constexpr Statement kLatestPassedEverywhere = {
    "burn_in_latest_passed_everywhere",
    "SELECT gpu_model, figures::text FROM (SELECT DISTINCT ON (node_id) gpu_model, figures,"
    " passed FROM burn_ins ORDER BY node_id, finished_at DESC) latest WHERE passed"};
constexpr Statement kForNode = {
    "burn_in_for_node",
    "SELECT task_id, node_id, rental_id, phase, gpu_model, passed, figures::text,"
    " findings::text, " SQL_MICROS("finished_at") ", coalesce(telemetry, 'null')::text"
    " FROM burn_ins WHERE node_id = $1 ORDER BY finished_at DESC, task_id LIMIT $2"};
constexpr Statement kForRental = {
    "burn_in_for_rental",
    "SELECT task_id, node_id, rental_id, phase, gpu_model, passed, figures::text,"
    " findings::text, " SQL_MICROS("finished_at") ", coalesce(telemetry, 'null')::text"
    " FROM burn_ins WHERE rental_id = $1"
    " ORDER BY finished_at, task_id"};

// One node's own median of each figure, so that a node with many GPUs counts once.
BurnInMedians node_medians(const burn_in::BurnInFigures& f) {
  std::vector<double> gflops, links, tensor, memory;
  for (const auto& g : f.gpus) {
    if (g.gflops) gflops.push_back(*g.gflops);
    if (g.tensor_tflops) tensor.push_back(*g.tensor_tflops);
    if (g.memory_gbps) memory.push_back(*g.memory_gbps);
  }
  for (const auto& l : f.links) links.push_back(l.gbps);
  return {median_of(gflops), median_of(links), f.nccl_bus_gbps, median_of(tensor),
          median_of(memory)};
}

// The nodes' medians of each figure, collected for the median over the nodes.
struct NodesValues {
  std::vector<double> gflops, links, buses, tensor, memory;
  int nodes = 0;
  void add(const BurnInMedians& m) {
    ++nodes;
    for (auto [v, into] : {std::pair{m.gflops, &gflops}, std::pair{m.link_gbps, &links},
                           std::pair{m.nccl_bus_gbps, &buses}, std::pair{m.tensor_tflops, &tensor},
                           std::pair{m.memory_gbps, &memory}}) {
      if (v) into->push_back(*v);
    }
  }
  BurnInMedians medians() const {
    return {median_of(gflops), median_of(links), median_of(buses), median_of(tensor),
            median_of(memory)};
  }
};

}  // namespace

nlohmann::json findings_json(const BurnInVerdict& verdict) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& f : verdict.findings) {
    nlohmann::json j = {{"check", f.check},
                        {"subject", f.subject},
                        {"verdict", f.failed    ? "fail"
                                    : f.warning ? "warn"
                                                : "pass"},
                        {"detail", f.detail}};
    if (f.measured) j["measured"] = *f.measured;
    if (f.expected) j["expected"] = *f.expected;
    if (!f.unit.empty()) j["unit"] = f.unit;
    out.push_back(std::move(j));
  }
  return out;
}

std::optional<BurnInBasis> BurnInStore::basis(Tx& tx, const std::string& node_id) {
  auto rows = tx.exec(kNodeModel, node_id);
  if (rows.empty()) return std::nullopt;
  BurnInBasis b;
  b.gpu_model = rows[0][0].as<std::string>();
  b.nominal.all_pairs_nvlinked = rows[0][1].as<std::string>() == "nvswitch";
  // The catalog's NVLink figure is per GPU, both directions together.
  if (auto per_gpu = optional_field<int>(rows[0][2])) b.nominal.link_gbps = *per_gpu / 2.0;
  NodesValues values;
  for (const auto& row : tx.exec(kLatestPassed, b.gpu_model, node_id, kMedianNodes)) {
    try {
      values.add(node_medians(burn_in::figures_from_json(nlohmann::json::parse(row[0].c_str()))));
    } catch (const std::exception&) {
      // Only figures that were read strictly are stored; a row that no longer reads is skipped.
    }
  }
  b.medians = values.medians();
  return b;
}

std::map<std::string, ModelMeasurement> BurnInStore::measured_by_model(Tx& tx) {
  std::map<std::string, NodesValues> by_model;
  for (const auto& row : tx.exec(kLatestPassedEverywhere)) {
    try {
      auto m = node_medians(burn_in::figures_from_json(nlohmann::json::parse(row[1].c_str())));
      by_model[row[0].as<std::string>()].add(m);
    } catch (const std::exception&) {
      // Only figures read strictly are stored; one that no longer reads is skipped.
    }
  }
  std::map<std::string, ModelMeasurement> out;
  for (const auto& [model, v] : by_model) {
    auto m = v.medians();
    out[model] = {.gflops_per_gpu = m.gflops,
                  .peer_gbps = m.link_gbps,
                  .nccl_bus_gbps = m.nccl_bus_gbps,
                  .nodes = v.nodes,
                  .tensor_tflops_per_gpu = m.tensor_tflops,
                  .memory_gbps_per_gpu = m.memory_gbps};
  }
  return out;
}

bool BurnInStore::record(Tx& tx, const BurnInRecord& r) {
  auto result = tx.exec(kInsert, r.task_id, r.node_id, r.rental_id, r.phase, r.gpu_model, r.passed,
                        r.figures.dump(), r.findings.dump(), sql_timestamp(r.finished_at));
  return result.affected_rows() == 1;
}

namespace {

std::vector<BurnInRecord> records_of(const pqxx::result& rows) {
  std::vector<BurnInRecord> out;
  for (const auto& row : rows) {
    out.push_back({.task_id = row[0].as<std::string>(),
                   .node_id = row[1].as<std::string>(),
                   .rental_id = optional_field<std::string>(row[2]),
                   .phase = row[3].as<std::string>(),
                   .gpu_model = row[4].as<std::string>(),
                   .passed = row[5].as<bool>(),
                   .figures = nlohmann::json::parse(row[6].c_str()),
                   .findings = nlohmann::json::parse(row[7].c_str()),
                   .finished_at = read_timestamp(row[8]),
                   .telemetry = nlohmann::json::parse(row[9].c_str())});
  }
  return out;
}

}  // namespace

std::vector<BurnInRecord> BurnInStore::for_node(Tx& tx, const std::string& node_id, int limit) {
  return records_of(tx.exec(kForNode, node_id, limit));
}

std::vector<BurnInRecord> BurnInStore::for_rental(Tx& tx, const std::string& rental_id) {
  return records_of(tx.exec(kForRental, rental_id));
}

}  // namespace gpurent::inventory
