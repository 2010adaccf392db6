// RentalStore: named, parameterised statements over rentals, allocations and rental_events.
// A state change and its event row, or a placement and its allocations, are one statement
// (data-modifying CTEs), so each costs one round trip and cannot half happen.
#include "scheduler/rental_store.h"

#include "core/id.h"
#include "core/pg_array.h"
#include "core/sql.h"
#include "inventory/node_state.h"

#include <stdexcept>

namespace gpurent::scheduler {
namespace {

// Arrays come back as JSON text: one parser for int[] and text[], whatever they hold.
#define RENTAL_PERIOD SQL_MICROS("lower(period)") ", " SQL_MICROS("upper(period)")
#define RENTAL_TIMES SQL_MICROS("pending_expires_at") ", " SQL_MICROS("created_at")
#define RENTAL_CHECK SQL_MICROS("state_changed_at") ", attempts, " SQL_MICROS("next_check_at")
#define RENTAL_COLUMNS                                                                     \
  "id, org_id, name, state, gpu_model, gpu_count, link_need, node_id,"                     \
  " to_json(gpu_indices)::text, " RENTAL_PERIOD                                            \
  ", days, image_id, to_json(ssh_key_ids)::text, price_per_day_minor, currency, price_id," \
  " wait_for_capacity, " RENTAL_TIMES ", created_by, created_by_token, " RENTAL_CHECK

constexpr Statement kCreate = {
    "rental_create",
    "WITH r AS (INSERT INTO rentals (id, org_id, created_by, created_by_token, name, state,"
    " gpu_model, gpu_count, link_need, node_id, gpu_indices, period, days, image_id, ssh_key_ids,"
    " price_per_day_minor, currency, price_id, wait_for_capacity, pending_expires_at, created_at,"
    " state_changed_at)"
    " VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11::int[],"
    " tstzrange($12::timestamptz, $13::timestamptz, '[)'), $14, $15, $16::text[], $17, $18, $19,"
    " $20, $21::timestamptz, $22::timestamptz, $22::timestamptz) RETURNING *),"
    " e AS (INSERT INTO rental_events (rental_id, at, from_state, to_state, reason, actor_user_id)"
    " SELECT id, created_at, NULL, state, $23::text, created_by FROM r)"
    " SELECT " RENTAL_COLUMNS " FROM r"};

// Bookings of one GPU take turns (kAllocationLockSpace, rental_store.h). $3 the lock space.
constexpr Statement kLockGpus = {
    "rental_lock_gpus",
    "SELECT pg_advisory_xact_lock($3::bigint + g.id) FROM (SELECT id FROM gpus"
    " WHERE node_id = $1 AND idx = ANY ($2::int[]) ORDER BY id OFFSET 0) g"};
// The rental's placement and its allocations together: rolled back together by a savepoint
// when another booking holds one of the GPUs.
constexpr Statement kAllocate = {
    "rental_allocate",
    "WITH placed AS (UPDATE rentals SET node_id = $2, gpu_indices = $3::int[] WHERE id = $1"
    " RETURNING id)"
    " INSERT INTO allocations (rental_id, gpu_id, period)"
    " SELECT placed.id, g.id, tstzrange($4::timestamptz, $5::timestamptz, '[)')"
    " FROM placed JOIN gpus g ON g.node_id = $2 AND g.idx = ANY ($3::int[]) RETURNING gpu_id"};
// create() and allocate() of a scheduled rental in one statement, on the condition that
// still holds the choice a booking made from its replica's copy of the fleet: the node takes
// allocations and is healthy, and each chosen GPU exists and is not failing. `lk` takes the
// GPUs' turn locks (as allocate() does, in GPU id order) and `ok` counts them, so every lock
// is held before the rental row and its allocations are written (each reads `ok`, which
// reads all of `lk`). A node or GPU that no longer qualifies writes nothing and returns no
// row; a GPU booked meanwhile is the exclusion violation, as in allocate(). $24 the GPU
// count, $25/$26 the allocations' period (with the cleaning window), $27 the lock space.
constexpr Statement kCreatePlaced = {
    "rental_create_placed",
    "WITH lk AS MATERIALIZED (SELECT g.id, pg_advisory_xact_lock($27::bigint + g.id)"
    " FROM (SELECT g.id FROM gpus g JOIN nodes n ON n.id = g.node_id"
    " WHERE g.node_id = $10 AND g.idx = ANY ($11::int[])"
    " AND " GPURENT_SQL_NODE_TAKING_ALLOCATIONS("n.state") " AND n.health = 'ok'"
    " AND g.health NOT IN ('warning', 'critical') ORDER BY g.id OFFSET 0) g),"
    " ok AS (SELECT count(*) = $24 AS fits FROM lk),"
    " r AS (INSERT INTO rentals (id, org_id, created_by, created_by_token, name, state,"
    " gpu_model, gpu_count, link_need, node_id, gpu_indices, period, days, image_id, ssh_key_ids,"
    " price_per_day_minor, currency, price_id, wait_for_capacity, pending_expires_at, created_at,"
    " state_changed_at)"
    " SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11::int[],"
    " tstzrange($12::timestamptz, $13::timestamptz, '[)'), $14, $15, $16::text[], $17, $18, $19,"
    " $20, $21::timestamptz, $22::timestamptz, $22::timestamptz FROM ok WHERE ok.fits"
    " RETURNING *),"
    " e AS (INSERT INTO rental_events (rental_id, at, from_state, to_state, reason, actor_user_id)"
    " SELECT id, created_at, NULL, state, $23::text, created_by FROM r),"
    " a AS (INSERT INTO allocations (rental_id, gpu_id, period)"
    " SELECT r.id, lk.id, tstzrange($25::timestamptz, $26::timestamptz, '[)') FROM r, lk)"
    " SELECT " RENTAL_COLUMNS " FROM r"};

constexpr Statement kSetPlacement = {"rental_set_placement",
                                     "UPDATE rentals SET node_id = $2, gpu_indices = $3::int[],"
                                     " period = CASE WHEN $4::timestamptz IS NULL THEN period"
                                     " ELSE tstzrange($4::timestamptz, $5::timestamptz, '[)') END"
                                     " WHERE id = $1 RETURNING id"};

constexpr Statement kGet = {"rental_get",
                            "SELECT " RENTAL_COLUMNS " FROM rentals WHERE id = $1 AND org_id = $2"};
constexpr Statement kGetAny = {"rental_get_any",
                               "SELECT " RENTAL_COLUMNS " FROM rentals WHERE id = $1"};
constexpr Statement kLock = {"rental_lock", "SELECT " RENTAL_COLUMNS
                                            " FROM rentals WHERE id = $1 AND org_id = $2"
                                            " FOR UPDATE"};
constexpr Statement kLockAny = {"rental_lock_any",
                                "SELECT " RENTAL_COLUMNS " FROM rentals WHERE id = $1 FOR UPDATE"};
constexpr Statement kTryLockAny = {"rental_try_lock_any",
                                   "SELECT " RENTAL_COLUMNS
                                   " FROM rentals WHERE id = $1 FOR UPDATE SKIP LOCKED"};

// Newest first. The first page and the ones after a cursor are separate statements, so the
// cursor's (created_at, id) bound is an index condition on rentals_org_created_idx.
constexpr Statement kListFirst = {"rental_list_first",
                                  "SELECT " RENTAL_COLUMNS
                                  " FROM rentals WHERE org_id = $1"
                                  " AND ($2::text IS NULL OR state = $2)"
                                  " ORDER BY created_at DESC, id DESC LIMIT $3"};
constexpr Statement kListAfter = {"rental_list_after",
                                  "SELECT " RENTAL_COLUMNS
                                  " FROM rentals WHERE org_id = $1"
                                  " AND ($2::text IS NULL OR state = $2)"
                                  " AND (created_at, id) < ($3::timestamptz, $4::text)"
                                  " ORDER BY created_at DESC, id DESC LIMIT $5"};
#define RENTAL_FILTER                                                           \
  " ($1::text IS NULL OR org_id = $1) AND ($2::text IS NULL OR state = $2) AND" \
  " ($3::text IS NULL OR node_id = $3)"
constexpr Statement kListAllFirst = {"rental_list_all_first",
                                     "SELECT " RENTAL_COLUMNS " FROM rentals WHERE" RENTAL_FILTER
                                     " ORDER BY created_at DESC, id DESC LIMIT $4"};
constexpr Statement kListAllAfter = {"rental_list_all_after",
                                     "SELECT " RENTAL_COLUMNS " FROM rentals WHERE" RENTAL_FILTER
                                     " AND (created_at, id) < ($4::timestamptz, $5::text)"
                                     " ORDER BY created_at DESC, id DESC LIMIT $6"};

// Under READ COMMITTED a concurrent transition of the same row makes this one wait, then
// re-check `state = $2` against the committed row: exactly one of them moves it.
constexpr Statement kTransition = {
    "rental_transition",
    "WITH moved AS (UPDATE rentals SET state = $3::text, state_changed_at = $4::timestamptz,"
    " next_check_at = NULL WHERE id = $1 AND state = $2::text RETURNING id)"
    " INSERT INTO rental_events (rental_id, at, from_state, to_state, reason, actor_user_id)"
    " SELECT id, $4::timestamptz, $2::text, $3::text, $5::text, $6::text FROM moved"
    " RETURNING rental_id"};
constexpr Statement kSetNextCheck = {
    "rental_set_next_check",
    "UPDATE rentals SET next_check_at = $2::timestamptz WHERE id = $1 RETURNING id"};
constexpr Statement kAddAttempt = {
    "rental_add_attempt",
    "UPDATE rentals SET attempts = attempts + 1 WHERE id = $1 RETURNING attempts"};
#define EVENT_AT SQL_MICROS("e.at")
constexpr Statement kEvents = {"rental_events",
                               "SELECT e.id, " EVENT_AT
                               ", e.from_state, e.to_state, e.reason, e.actor_user_id"
                               " FROM rental_events e JOIN rentals r ON r.id = e.rental_id"
                               " WHERE r.id = $1 AND r.org_id = $2 ORDER BY e.id"};

// $2: the new end of what the rental occupies. Allocations reaching past it end there; one
// that would start at or after it has nothing left and goes.
constexpr Statement kEndAllocations = {
    "rental_end_allocations",
    "WITH cut AS (UPDATE allocations SET period = tstzrange(lower(period), $2::timestamptz, '[)')"
    " WHERE rental_id = $1 AND upper(period) > $2::timestamptz"
    " AND lower(period) < $2::timestamptz RETURNING 1),"
    " gone AS (DELETE FROM allocations WHERE rental_id = $1 AND lower(period) >= $2::timestamptz"
    " RETURNING 1)"
    " SELECT (SELECT count(*) FROM cut) + (SELECT count(*) FROM gone)"};
constexpr Statement kDropAllocations = {
    "rental_drop_allocations",
    "WITH gone AS (DELETE FROM allocations WHERE rental_id = $1 RETURNING 1)"
    " SELECT count(*) FROM gone"};
// $2: the rental's new end, $3 its days, $4 the new end of its allocations.
constexpr Statement kExtend = {
    "rental_extend",
    "WITH r AS (UPDATE rentals SET period = tstzrange(lower(period), $2::timestamptz, '[)'),"
    " days = $3 WHERE id = $1 AND upper(period) < $2::timestamptz RETURNING id),"
    " a AS (UPDATE allocations SET period = tstzrange(lower(period), $4::timestamptz, '[)')"
    " WHERE rental_id IN (SELECT id FROM r) AND upper(period) < $4::timestamptz RETURNING 1)"
    " SELECT (SELECT count(*) FROM r), (SELECT count(*) FROM a)"};
#define ALLOCATION_PERIOD SQL_MICROS("lower(a.period)") ", " SQL_MICROS("upper(a.period)")
constexpr Statement kAllocations = {"rental_allocations",
                                    "SELECT g.idx, " ALLOCATION_PERIOD
                                    " FROM allocations a JOIN gpus g ON g.id = a.gpu_id"
                                    " WHERE a.rental_id = $1 ORDER BY g.idx"};

// due_at is the generated column that says when the rental's next step is due.
constexpr Statement kDue = {"rental_due", "SELECT " RENTAL_COLUMNS
                                          " FROM rentals WHERE due_at <= $1::timestamptz"
                                          " ORDER BY due_at LIMIT $2 FOR UPDATE SKIP LOCKED"};
constexpr Statement kPendingInOrder = {
    "rental_pending_in_order",
    "SELECT " RENTAL_COLUMNS " FROM rentals WHERE " GPURENT_SQL_RENTAL_WAITING_FOR_CAPACITY(
        "state") " ORDER BY created_at, id LIMIT $1 FOR UPDATE"};
constexpr Statement kRunningOn = {"rental_running_on",
                                  "SELECT id FROM rentals WHERE node_id = $1"
                                  " AND state = ANY ($2::text[]) ORDER BY id"};
// The same, read without locking, for a waiting rental's standing.
constexpr Statement kWaiting = {"rental_waiting",
                                "SELECT " RENTAL_COLUMNS
                                " FROM rentals WHERE " GPURENT_SQL_RENTAL_WAITING_FOR_CAPACITY(
                                    "state") " ORDER BY created_at, id LIMIT $1"};
// Rentals in state $2 (scheduled) on nodes in one of the states $3 (out of service), soonest
// start first.
constexpr Statement kStranded = {"rental_stranded",
                                 "SELECT " RENTAL_COLUMNS
                                 " FROM rentals WHERE state = $2::text AND node_id IN"
                                 " (SELECT id FROM nodes WHERE state = ANY ($3::text[]))"
                                 " ORDER BY lower(period), id LIMIT $1 FOR UPDATE SKIP LOCKED"};
// Every unwiped GPU of the model's nodes, by id (the order the allocation locks are taken in).
constexpr Statement kUnwipedOfModel = {
    "rental_unwiped_of_model",
    "SELECT g.id, g.node_id, g.idx FROM gpus g JOIN nodes n ON n.id = g.node_id"
    " WHERE g.unwiped_since IS NOT NULL AND n.gpu_model = $1 ORDER BY g.id"};
constexpr Statement kLockGpuIds = {
    "rental_lock_gpu_ids",
    "SELECT pg_advisory_xact_lock($2::bigint + g.id)"
    " FROM (SELECT unnest($1::bigint[]) AS id ORDER BY 1 OFFSET 0) g"};
// Allocations of the rental that hold GPUs over $3..$4 wherever they are free then; a GPU
// someone else holds in that time is busy already (an exclusion conflict skips it).
constexpr Statement kHoldGpus = {
    "rental_hold_gpus",
    "INSERT INTO allocations (rental_id, gpu_id, period)"
    " SELECT $1, g, tstzrange($3::timestamptz, $4::timestamptz, '[)')"
    " FROM unnest($2::bigint[]) AS g ON CONFLICT DO NOTHING RETURNING gpu_id"};
constexpr Statement kLetGo = {
    "rental_let_go",
    "DELETE FROM allocations WHERE rental_id = $1 AND gpu_id = ANY ($2::bigint[])"};
constexpr Statement kExpirePending = {
    "rental_expire_pending",
    "WITH expired AS (SELECT id FROM rentals WHERE " GPURENT_SQL_RENTAL_WAITING_FOR_CAPACITY("state")
    " AND pending_expires_at <= $1::timestamptz FOR UPDATE SKIP LOCKED),"
    " upd AS (UPDATE rentals r SET state = $4::text, state_changed_at = $1::timestamptz,"
    " next_check_at = NULL FROM expired WHERE r.id = expired.id RETURNING r.*),"
    " ev AS (INSERT INTO rental_events (rental_id, at, from_state, to_state, reason)"
    " SELECT id, $1::timestamptz, $3::text, $4::text, $2::text FROM upd)"
    " SELECT " RENTAL_COLUMNS " FROM upd ORDER BY created_at, id"};
constexpr Statement kNodeRentals = {"rental_node_rentals",
                                    "SELECT " RENTAL_COLUMNS
                                    " FROM rentals WHERE node_id = $1"
                                    " ORDER BY created_at DESC, id DESC LIMIT $2"};
constexpr Statement kActiveGpus = {
    "rental_active_gpu_count",
    "SELECT COALESCE(sum(gpu_count), 0)::int FROM rentals WHERE org_id = $1"
    " AND " GPURENT_SQL_RENTAL_COUNTED_AGAINST_LIMITS("state")};

RentalState state_from(const pqxx::field& f) {
  auto state = parse_rental_state(f.c_str());
  if (!state) throw std::runtime_error("rentals holds an unknown state: " + f.as<std::string>());
  return *state;
}

RentalRecord rental_from(const pqxx::row& row) {
  RentalRecord r;
  r.id = row[0].as<std::string>();
  r.org_id = row[1].as<std::string>();
  r.name = row[2].as<std::string>();
  r.state = state_from(row[3]);
  r.gpu_model = row[4].as<std::string>();
  r.gpu_count = row[5].as<int>();
  auto need = parse_link_need(row[6].c_str());
  if (!need) throw std::runtime_error("rentals holds an unknown link_need");
  r.link_need = *need;
  r.node_id = optional_field<std::string>(row[7]);
  r.gpu_indices = nlohmann::json::parse(row[8].c_str()).get<std::vector<int>>();
  r.period = {read_timestamp(row[9]), read_timestamp(row[10])};
  r.days = row[11].as<int>();
  r.image_id = row[12].as<std::string>();
  r.ssh_key_ids = nlohmann::json::parse(row[13].c_str()).get<std::vector<std::string>>();
  r.price_per_day = Money(row[14].as<long long>(), row[15].as<std::string>());
  r.price_id = row[16].as<long long>();
  r.wait_for_capacity = row[17].as<bool>();
  r.pending_expires_at = read_optional_timestamp(row[18]);
  r.created_at = read_timestamp(row[19]);
  r.created_by = row[20].as<std::string>();
  r.created_by_token = optional_field<std::string>(row[21]);
  r.state_changed_at = read_timestamp(row[22]);
  r.attempts = row[23].as<int>();
  r.next_check_at = read_optional_timestamp(row[24]);
  return r;
}

std::vector<RentalRecord> rentals_from(const pqxx::result& rows) {
  std::vector<RentalRecord> out;
  out.reserve(rows.size());
  for (const auto& row : rows) out.push_back(rental_from(row));
  return out;
}

std::optional<RentalRecord> one(const pqxx::result& rows) {
  if (rows.empty()) return std::nullopt;
  return rental_from(rows[0]);
}

std::optional<std::string> optional_state(const std::optional<RentalState>& state) {
  if (!state) return std::nullopt;
  return std::string(to_string(*state));
}

std::optional<std::string> optional_timestamp(const std::optional<Timestamp>& t) {
  if (!t) return std::nullopt;
  return sql_timestamp(*t);
}

std::optional<Keyset> after(const std::optional<std::string>& cursor) {
  if (!cursor) return std::nullopt;
  return decode_cursor(*cursor,
                       [](std::string_view id) { return is_valid_id(id_prefix::kRental, id); });
}

Page<RentalRecord> page_from(const pqxx::result& rows, int limit) {
  return page_of<RentalRecord>(rows, limit, rental_from, [](const RentalRecord& r) {
    return Keyset{r.created_at, r.id};
  });
}

void check_limit(int limit) {
  if (limit < 1) throw std::invalid_argument("a rental page holds at least one row");
}

// kCreate's and kCreatePlaced's parameters: the rental's 23 in the same order, then `more`.
template <typename... More>
pqxx::result insert_rental(Tx& tx, const Statement& statement, const NewRental& rental,
                           const std::string& now, More&&... more) {
  return tx.exec(statement, new_id(id_prefix::kRental), rental.org_id, rental.created_by,
                 rental.created_by_token, rental.name, std::string(to_string(rental.state)),
                 rental.gpu_model, rental.gpu_count, std::string(to_string(rental.link_need)),
                 rental.node_id, pg_array_literal(rental.gpu_indices),
                 sql_timestamp(rental.period.start), sql_timestamp(rental.period.end), rental.days,
                 rental.image_id, pg_array_literal(rental.ssh_key_ids),
                 static_cast<long long>(rental.price_per_day.amount_minor()),
                 rental.price_per_day.currency(), rental.price_id, rental.wait_for_capacity,
                 optional_timestamp(rental.pending_expires_at), now, rental.reason,
                 std::forward<More>(more)...);
}

}  // namespace

RentalRecord RentalStore::create(Tx& tx, const NewRental& rental) {
  if (rental.state != RentalState::kScheduled && rental.state != RentalState::kPending) {
    throw std::invalid_argument("a rental starts scheduled or pending");
  }
  auto rows = insert_rental(tx, kCreate, rental, sql_timestamp(clock_.now()));
  RentalRecord record = rental_from(rows[0]);
  for (const auto& hook : on_created_) hook(tx, record);
  return record;
}

std::optional<RentalRecord> RentalStore::create_placed(Tx& tx, const NewRental& rental,
                                                       const Period& occupies) {
  if (rental.state != RentalState::kScheduled || !rental.node_id || rental.gpu_indices.empty()) {
    throw std::invalid_argument("create_placed: a scheduled rental with its GPUs");
  }
  auto rows =
      insert_rental(tx, kCreatePlaced, rental, sql_timestamp(clock_.now()),
                    static_cast<int>(rental.gpu_indices.size()), sql_timestamp(occupies.start),
                    sql_timestamp(occupies.end), kAllocationLockSpace);
  if (rows.empty()) return std::nullopt;
  RentalRecord record = rental_from(rows[0]);
  for (const auto& hook : on_created_) hook(tx, record);
  return record;
}

void RentalStore::allocate(Tx& tx, const std::string& rental_id, const std::string& node_id,
                           const std::vector<int>& gpu_indices, const Period& occupies) {
  auto indices = pg_array_literal(gpu_indices);
  tx.exec(kLockGpus, node_id, indices, kAllocationLockSpace);
  auto rows = tx.exec(kAllocate, rental_id, node_id, indices, sql_timestamp(occupies.start),
                      sql_timestamp(occupies.end));
  if (rows.size() != gpu_indices.size() || gpu_indices.empty()) {
    throw std::invalid_argument("allocate: unknown rental " + rental_id + ", node " + node_id +
                                " or GPU index, or an index named twice");
  }
}

bool RentalStore::set_placement(Tx& tx, const std::string& rental_id, const std::string& node_id,
                                const std::vector<int>& gpu_indices,
                                const std::optional<Period>& period) {
  std::optional<std::string> start, end;
  if (period) {
    start = sql_timestamp(period->start);
    end = sql_timestamp(period->end);
  }
  return !tx.exec(kSetPlacement, rental_id, node_id, pg_array_literal(gpu_indices), start, end)
              .empty();
}

std::optional<RentalRecord> RentalStore::get(Tx& tx, const std::string& org_id,
                                             const std::string& id) {
  return one(tx.exec(kGet, id, org_id));
}

std::optional<RentalRecord> RentalStore::get_any(Tx& tx, const std::string& id) {
  return one(tx.exec(kGetAny, id));
}

std::optional<RentalRecord> RentalStore::lock(Tx& tx, const std::string& org_id,
                                              const std::string& id) {
  return one(tx.exec(kLock, id, org_id));
}

std::optional<RentalRecord> RentalStore::lock_any(Tx& tx, const std::string& id) {
  return one(tx.exec(kLockAny, id));
}

std::optional<RentalRecord> RentalStore::try_lock_any(Tx& tx, const std::string& id) {
  return one(tx.exec(kTryLockAny, id));
}

Page<RentalRecord> RentalStore::list(Tx& tx, const std::string& org_id,
                                     const std::optional<RentalState>& state, int limit,
                                     const std::optional<std::string>& cursor) {
  check_limit(limit);
  auto from = after(cursor);
  auto rows = from ? tx.exec(kListAfter, org_id, optional_state(state), sql_timestamp(from->at),
                             from->id, limit + 1)
                   : tx.exec(kListFirst, org_id, optional_state(state), limit + 1);
  return page_from(rows, limit);
}

Page<RentalRecord> RentalStore::list_all(Tx& tx, const RentalFilter& filter, int limit,
                                         const std::optional<std::string>& cursor) {
  check_limit(limit);
  auto from = after(cursor);
  auto state = optional_state(filter.state);
  auto rows = from ? tx.exec(kListAllAfter, filter.org_id, state, filter.node_id,
                             sql_timestamp(from->at), from->id, limit + 1)
                   : tx.exec(kListAllFirst, filter.org_id, state, filter.node_id, limit + 1);
  return page_from(rows, limit);
}

bool RentalStore::transition(Tx& tx, const std::string& id, RentalState from, RentalState to,
                             const std::string& reason,
                             const std::optional<std::string>& actor_user_id) {
  // A move the machine does not hold is a mistake of the caller's, never the data's.
  if (!can_move(from, to)) {
    throw std::logic_error("no rental moves from " + std::string(to_string(from)) + " to " +
                           std::string(to_string(to)));
  }
  bool moved = !tx.exec(kTransition, id, std::string(to_string(from)), std::string(to_string(to)),
                        sql_timestamp(clock_.now()), reason, actor_user_id)
                    .empty();
  // A move to the same state (a scheduled rental re-placed) is told too: webhooks announce it
  // again (rental.scheduled), billing has nothing to do for it.
  if (moved) {
    for (const auto& hook : on_transition_) hook(tx, id, from, to);
  }
  return moved;
}

bool RentalStore::set_next_check(Tx& tx, const std::string& id, std::optional<Timestamp> at) {
  return !tx.exec(kSetNextCheck, id, optional_timestamp(at)).empty();
}

int RentalStore::add_attempt(Tx& tx, const std::string& id) {
  auto rows = tx.exec(kAddAttempt, id);
  return rows.empty() ? 0 : rows[0][0].as<int>();
}

std::vector<RentalEvent> RentalStore::events(Tx& tx, const std::string& org_id,
                                             const std::string& id) {
  std::vector<RentalEvent> out;
  for (const auto& row : tx.exec(kEvents, id, org_id)) {
    RentalEvent e;
    e.id = row[0].as<long long>();
    e.at = read_timestamp(row[1]);
    if (!row[2].is_null()) e.from_state = state_from(row[2]);
    e.to_state = state_from(row[3]);
    e.reason = row[4].as<std::string>();
    e.actor_user_id = optional_field<std::string>(row[5]);
    out.push_back(std::move(e));
  }
  return out;
}

int RentalStore::end_allocations(Tx& tx, const std::string& rental_id, Timestamp at,
                                 std::chrono::microseconds cleaning_window) {
  return tx.exec(kEndAllocations, rental_id, sql_timestamp(at + cleaning_window))[0][0].as<int>();
}

int RentalStore::drop_allocations(Tx& tx, const std::string& rental_id) {
  return tx.exec(kDropAllocations, rental_id)[0][0].as<int>();
}

bool RentalStore::extend_allocations(Tx& tx, const std::string& rental_id, Timestamp new_end,
                                     int new_days, std::chrono::microseconds cleaning_window) {
  auto rows = tx.exec(kExtend, rental_id, sql_timestamp(new_end), new_days,
                      sql_timestamp(new_end + cleaning_window));
  return rows[0][0].as<int>() > 0;
}

std::vector<std::pair<int, Period>> RentalStore::allocations(Tx& tx, const std::string& rental_id) {
  std::vector<std::pair<int, Period>> out;
  for (const auto& row : tx.exec(kAllocations, rental_id)) {
    out.emplace_back(row[0].as<int>(), Period{read_timestamp(row[1]), read_timestamp(row[2])});
  }
  return out;
}

std::vector<RentalRecord> RentalStore::due(Tx& tx, Timestamp now, int limit) {
  return rentals_from(tx.exec(kDue, sql_timestamp(now), limit));
}

std::vector<RentalRecord> RentalStore::pending_in_order(Tx& tx, int limit) {
  return rentals_from(tx.exec(kPendingInOrder, limit));
}

std::vector<std::string> RentalStore::running_on(Tx& tx, const std::string& node_id) {
  std::vector<std::string> out;
  for (const auto& row : tx.exec(kRunningOn, node_id, kOnTheNode.sql()))
    out.push_back(row[0].as<std::string>());
  return out;
}

std::vector<RentalRecord> RentalStore::waiting(Tx& tx, int limit) {
  return rentals_from(tx.exec(kWaiting, limit));
}

std::vector<RentalRecord> RentalStore::stranded(Tx& tx, int limit) {
  return rentals_from(tx.exec(kStranded, limit, std::string(to_string(RentalState::kScheduled)),
                              inventory::kNodesOutOfService.sql()));
}

std::vector<UnwipedGpu> RentalStore::unwiped_gpus(Tx& tx, const std::string& gpu_model) {
  std::vector<UnwipedGpu> out;
  for (const auto& row : tx.exec(kUnwipedOfModel, gpu_model)) {
    out.push_back({row[0].as<long long>(), row[1].as<std::string>(), row[2].as<int>()});
  }
  return out;
}

std::vector<long long> RentalStore::hold_gpus(Tx& tx, const std::string& rental_id,
                                              const std::vector<long long>& gpu_ids,
                                              const Period& occupies) {
  std::vector<long long> out;
  if (gpu_ids.empty()) return out;
  auto ids = pg_array_literal(gpu_ids);
  tx.exec(kLockGpuIds, ids, kAllocationLockSpace);
  for (const auto& row : tx.exec(kHoldGpus, rental_id, ids, sql_timestamp(occupies.start),
                                 sql_timestamp(occupies.end))) {
    out.push_back(row[0].as<long long>());
  }
  return out;
}

void RentalStore::let_go(Tx& tx, const std::string& rental_id,
                         const std::vector<long long>& gpu_ids) {
  if (gpu_ids.empty()) return;
  tx.exec(kLetGo, rental_id, pg_array_literal(gpu_ids));
}

std::vector<RentalRecord> RentalStore::expire_pending(Tx& tx, Timestamp now) {
  auto expired =
      rentals_from(tx.exec(kExpirePending, sql_timestamp(now), std::string("no capacity in time"),
                           std::string(to_string(RentalState::kPending)),
                           std::string(to_string(RentalState::kCancelled))));
  // Moves like transition()'s, made in one statement: the hook hears of each.
  for (const auto& r : expired) {
    for (const auto& hook : on_transition_) {
      hook(tx, r.id, RentalState::kPending, RentalState::kCancelled);
    }
  }
  return expired;
}

std::vector<RentalRecord> RentalStore::node_rentals(Tx& tx, const std::string& node_id, int limit) {
  return rentals_from(tx.exec(kNodeRentals, node_id, limit));
}

int RentalStore::active_gpu_count(Tx& tx, const std::string& org_id) {
  return tx.exec(kActiveGpus, org_id)[0][0].as<int>();
}

}  // namespace gpurent::scheduler
