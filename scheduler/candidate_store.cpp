// CandidateStore: one statement loads every candidate node with its GPUs, links, busy periods
// and failure count (JSON aggregates per node), so a booking pays one round trip however
// many nodes the fleet has. Served by nodes_bookable_idx, gpus (node_id, idx), the gpu_links
// key, allocations_no_overlap's GiST index and rentals_node_failures_idx (0007_rentals.sql).
#include "scheduler/candidate_store.h"

#include "core/sql.h"

#include <nlohmann/json.hpp>

#include <map>
#include <stdexcept>

namespace gpurent::scheduler {
namespace {

// [GPU index, start, end] of one allocation.
#define BUSY_ELEMENT \
  "json_build_array(g.idx, " SQL_MICROS("lower(a.period)") ", " SQL_MICROS("upper(a.period)") ")"

// $1 model, $2/$3 the window, $4 the failure lookback in microseconds.
constexpr Statement kLoad = {
    "candidate_load",
    "SELECT n.id, n.gpu_count, n.interconnect, m.nvswitch_link_kind, m.bridge_link_kind,"
    " gs.gpus, ls.links, bs.busy, fs.failures"
    " FROM nodes n JOIN gpu_models m ON m.name = n.gpu_model"
    " CROSS JOIN LATERAL (SELECT COALESCE(json_agg(json_build_array(g.idx,"
    " g.health NOT IN ('warning', 'critical')) ORDER BY g.idx), '[]')::text AS gpus"
    " FROM gpus g WHERE g.node_id = n.id) gs"
    " CROSS JOIN LATERAL (SELECT COALESCE(json_agg(json_build_array(l.gpu_a, l.gpu_b, l.kind)),"
    " '[]')::text AS links FROM gpu_links l WHERE l.node_id = n.id) ls"
    " CROSS JOIN LATERAL (SELECT COALESCE(json_agg(" BUSY_ELEMENT
    "), '[]')::text AS busy"
    " FROM gpus g JOIN allocations a ON a.gpu_id = g.id"
    " WHERE g.node_id = n.id"
    " AND a.period && tstzrange($2::timestamptz, $3::timestamptz, '[)')) bs"
    " CROSS JOIN LATERAL (SELECT count(*) AS failures FROM rentals r WHERE r.node_id = n.id"
    " AND r.state IN ('failed', 'interrupted')"
    " AND r.state_changed_at >= $2::timestamptz - $4::bigint * interval '1 microsecond'"
    " AND r.state_changed_at < $2::timestamptz) fs"
    " WHERE n.gpu_model = $1 AND n.state = 'available' AND n.health = 'ok'"
    " ORDER BY n.id"};

// No NVLink anywhere: what a node gets when its declared shape cannot be derived (it was
// validated when the node was created, so only a hand-edited row ends up here). It can still
// take single-GPU and `interconnect: any` rentals.
topology::Matrix unlinked(int gpus) {
  topology::Matrix m;
  m.gpus = gpus;
  m.links.assign(gpus, std::vector<std::string>(gpus, "SYS"));
  for (int i = 0; i < gpus; ++i) m.links[i][i] = "X";
  return m;
}

// The matrix NodeStore derives for a new node (node_store.cpp, declared_topology) from its
// interconnect and the model's link kinds; the agent's or an admin's matrix replaces it in
// gpu_links.
topology::Matrix declared(const pqxx::row& row, int gpus) {
  auto shape = topology::parse_interconnect(row[2].c_str());
  if (!shape) return unlinked(gpus);
  std::string kind;
  if (*shape == topology::Interconnect::kNvswitch && !row[3].is_null()) kind = row[3].c_str();
  if (*shape == topology::Interconnect::kNvlinkPairs && !row[4].is_null()) kind = row[4].c_str();
  try {
    return topology::declared_matrix(*shape, gpus, kind);
  } catch (const std::invalid_argument&) {
    return unlinked(gpus);
  }
}

NodeCandidate candidate_from(const pqxx::row& row, const std::string& gpu_model) {
  NodeCandidate c;
  c.node_id = row[0].as<std::string>();
  c.gpu_model = gpu_model;
  int gpus = row[1].as<int>();

  auto links = nlohmann::json::parse(row[6].c_str());
  if (links.empty()) {
    c.links = declared(row, gpus);
  } else {
    c.links = unlinked(gpus);
    for (const auto& l : links) {
      int a = l[0].get<int>(), b = l[1].get<int>();
      if (a < 0 || b < 0 || a >= gpus || b >= gpus || a == b) continue;
      c.links.links[a][b] = c.links.links[b][a] = l[2].get<std::string>();
    }
  }

  std::map<int, std::size_t> slot;  // GPU index -> position in c.gpus
  for (const auto& g : nlohmann::json::parse(row[5].c_str())) {
    int index = g[0].get<int>();
    if (index >= gpus) continue;  // outside the matrix: placement could not use it
    slot[index] = c.gpus.size();
    c.gpus.push_back({index, g[1].get<bool>(), {}});
  }
  for (const auto& b : nlohmann::json::parse(row[7].c_str())) {
    auto it = slot.find(b[0].get<int>());
    if (it == slot.end()) continue;
    c.gpus[it->second].busy.push_back({timestamp_from_micros(b[1].get<long long>()),
                                       timestamp_from_micros(b[2].get<long long>())});
  }
  c.recent_failures = row[8].as<int>();
  return c;
}

}  // namespace

std::vector<NodeCandidate> CandidateStore::load(Tx& tx, const std::string& gpu_model,
                                                const Period& window) {
  auto lookback = std::chrono::duration_cast<std::chrono::microseconds>(kRecentFailureWindow);
  auto rows = tx.exec(kLoad, gpu_model, sql_timestamp(window.start), sql_timestamp(window.end),
                      static_cast<long long>(lookback.count()));
  std::vector<NodeCandidate> out;
  out.reserve(rows.size());
  for (const auto& row : rows) out.push_back(candidate_from(row, gpu_model));
  return out;
}

}  // namespace gpurent::scheduler
