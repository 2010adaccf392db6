// NodeStore: named, parameterised statements over nodes, gpus, gpu_links, node_events and
// node_enrollment_tokens.
#include "inventory/node_store.h"

#include "core/crypto.h"
#include "core/error.h"
#include "core/id.h"
#include "core/pg_array.h"
#include "core/sql.h"

#include <algorithm>

namespace gpurent::inventory {
namespace {

// A health column's value; its CHECK admits only the names parse_health knows.
Health health_of(const pqxx::field& f) {
  return parse_health(f.as<std::string>()).value_or(Health::kUnknown);
}

#define NODE_COLUMNS \
  "id, site_id, hostname, gpu_model, gpu_count, interconnect, cpu_model, cpu_cores, ram_gb,"  \
  " disk_gb, labels::text, ssh_port, ssh_probe_key, state, " SQL_MICROS("state_changed_at") ", health, driver_version," \
  " agent_version, " SQL_MICROS("last_heartbeat_at") ", topology_source, " SQL_MICROS(         \
      "created_at")

constexpr Statement kModelLinks = {
    "node_model_links",
    "SELECT nvswitch_link_kind, bridge_link_kind FROM gpu_models WHERE name = $1"};
constexpr Statement kSiteExists = {"node_site_exists", "SELECT 1 FROM sites WHERE id = $1"};
constexpr Statement kInsertNode = {
    "node_insert",
    "INSERT INTO nodes (id, site_id, hostname, gpu_model, gpu_count, interconnect, cpu_model,"
    " cpu_cores, ram_gb, disk_gb, labels, ssh_port, state, state_changed_at, topology_source,"
    " created_at)"
    " VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11::jsonb, $13, $14::text, $12,"
    " 'declared', $12) ON CONFLICT DO NOTHING RETURNING id"};
constexpr Statement kInsertGpus = {
    "node_insert_gpus", "INSERT INTO gpus (node_id, idx) SELECT $1, generate_series(0, $2 - 1)"};
constexpr Statement kDeleteLinks = {"node_delete_links",
                                    "DELETE FROM gpu_links WHERE node_id = $1"};
constexpr Statement kInsertLinks = {
    "node_insert_links",
    "INSERT INTO gpu_links (node_id, gpu_a, gpu_b, kind)"
    " SELECT $1, a, b, k FROM unnest($2::int[], $3::int[], $4::text[]) AS t(a, b, k)"};
constexpr Statement kInsertEvent = {
    "node_insert_event",
    "INSERT INTO node_events (node_id, at, action, from_state, to_state, reason, actor_user_id)"
    " VALUES ($1, $2, $3, $4, $5, $6, $7)"};
constexpr Statement kInsertToken = {
    "node_insert_enrollment_token",
    "INSERT INTO node_enrollment_tokens (token_hash, node_id, created_at, expires_at)"
    " VALUES ($1, $2, $3, $4)"};
constexpr Statement kConsumeToken = {
    "node_consume_enrollment_token",
    "UPDATE node_enrollment_tokens SET used_at = $2"
    " WHERE token_hash = $1 AND used_at IS NULL AND expires_at > $2 RETURNING node_id"};
constexpr Statement kGetNode = {"node_get", "SELECT " NODE_COLUMNS " FROM nodes WHERE id = $1"};
constexpr Statement kLockNode = {"node_lock",
                                 "SELECT state, gpu_count FROM nodes WHERE id = $1 FOR UPDATE"};
constexpr Statement kGpus = {"node_gpus",
                             "SELECT idx, uuid, pci_bus_id, health FROM gpus WHERE node_id = $1"
                             " ORDER BY idx"};
constexpr Statement kLinks = {"node_links",
                              "SELECT gpu_a, gpu_b, kind FROM gpu_links WHERE node_id = $1"};
constexpr Statement kEvents = {
    "node_events",
    "SELECT " SQL_MICROS("at") ", action, from_state, to_state, reason, actor_user_id"
                               " FROM node_events WHERE node_id = $1 ORDER BY id DESC LIMIT 50"};
// One statement for every filter combination: a NULL parameter matches everything.
#define NODE_FILTER                                                              \
  " ($1::text IS NULL OR site_id = $1) AND ($2::text IS NULL OR state = $2) AND" \
  " ($3::text IS NULL OR gpu_model = $3)"
constexpr Statement kListFirst = {"node_list_first",
                                  "SELECT " NODE_COLUMNS " FROM nodes WHERE" NODE_FILTER
                                  " ORDER BY created_at, id LIMIT $4"};
constexpr Statement kListAfter = {"node_list_after",
                                  "SELECT " NODE_COLUMNS " FROM nodes WHERE" NODE_FILTER
                                  " AND (created_at, id) > ($4::timestamptz, $5)"
                                  " ORDER BY created_at, id LIMIT $6"};
constexpr Statement kSetState = {
    "node_set_state", "UPDATE nodes SET state = $2, state_changed_at = $3 WHERE id = $1"};
constexpr Statement kSetTopologySource = {"node_set_topology_source",
                                          "UPDATE nodes SET topology_source = $2 WHERE id = $1"};
constexpr Statement kUpdateNode = {
    "node_update",
    "UPDATE nodes SET hostname = COALESCE($2, hostname),"
    " cpu_model = CASE WHEN $3 THEN $4 ELSE cpu_model END,"
    " cpu_cores = CASE WHEN $5 THEN $6::int ELSE cpu_cores END,"
    " ram_gb = CASE WHEN $7 THEN $8::int ELSE ram_gb END,"
    " disk_gb = CASE WHEN $9 THEN $10::int ELSE disk_gb END,"
    " labels = COALESCE($11::jsonb, labels),"
    " ssh_port = COALESCE($12::int, ssh_port)"
    " WHERE id = $1 AND NOT EXISTS (SELECT 1 FROM nodes o WHERE lower(o.hostname) = lower($2)"
    " AND o.id <> $1) RETURNING id"};
constexpr Statement kRecordAgent = {
    "node_record_agent",
    "UPDATE nodes SET agent_version = $2, driver_version = $3, last_heartbeat_at = $4"
    " WHERE id = $1"};
constexpr Statement kRecordProbeKey = {
    "node_record_ssh_probe_key",
    "UPDATE nodes SET ssh_probe_key = $2 WHERE id = $1 AND ssh_probe_key IS DISTINCT FROM $2"};
constexpr Statement kRecordHeartbeat = {"node_record_heartbeat",
                                        "UPDATE nodes SET last_heartbeat_at = $2 WHERE id = $1"};
constexpr Statement kRecordHeartbeats = {
    "node_record_heartbeats",
    "UPDATE nodes AS n SET last_heartbeat_at = b.at"
    " FROM unnest($1::text[], $2::timestamptz[]) AS b(id, at) WHERE n.id = b.id"};
constexpr Statement kNotHealthy = {
    "node_not_healthy",
    "SELECT id, NULL::integer, health FROM nodes WHERE id = ANY($1::text[]) AND health <> 'ok'"
    " UNION ALL SELECT node_id, idx, health FROM gpus"
    " WHERE node_id = ANY($1::text[]) AND health <> 'ok'"};
constexpr Statement kSetHealthy = {
    "node_set_healthy",
    "UPDATE nodes SET health = 'ok' WHERE id = ANY($1::text[]) AND health <> 'ok'"};
constexpr Statement kSetGpusHealthy = {
    "node_set_gpus_healthy",
    "UPDATE gpus SET health = 'ok' WHERE node_id = ANY($1::text[]) AND health <> 'ok'"};
constexpr Statement kLockSilent = {
    "node_lock_silent",
    "SELECT id, " SQL_MICROS("last_heartbeat_at") " FROM nodes"
    " WHERE state = ANY ($2::text[]) AND last_heartbeat_at < $1::timestamptz"
    " ORDER BY last_heartbeat_at LIMIT $3 FOR UPDATE SKIP LOCKED"};
constexpr Statement kSetHealth = {"node_set_health", "UPDATE nodes SET health = $2 WHERE id = $1"};
constexpr Statement kSetGpuHealth = {"node_set_gpu_health",
                                     "UPDATE gpus SET health = $2 WHERE node_id = $1"};
constexpr Statement kHealthState = {"node_health_state",
                                    "SELECT NULL::integer, health FROM nodes WHERE id = $1"
                                    " UNION ALL SELECT idx, health FROM gpus WHERE node_id = $1"};
constexpr Statement kSetNodeHealthIfChanged = {
    "node_set_health_if_changed", "UPDATE nodes SET health = $2 WHERE id = $1 AND health <> $2"};
constexpr Statement kSetGpusHealthIfChanged = {
    "node_set_gpus_health_if_changed",
    "UPDATE gpus SET health = g.health FROM unnest($2::integer[], $3::text[]) AS g(idx, health)"
    " WHERE gpus.node_id = $1 AND gpus.idx = g.idx AND gpus.health <> g.health"};

NodeRecord node_from(const pqxx::row& row) {
  NodeRecord n;
  n.id = row[0].as<std::string>();
  n.site_id = row[1].as<std::string>();
  n.hostname = row[2].as<std::string>();
  n.gpu_model = row[3].as<std::string>();
  n.gpu_count = row[4].as<int>();
  n.interconnect = row[5].as<std::string>();
  n.cpu_model = optional_field<std::string>(row[6]);
  n.cpu_cores = optional_field<int>(row[7]);
  n.ram_gb = optional_field<int>(row[8]);
  n.disk_gb = optional_field<int>(row[9]);
  n.labels = nlohmann::json::parse(row[10].as<std::string>());
  n.ssh_port = row[11].as<int>();
  n.ssh_probe_key = optional_field<std::string>(row[12]);
  n.state = row[13].as<std::string>();
  n.state_changed_at = read_timestamp(row[14]);
  n.health = row[15].as<std::string>();
  n.driver_version = optional_field<std::string>(row[16]);
  n.agent_version = optional_field<std::string>(row[17]);
  n.last_heartbeat_at = read_optional_timestamp(row[18]);
  n.topology_source = row[19].as<std::string>();
  n.created_at = read_timestamp(row[20]);
  return n;
}

std::optional<NodeDetail> read_detail(Tx& tx, const std::string& id) {
  auto rows = tx.exec(kGetNode, id);
  if (rows.empty()) return std::nullopt;
  NodeDetail d;
  d.node = node_from(rows[0]);
  for (const auto& g : tx.exec(kGpus, id)) {
    d.gpus.push_back({g[0].as<int>(), optional_field<std::string>(g[1]),
                      optional_field<std::string>(g[2]), g[3].as<std::string>()});
  }
  int n = d.node.gpu_count;
  d.topology.gpus = n;
  d.topology.links.assign(n, std::vector<std::string>(n, "SYS"));
  for (int i = 0; i < n; ++i) d.topology.links[i][i] = "X";
  for (const auto& l : tx.exec(kLinks, id)) {
    int a = l[0].as<int>(), b = l[1].as<int>();
    if (a < 0 || b < 0 || a >= n || b >= n) continue;
    d.topology.links[a][b] = d.topology.links[b][a] = l[2].as<std::string>();
  }
  for (const auto& e : tx.exec(kEvents, id)) {
    d.events.push_back({read_timestamp(e[0]), e[1].as<std::string>(),
                        optional_field<std::string>(e[2]), e[3].as<std::string>(),
                        e[4].as<std::string>(), optional_field<std::string>(e[5])});
  }
  return d;
}

// The upper triangle of the matrix as three parallel arrays. Kinds were validated by the
// topology parser or generator, so they are safe inside an array literal.
void write_links(Tx& tx, const std::string& id, const topology::Matrix& m) {
  std::vector<int> as, bs;
  std::vector<std::string> kinds;
  for (int a = 0; a < m.gpus; ++a) {
    for (int b = a + 1; b < m.gpus; ++b) {
      const std::string& kind = m.links[a][b];
      if (!topology::is_link_kind(kind) || kind == "X") {
        throw std::invalid_argument("a link matrix holds an invalid kind");
      }
      as.push_back(a);
      bs.push_back(b);
      kinds.push_back(kind);
    }
  }
  tx.exec(kDeleteLinks, id);
  if (!kinds.empty()) {
    tx.exec(kInsertLinks, id, pg_array_literal(as), pg_array_literal(bs), pg_array_literal(kinds));
  }
}

// The shape a node declares, checked against what its GPU model can physically have.
topology::Matrix declared_topology(const NewNode& node, const std::string& interconnect,
                                   const std::optional<std::string>& nvswitch_kind,
                                   const std::optional<std::string>& bridge_kind) {
  auto shape = topology::parse_interconnect(interconnect);
  if (!shape) throw Error::invalid_field("interconnect", "must be nvswitch, nvlink-pairs or pcie");
  switch (*shape) {
    case topology::Interconnect::kNvswitch:
      if (!nvswitch_kind) {
        throw Error::invalid_field("interconnect", node.gpu_model + " is not an NVSwitch model");
      }
      return topology::declared_matrix(*shape, node.gpu_count, *nvswitch_kind);
    case topology::Interconnect::kNvlinkPairs:
      if (!bridge_kind) {
        throw Error::invalid_field("interconnect", node.gpu_model + " has no NVLink bridges");
      }
      if (node.gpu_count % 2 != 0) {
        throw Error::invalid_field("gpu_count", "must be even for NVLink-bridged pairs");
      }
      return topology::declared_matrix(*shape, node.gpu_count, *bridge_kind);
    case topology::Interconnect::kPcie:
      return topology::declared_matrix(*shape, node.gpu_count, "");
  }
  throw std::logic_error("unreachable");
}

std::string new_enrollment_token() {
  auto raw = crypto::random_bytes(32);
  return "gpe_" + crypto::to_hex(raw.data(), raw.size());
}

}  // namespace

CreatedNode NodeStore::create(Tx& tx, const NewNode& node, const Actor& actor) {
  if (node.gpu_count < 1 || node.gpu_count > 64) {
    throw Error::invalid_field("gpu_count", "must be from 1 to 64");
  }
  if (node.ssh_port < 1 || node.ssh_port > 65535) {
    throw Error::invalid_field("ssh_port", "must be a port from 1 to 65535");
  }
  auto model = tx.exec(kModelLinks, node.gpu_model);
  if (model.empty()) throw Error::invalid_field("gpu_model", "is not a GPU model in the catalog");
  if (tx.exec(kSiteExists, node.site_id).empty()) {
    throw Error::invalid_field("site_id", "is not a site");
  }
  auto nvswitch_kind = optional_field<std::string>(model[0][0]);
  auto bridge_kind = optional_field<std::string>(model[0][1]);
  std::string interconnect = node.interconnect.value_or(nvswitch_kind ? "nvswitch" : "pcie");
  topology::Matrix matrix = declared_topology(node, interconnect, nvswitch_kind, bridge_kind);

  auto now = clock_.now();
  std::string id = new_id(id_prefix::kNode);
  if (tx.exec(kInsertNode, id, node.site_id, node.hostname, node.gpu_model, node.gpu_count,
              interconnect, node.cpu_model, node.cpu_cores, node.ram_gb, node.disk_gb,
              node.labels.dump(), sql_timestamp(now), node.ssh_port,
              std::string(to_string(NodeState::kEnrolling)))
          .empty()) {
    throw Error(ErrorCode::kConflict, "A node with this hostname already exists.",
                {{"field", "hostname"}});
  }
  tx.exec(kInsertGpus, id, node.gpu_count);
  write_links(tx, id, matrix);
  tx.exec(kInsertEvent, id, sql_timestamp(now), "created", std::optional<std::string>(),
          "enrolling", "created", actor.user_id);

  CreatedNode out;
  static_cast<EnrollmentToken&>(out) = insert_enrollment_token(tx, id, now);
  write_audit(tx, now, actor,
              {.org_id = std::nullopt,
               .action = "node.created",
               .target = id,
               .details = {{"hostname", node.hostname},
                           {"site_id", node.site_id},
                           {"gpu_model", node.gpu_model},
                           {"gpu_count", node.gpu_count},
                           {"interconnect", interconnect}}});
  out.node = *read_detail(tx, id);
  return out;
}

std::optional<NodeDetail> NodeStore::get(Tx& tx, const std::string& id) {
  return read_detail(tx, id);
}

Page<NodeRecord> NodeStore::list(Tx& tx, const NodeFilter& filter, int limit,
                                 const std::optional<std::string>& cursor) {
  std::optional<Keyset> after;
  if (cursor) {
    after = decode_cursor(*cursor,
                          [](std::string_view id) { return is_valid_id(id_prefix::kNode, id); });
  }
  auto rows = after
                  ? tx.exec(kListAfter, filter.site_id, filter.state, filter.gpu_model,
                            sql_timestamp(after->at), after->id, limit + 1)
                  : tx.exec(kListFirst, filter.site_id, filter.state, filter.gpu_model, limit + 1);
  return page_of<NodeRecord>(rows, limit, node_from, [](const NodeRecord& n) {
    return Keyset{n.created_at, n.id};
  });
}

std::optional<NodeDetail> NodeStore::update(Tx& tx, const std::string& id, const NodeChange& change,
                                            const Actor& actor) {
  if (change.ssh_port && (*change.ssh_port < 1 || *change.ssh_port > 65535)) {
    throw Error::invalid_field("ssh_port", "must be a port from 1 to 65535");
  }
  if (tx.exec(kLockNode, id).empty()) return std::nullopt;
  std::optional<std::string> labels;
  if (change.labels) labels = change.labels->dump();
  if (tx.exec(kUpdateNode, id, change.hostname, change.cpu_model.change, change.cpu_model.value,
              change.cpu_cores.change, change.cpu_cores.value, change.ram_gb.change,
              change.ram_gb.value, change.disk_gb.change, change.disk_gb.value, labels,
              change.ssh_port)
          .empty()) {
    throw Error(ErrorCode::kConflict, "A node with this hostname already exists.",
                {{"field", "hostname"}});
  }
  nlohmann::json fields = nlohmann::json::array();
  if (change.hostname) fields.push_back("hostname");
  if (change.cpu_model.change) fields.push_back("cpu_model");
  if (change.cpu_cores.change) fields.push_back("cpu_cores");
  if (change.ram_gb.change) fields.push_back("ram_gb");
  if (change.disk_gb.change) fields.push_back("disk_gb");
  if (change.labels) fields.push_back("labels");
  if (change.ssh_port) fields.push_back("ssh_port");
  write_audit(tx, clock_.now(), actor,
              {.org_id = std::nullopt,
               .action = "node.updated",
               .target = id,
               .details = {{"fields", fields}}});
  return read_detail(tx, id);
}

std::optional<NodeDetail> NodeStore::transition(Tx& tx, const std::string& id, NodeAction action,
                                                const std::string& reason,
                                                const std::optional<Actor>& actor) {
  // The row lock orders concurrent transitions: each sees the state the last one left.
  auto locked = tx.exec(kLockNode, id);
  if (locked.empty()) return std::nullopt;
  std::string from_text = locked[0][0].as<std::string>();
  auto from = parse_node_state(from_text);
  auto to = from ? next_state(*from, action) : std::nullopt;
  if (!to) {
    throw Error(ErrorCode::kInvalidState,
                "A node in state " + from_text + " cannot take the action " +
                    std::string(to_string(action)) + ".",
                {{"state", from_text}, {"action", to_string(action)}});
  }
  auto at = clock_.now();
  auto now = sql_timestamp(at);
  std::string to_text(to_string(*to));
  tx.exec(kSetState, id, to_text, now);
  std::optional<std::string> actor_id;
  if (actor) actor_id = actor->user_id;
  tx.exec(kInsertEvent, id, now, std::string(to_string(action)), from_text, to_text, reason,
          actor_id);
  if (actor) {
    std::string audit_action = "node." + std::string(to_string(action));
    write_audit(tx, at, *actor,
                {.org_id = std::nullopt,
                 .action = audit_action,
                 .target = id,
                 .details = {{"from", from_text}, {"to", to_text}, {"reason", reason}}});
  }
  return read_detail(tx, id);
}

std::optional<NodeDetail> NodeStore::set_topology(Tx& tx, const std::string& id,
                                                  const topology::Matrix& matrix,
                                                  const std::string& source, const Actor& actor) {
  auto locked = tx.exec(kLockNode, id);
  if (locked.empty()) return std::nullopt;
  int gpu_count = locked[0][1].as<int>();
  if (matrix.gpus != gpu_count) {
    throw Error::invalid_field("topology", "the matrix has " + std::to_string(matrix.gpus) +
                                               " GPUs but the node has " +
                                               std::to_string(gpu_count));
  }
  write_links(tx, id, matrix);
  tx.exec(kSetTopologySource, id, source);
  int nvlink_pairs = 0;
  for (int a = 0; a < matrix.gpus; ++a) {
    for (int b = a + 1; b < matrix.gpus; ++b)
      nvlink_pairs += topology::is_nvlink(matrix.links[a][b]);
  }
  write_audit(
      tx, clock_.now(), actor,
      {.org_id = std::nullopt,
       .action = "node.topology_set",
       .target = id,
       .details = {{"source", source}, {"gpus", matrix.gpus}, {"nvlink_pairs", nvlink_pairs}}});
  return read_detail(tx, id);
}

EnrollmentToken NodeStore::insert_enrollment_token(Tx& tx, const std::string& id, Timestamp now) {
  EnrollmentToken out;
  out.enrollment_token = new_enrollment_token();
  out.enrollment_expires_at =
      now + std::chrono::duration_cast<std::chrono::microseconds>(enrollment_ttl_);
  tx.exec(kInsertToken, crypto::sha256_hex(out.enrollment_token), id, sql_timestamp(now),
          sql_timestamp(out.enrollment_expires_at));
  return out;
}

std::optional<EnrollmentToken> NodeStore::issue_enrollment_token(Tx& tx, const std::string& id,
                                                                 const Actor& actor) {
  auto locked = tx.exec(kLockNode, id);
  if (locked.empty()) return std::nullopt;
  if (locked[0][0].as<std::string>() == "retired") {
    throw Error(ErrorCode::kInvalidState, "The node is retired; its agent cannot enrol.",
                {{"state", "retired"}});
  }
  auto now = clock_.now();
  auto out = insert_enrollment_token(tx, id, now);
  write_audit(tx, now, actor,
              {.org_id = std::nullopt, .action = "node.enrollment_token", .target = id});
  return out;
}

std::optional<std::string> NodeStore::consume_enrollment_token(Tx& tx, const std::string& token) {
  auto rows = tx.exec(kConsumeToken, crypto::sha256_hex(token), sql_timestamp(clock_.now()));
  return rows.empty() ? std::nullopt : std::optional<std::string>(rows[0][0].as<std::string>());
}

void NodeStore::record_agent(Tx& tx, const std::string& id, const std::string& agent_version,
                             const std::string& driver_version) {
  tx.exec(kRecordAgent, id, agent_version, driver_version, sql_timestamp(clock_.now()));
}

void NodeStore::record_ssh_probe_key(Tx& tx, const std::string& id,
                                     const std::optional<std::string>& public_key) {
  tx.exec(kRecordProbeKey, id, public_key);
}

void NodeStore::record_heartbeat(Tx& tx, const std::string& id) {
  tx.exec(kRecordHeartbeat, id, sql_timestamp(clock_.now()));
}

std::vector<NodeStore::Silent> NodeStore::lock_silent(Tx& tx, Timestamp before, int limit) {
  std::vector<Silent> out;
  for (const auto& row :
       tx.exec(kLockSilent, sql_timestamp(before), kNodesInService.sql(), limit)) {
    out.push_back({row[0].as<std::string>(), read_timestamp(row[1])});
  }
  return out;
}

std::map<std::string, NodeHealthState> NodeStore::record_healthy_heartbeats(
    Tx& tx, const std::vector<HeartbeatSeen>& beats) {
  std::map<std::string, NodeHealthState> before;
  if (beats.empty()) return before;
  // In id order, so two batches that overlap lock their rows in the same order.
  std::vector<const HeartbeatSeen*> sorted;
  for (const auto& b : beats) sorted.push_back(&b);
  std::sort(sorted.begin(), sorted.end(),
            [](const auto* a, const auto* b) { return a->node_id < b->node_id; });
  std::vector<std::string> ids;
  std::vector<std::string> times;
  for (const auto* b : sorted) {
    ids.push_back(b->node_id);
    times.push_back(sql_timestamp(b->at));
  }
  std::string id_array = pg_array_literal(ids);
  tx.exec(kRecordHeartbeats, id_array, pg_array_literal(times));
  auto rows = tx.exec(kNotHealthy, id_array);
  if (rows.empty()) return before;
  for (const auto& row : rows) {
    // A node listed for its GPUs alone was ok itself.
    auto& state = before.try_emplace(row[0].as<std::string>(), NodeHealthState{Health::kOk, {}})
                      .first->second;
    if (row[1].is_null()) {
      state.node = health_of(row[2]);
    } else {
      state.gpus[row[1].as<int>()] = health_of(row[2]);
    }
  }
  std::vector<std::string> unhealthy;
  for (const auto& [id, state] : before) unhealthy.push_back(id);
  std::string unhealthy_array = pg_array_literal(unhealthy);
  tx.exec(kSetHealthy, unhealthy_array);
  tx.exec(kSetGpusHealthy, unhealthy_array);
  return before;
}

std::optional<NodeHealthState> NodeStore::health_state(Tx& tx, const std::string& id) {
  auto rows = tx.exec(kHealthState, id);
  if (rows.empty()) return std::nullopt;
  NodeHealthState state;
  for (const auto& row : rows) {
    if (row[0].is_null()) {
      state.node = health_of(row[1]);
    } else {
      state.gpus[row[0].as<int>()] = health_of(row[1]);
    }
  }
  return state;
}

void NodeStore::set_health(Tx& tx, const std::string& id, const NodeHealthState& health) {
  tx.exec(kSetNodeHealthIfChanged, id, std::string(to_string(health.node)));
  if (health.gpus.empty()) return;
  std::vector<int> indexes;
  std::vector<std::string> values;
  for (const auto& [index, value] : health.gpus) {
    indexes.push_back(index);
    values.emplace_back(to_string(value));
  }
  tx.exec(kSetGpusHealthIfChanged, id, pg_array_literal(indexes), pg_array_literal(values));
}

void NodeStore::set_health(Tx& tx, const std::string& id, Health health) {
  std::string name(to_string(health));
  tx.exec(kSetHealth, id, name);
  tx.exec(kSetGpuHealth, id, name);
}

}  // namespace gpurent::inventory
