// TaskStore: named, parameterised statements over agent_tasks.
#include "scheduler/task_store.h"

#include "core/id.h"
#include "core/sql.h"

#include <algorithm>
#include <stdexcept>
#include <tuple>

namespace gpurent::scheduler {
namespace {

#define TASK_TIMES SQL_MICROS("created_at") ", " SQL_MICROS("updated_at")
#define TASK_COLUMNS                                                          \
  "id, node_id, rental_id, kind, payload::text, state, attempts, " TASK_TIMES \
  ", result_message, " SQL_MICROS("deadline")

constexpr Statement kNodesWithQueued = {
    "task_nodes_with_queued",
    "SELECT DISTINCT node_id FROM agent_tasks WHERE state = 'queued' LIMIT $1"};
constexpr Statement kCreateTask = {
    "task_create",
    "INSERT INTO agent_tasks (id, node_id, rental_id, kind, payload, state, created_at,"
    " updated_at, deadline) VALUES ($1, $2, $3, $4, $5::jsonb, 'queued', $6::timestamptz,"
    " $6::timestamptz, $7::timestamptz) RETURNING " TASK_COLUMNS};
constexpr Statement kGetTask = {"task_get",
                                "SELECT " TASK_COLUMNS " FROM agent_tasks WHERE id = $1"};
constexpr Statement kForRental = {"task_for_rental", "SELECT " TASK_COLUMNS
                                                     " FROM agent_tasks WHERE rental_id = $1"
                                                     " ORDER BY created_at, id"};
constexpr Statement kOpenForNode = {"task_open_for_node", "SELECT " TASK_COLUMNS
                                                          " FROM agent_tasks WHERE node_id = $1"
                                                          " AND state IN ('queued', 'delivered')"
                                                          " ORDER BY created_at, id LIMIT $2"};
constexpr Statement kDelivered = {
    "task_mark_delivered",
    "UPDATE agent_tasks SET state = 'delivered', attempts = attempts + 1,"
    " updated_at = $2::timestamptz WHERE id = $1 AND state IN ('queued', 'delivered')"
    " RETURNING id"};
// The node's tasks not sent yet, taken for sending: concurrent callers (a notification and
// the poll, or two of each) get disjoint sets, so a task is sent once unless resent.
constexpr Statement kClaimQueued = {
    "task_claim_queued",
    "UPDATE agent_tasks SET state = 'delivered', attempts = attempts + 1,"
    " updated_at = $3::timestamptz WHERE id IN (SELECT id FROM agent_tasks WHERE node_id = $1"
    " AND state = 'queued' ORDER BY created_at, id LIMIT $2 FOR UPDATE SKIP LOCKED)"
    " RETURNING " TASK_COLUMNS};
constexpr Statement kComplete = {
    "task_complete",
    "UPDATE agent_tasks SET state = $2::text, result_message = $3::text,"
    " updated_at = $4::timestamptz, result = $5::jsonb WHERE id = $1"
    " AND state IN ('queued', 'delivered') RETURNING id"};
constexpr Statement kResult = {"task_result", "SELECT result::text FROM agent_tasks WHERE id = $1"};

AgentTask task_from(const pqxx::row& row) {
  AgentTask t;
  t.id = row[0].as<std::string>();
  t.node_id = row[1].as<std::string>();
  t.rental_id = optional_field<std::string>(row[2]);
  auto kind = parse_task_kind(row[3].c_str());
  auto state = parse_task_state(row[5].c_str());
  if (!kind || !state) throw std::runtime_error("agent_tasks holds an unknown kind or state");
  t.kind = *kind;
  t.payload = nlohmann::json::parse(row[4].c_str());
  t.state = *state;
  t.attempts = row[6].as<int>();
  t.created_at = read_timestamp(row[7]);
  t.updated_at = read_timestamp(row[8]);
  t.result_message = optional_field<std::string>(row[9]);
  t.deadline = read_optional_timestamp(row[10]);
  return t;
}

std::vector<AgentTask> tasks_from(const pqxx::result& rows) {
  std::vector<AgentTask> out;
  out.reserve(rows.size());
  for (const auto& row : rows) out.push_back(task_from(row));
  return out;
}

}  // namespace

AgentTask TaskStore::create(Tx& tx, const std::string& node_id,
                            const std::optional<std::string>& rental_id, TaskKind kind,
                            const nlohmann::json& payload, std::optional<Timestamp> deadline) {
  if (!payload.is_object()) throw std::invalid_argument("a task's payload is a JSON object");
  std::optional<std::string> due;
  if (deadline) due = sql_timestamp(*deadline);
  auto rows =
      tx.exec(kCreateTask, new_id(id_prefix::kTask), node_id, rental_id,
              std::string(to_string(kind)), payload.dump(), sql_timestamp(clock_.now()), due);
  return task_from(rows[0]);
}

std::optional<AgentTask> TaskStore::get(Tx& tx, const std::string& id) {
  auto rows = tx.exec(kGetTask, id);
  if (rows.empty()) return std::nullopt;
  return task_from(rows[0]);
}

std::vector<AgentTask> TaskStore::for_rental(Tx& tx, const std::string& rental_id) {
  return tasks_from(tx.exec(kForRental, rental_id));
}

std::vector<AgentTask> TaskStore::queued_for_node(Tx& tx, const std::string& node_id, int limit) {
  return tasks_from(tx.exec(kOpenForNode, node_id, limit));
}

std::vector<AgentTask> TaskStore::claim_queued(Tx& tx, const std::string& node_id, int limit) {
  std::vector<AgentTask> out;
  for (const auto& row : tx.exec(kClaimQueued, node_id, limit, sql_timestamp(clock_.now()))) {
    out.push_back(task_from(row));
  }
  std::sort(out.begin(), out.end(), [](const AgentTask& a, const AgentTask& b) {
    return std::tie(a.created_at, a.id) < std::tie(b.created_at, b.id);
  });
  return out;
}

std::vector<std::string> TaskStore::nodes_with_queued(Tx& tx, int limit) {
  std::vector<std::string> out;
  for (const auto& row : tx.exec(kNodesWithQueued, limit)) out.push_back(row[0].as<std::string>());
  return out;
}

bool TaskStore::mark_delivered(Tx& tx, const std::string& id) {
  return !tx.exec(kDelivered, id, sql_timestamp(clock_.now())).empty();
}

bool TaskStore::complete(Tx& tx, const std::string& id, bool ok, const std::string& message,
                         const std::optional<nlohmann::json>& result) {
  std::string state(to_string(ok ? TaskState::kSucceeded : TaskState::kFailed));
  std::optional<std::string> kept;
  if (result) kept = result->dump();
  return !tx.exec(kComplete, id, state, message, sql_timestamp(clock_.now()), kept).empty();
}

std::optional<nlohmann::json> TaskStore::result(Tx& tx, const std::string& id) {
  auto rows = tx.exec(kResult, id);
  if (rows.empty() || rows[0][0].is_null()) return std::nullopt;
  return nlohmann::json::parse(rows[0][0].c_str());
}

}  // namespace gpurent::scheduler
