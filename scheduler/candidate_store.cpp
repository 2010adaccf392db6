// CandidateStore: one statement loads every candidate node with its GPUs, links, busy periods
// and failure count, so a booking pays one round trip however many nodes the fleet has. The
// statement is set-based: GPUs, links and allocations each come from one scan or hash join
// over their table, grouped per node, not from per-node subqueries, which cost an index probe
// per node and per GPU (about 1.2 s at 10,000 nodes). Rows are plain text, parsed without
// JSON. See docs/PERFORMANCE.md, "Availability calendar".
#include "scheduler/candidate_store.h"

#include "core/pg_array.h"
#include "core/sql.h"
#include "inventory/node_state.h"
#include "scheduler/rental_state.h"

#include <algorithm>
#include <charconv>
#include <stdexcept>
#include <string_view>
#include <unordered_map>

namespace gpurent::scheduler {
namespace {

// Two kinds of rows:
//  0, node id, gpu_count, recent failures, gpu model, interconnect, nvswitch kind, bridge kind,
//     GPUs as "<index><+ healthy|- not><gpu id>" separated by spaces,
//     links as "<gpu_a> <gpu_b> <kind>" separated by spaces (NULL: no rows in gpu_links),
//     site id, site name;
//  1, -, gpu id, start, end (microseconds): an allocation overlapping the window.
// $2/$3 are the window, $4 the failure lookback in microseconds; which nodes (CANDIDATE, a
// condition on `n`) differs: one model's or a few named ones. For one model the allocations
// are read once (allocations_no_overlap's GiST index for a short window, a scan for a long
// one) and hash-joined to the candidates' GPUs: `+ 0` (ALLOCATED_GPU) keeps the planner from
// probing the index once per GPU instead (68,000 probes at 10,000 nodes); for a few named
// nodes, probing the index per GPU is what is wanted. The CTE is inlined (NOT MATERIALIZED)
// so that the planner's row estimates stay real: over a materialised one it guessed millions
// of rows and compiled the statement with JIT, a quarter of a second more. Sending GPUs and
// links one row each instead (28 link rows per 8-GPU node) cost a third more at 10,000 nodes,
// most of it in formatting and parsing rows. Row order is not relied on.
#define GPURENT_CANDIDATE_LOAD(CANDIDATE, ALLOCATED_GPU) \
  "WITH cn AS NOT MATERIALIZED (SELECT n.id FROM nodes n WHERE " CANDIDATE ")"                   \
  " SELECT 0, n.id, n.gpu_count::bigint, COALESCE(f.failures, 0), NULL::bigint, n.gpu_model,"   \
  " n.interconnect, m.nvswitch_link_kind, m.bridge_link_kind, gs.gpus, ls.links, s.id, s.name"  \
  " FROM nodes n JOIN gpu_models m ON m.name = n.gpu_model JOIN sites s ON s.id = n.site_id"     \
  " LEFT JOIN (SELECT r.node_id, count(*) AS failures FROM rentals r"                            \
  " WHERE " GPURENT_SQL_RENTAL_WENT_WRONG("r.state")                                              \
  " AND r.state_changed_at >= $2::timestamptz - $4::bigint * interval '1 microsecond'"           \
  " AND r.state_changed_at < $2::timestamptz GROUP BY r.node_id) f ON f.node_id = n.id"          \
  " LEFT JOIN (SELECT g.node_id, string_agg(g.idx || CASE WHEN g.health IN ('warning',"         \
  " 'critical') THEN '-' ELSE '+' END || g.id, ' ') AS gpus"                                     \
  " FROM gpus g JOIN cn ON cn.id = g.node_id GROUP BY g.node_id) gs ON gs.node_id = n.id"        \
  " LEFT JOIN (SELECT l.node_id, string_agg(l.gpu_a || ' ' || l.gpu_b || ' ' || l.kind, ' ')"   \
  " AS links FROM gpu_links l JOIN cn ON cn.id = l.node_id GROUP BY l.node_id) ls"               \
  " ON ls.node_id = n.id"                                                                        \
  " WHERE " CANDIDATE " UNION ALL SELECT 1, NULL, a.gpu_id, " SQL_MICROS(                       \
      "lower(a.period)") ", " SQL_MICROS("upper(a.period)") ", NULL, NULL, NULL, NULL, NULL,"    \
                                                            " NULL, NULL, NULL"                  \
  " FROM allocations a JOIN gpus g ON g.id = " ALLOCATED_GPU " JOIN cn ON cn.id = g.node_id"     \
  " WHERE a.period && tstzrange($2::timestamptz, $3::timestamptz, '[)')"

// $1 the model.
constexpr Statement kLoadModel = {
    "candidate_load",
    GPURENT_CANDIDATE_LOAD("n.gpu_model = $1 AND " GPURENT_SQL_NODE_TAKING_ALLOCATIONS(
                               "n.state") " AND n.health = 'ok'",
                           "a.gpu_id + 0")};
// $1 the node ids (text[]).
constexpr Statement kLoadNodes = {
    "candidate_load_nodes",
    GPURENT_CANDIDATE_LOAD("n.id = ANY ($1::text[]) AND " GPURENT_SQL_NODE_TAKING_ALLOCATIONS(
                               "n.state") " AND n.health = 'ok'",
                           "a.gpu_id")};
#undef GPURENT_CANDIDATE_LOAD

// Whether the planner's idea of the fleet is out of date: `nodes` never analyzed, or holding
// more than a fifth (and 20 rows) more than when it was. Nodes, their GPUs and their links
// are written together, so the nodes' count stands for all three. The count reads the whole
// table, which the whole-model load it comes before does anyway.
constexpr Statement kStatisticsStale = {"candidate_statistics_stale",
                                        "SELECT c.reltuples < 0 OR n.rows > c.reltuples * 1.2 + 20"
                                        " FROM pg_class c, (SELECT count(*) AS rows FROM nodes) n"
                                        " WHERE c.oid = 'nodes'::regclass"};

// Not a preparable statement; in the load's transaction, so that its statement runs with the
// new statistics. Another transaction's ANALYZE of the same tables makes this one wait for
// it (a lock ANALYZE takes), and then find the statistics fresh next time.
constexpr const char* kAnalyzeFleet = "ANALYZE nodes, gpus, gpu_links";

enum RowKind { kNodeRow = 0, kBusyRow = 1 };

[[noreturn]] void malformed(std::string_view what) {
  throw std::runtime_error("candidate_load: malformed " + std::string(what));
}

// An integer at the start of `text`, which then moves past it: the columns and lists here are
// PostgreSQL's text output of integers, parsed without pqxx's conversion machinery since a
// load parses a few hundred thousand of them.
long long take_number(std::string_view& text) {
  long long v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc{}) malformed("integer");
  text.remove_prefix(static_cast<std::size_t>(end - text.data()));
  return v;
}

long long number(const pqxx::field& f) {
  std::string_view text(f.c_str(), f.size());
  long long v = take_number(text);
  if (!text.empty()) malformed("integer column");
  return v;
}

// The next space-separated word of `text`.
std::string_view take_word(std::string_view& text) {
  while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
  auto end = std::min(text.find(' '), text.size());
  auto word = text.substr(0, end);
  text.remove_prefix(end);
  return word;
}

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
  auto shape = topology::parse_interconnect(row[6].c_str());
  if (!shape) return unlinked(gpus);
  std::string kind;
  if (*shape == topology::Interconnect::kNvswitch && !row[7].is_null()) kind = row[7].c_str();
  if (*shape == topology::Interconnect::kNvlinkPairs && !row[8].is_null()) kind = row[8].c_str();
  try {
    return topology::declared_matrix(*shape, gpus, kind);
  } catch (const std::invalid_argument&) {
    return unlinked(gpus);
  }
}

long long lookback_micros() {
  return std::chrono::duration_cast<std::chrono::microseconds>(CandidateStore::kRecentFailureWindow)
      .count();
}

std::vector<NodeCandidate> parse_load(const pqxx::result& rows) {
  std::vector<NodeCandidate> out;
  // gpu id -> (position in out, GPU index), for the allocation rows.
  std::unordered_map<long long, std::pair<std::size_t, int>> gpu_slots;
  for (const auto& row : rows) {
    if (number(row[0]) != kNodeRow) continue;
    NodeCandidate c;
    c.node_id = row[1].c_str();
    c.gpu_model = row[5].c_str();
    const int gpus = static_cast<int>(number(row[2]));
    c.recent_failures = static_cast<int>(number(row[3]));
    c.interconnect = row[6].c_str();
    c.site_id = row[11].c_str();
    c.site_name = row[12].c_str();

    if (row[10].is_null()) {
      c.links = declared(row, gpus);
    } else {
      c.links = unlinked(gpus);
      std::string_view links(row[10].c_str(), row[10].size());
      for (auto word = take_word(links); !word.empty(); word = take_word(links)) {
        int a = static_cast<int>(take_number(word));
        auto b_word = take_word(links);
        int b = static_cast<int>(take_number(b_word));
        auto kind = take_word(links);
        if (!word.empty() || !b_word.empty() || kind.empty()) malformed("link list");
        if (a < 0 || b < 0 || a >= gpus || b >= gpus || a == b) continue;
        c.links.links[a][b] = c.links.links[b][a] = std::string(kind);
      }
    }

    if (!row[9].is_null()) {
      std::string_view list(row[9].c_str(), row[9].size());
      for (auto word = take_word(list); !word.empty(); word = take_word(list)) {
        int index = static_cast<int>(take_number(word));
        if (word.empty() || (word.front() != '+' && word.front() != '-')) malformed("GPU list");
        bool healthy = word.front() == '+';
        word.remove_prefix(1);
        long long id = take_number(word);
        if (!word.empty()) malformed("GPU list");
        if (index >= gpus) continue;  // outside the matrix: placement could not use it
        c.gpus.push_back({index, healthy, {}});
        gpu_slots.emplace(id, std::make_pair(out.size(), index));
      }
      std::sort(c.gpus.begin(), c.gpus.end(),
                [](const CandidateGpu& x, const CandidateGpu& y) { return x.index < y.index; });
    }
    out.push_back(std::move(c));
  }

  for (const auto& row : rows) {
    if (number(row[0]) != kBusyRow) continue;
    auto slot = gpu_slots.find(number(row[2]));
    if (slot == gpu_slots.end()) continue;
    auto& gpus = out[slot->second.first].gpus;
    // GPU indices are unique per node (the gpus table's key), and the list is sorted.
    auto g = std::lower_bound(gpus.begin(), gpus.end(), slot->second.second,
                              [](const CandidateGpu& x, int i) { return x.index < i; });
    if (g == gpus.end() || g->index != slot->second.second) continue;
    g->busy.push_back(
        {timestamp_from_micros(number(row[3])), timestamp_from_micros(number(row[4]))});
  }

  // By node id, as bytes compare (the database's collation may order ids otherwise).
  std::sort(out.begin(), out.end(),
            [](const NodeCandidate& x, const NodeCandidate& y) { return x.node_id < y.node_id; });
  return out;
}

}  // namespace

std::vector<NodeCandidate> CandidateStore::load(Tx& tx, const std::string& gpu_model,
                                                const Period& window) {
  return parse_load(tx.exec(kLoadModel, gpu_model, sql_timestamp(window.start),
                            sql_timestamp(window.end), lookback_micros()));
}

bool CandidateStore::keep_statistics(Tx& tx) {
  if (!tx.exec(kStatisticsStale)[0][0].as<bool>()) return false;
  tx.exec_fixed(kAnalyzeFleet);
  return true;
}

std::vector<NodeCandidate> CandidateStore::load_nodes(Tx& tx,
                                                      const std::vector<std::string>& node_ids,
                                                      const Period& window) {
  if (node_ids.empty()) return {};
  return parse_load(tx.exec(kLoadNodes, pg_array_literal(node_ids), sql_timestamp(window.start),
                            sql_timestamp(window.end), lookback_micros()));
}

}  // namespace gpurent::scheduler
