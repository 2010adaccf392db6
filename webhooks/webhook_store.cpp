// WebhookStore: named, parameterised statements over the webhook tables.
#include "webhooks/webhook_store.h"

#include "core/crypto.h"
#include "core/id.h"
#include "core/pg_array.h"
#include "core/sql.h"
#include "webhooks/events.h"
#include "webhooks/signature.h"

#include <charconv>
#include <map>

namespace gpurent::webhooks {
namespace {

#define WEBHOOK_COLUMNS "id, org_id, url, to_json(events)::text, " SQL_MICROS("created_at")

constexpr Statement kWebhookInsert = {
    "webhook_insert",
    "INSERT INTO webhooks (id, org_id, url, events, secret, created_by, created_at)"
    " VALUES ($1, $2, $3, $4::text[], $5, $6, $7) RETURNING " WEBHOOK_COLUMNS};
constexpr Statement kWebhookListFirst = {"webhook_list_first",
                                         "SELECT " WEBHOOK_COLUMNS
                                         " FROM webhooks WHERE org_id = $1 AND disabled_at IS NULL"
                                         " ORDER BY created_at, id LIMIT $2"};
constexpr Statement kWebhookListAfter = {
    "webhook_list_after",
    "SELECT " WEBHOOK_COLUMNS
    " FROM webhooks WHERE org_id = $1 AND disabled_at IS NULL"
    " AND (created_at, id) > ($2::timestamptz, $3) ORDER BY created_at, id LIMIT $4"};
constexpr Statement kWebhookGet = {"webhook_get", "SELECT " WEBHOOK_COLUMNS
                                                  " FROM webhooks WHERE org_id = $1 AND id = $2"
                                                  " AND disabled_at IS NULL"};
// Disables the webhook and, in the same statement, fails what it had still to deliver.
constexpr Statement kWebhookDisable = {
    "webhook_disable",
    "WITH off AS (UPDATE webhooks SET disabled_at = $3 WHERE org_id = $1 AND id = $2"
    " AND disabled_at IS NULL RETURNING id, url),"
    " failed AS (UPDATE webhook_deliveries d SET state = 'failed', finished_at = $3,"
    " last_error = 'webhook deleted' FROM off WHERE d.webhook_id = off.id"
    " AND d.state = 'pending' RETURNING d.id)"
    " SELECT url, (SELECT count(*) FROM failed) FROM off"};

#define DELIVERY_COLUMNS \
  "d.id, d.event_id, e.type, d.state, d.attempts, " SQL_MICROS("d.next_attempt_at")           \
  ", d.last_status, d.last_error, " SQL_MICROS("d.created_at") ", " SQL_MICROS("d.finished_at")

constexpr Statement kDeliveriesFirst = {
    "webhook_deliveries_first",
    "SELECT " DELIVERY_COLUMNS
    " FROM webhook_deliveries d JOIN webhook_events e ON e.id = d.event_id"
    " WHERE d.webhook_id = $1 ORDER BY d.created_at DESC, d.id DESC LIMIT $2"};
constexpr Statement kDeliveriesAfter = {
    "webhook_deliveries_after",
    "SELECT " DELIVERY_COLUMNS
    " FROM webhook_deliveries d JOIN webhook_events e ON e.id = d.event_id"
    " WHERE d.webhook_id = $1 AND (d.created_at, d.id) < ($2::timestamptz, $3::bigint)"
    " ORDER BY d.created_at DESC, d.id DESC LIMIT $4"};
constexpr Statement kAttemptsOf = {
    "webhook_attempts_of",
    "SELECT delivery_id, attempt, " SQL_MICROS("at") ", duration_ms, status, error"
    " FROM webhook_attempts WHERE delivery_id = ANY ($1::bigint[])"
    " ORDER BY delivery_id, attempt"};

constexpr Statement kWebhookWants = {
    "webhook_wants",
    "SELECT EXISTS (SELECT 1 FROM webhooks WHERE org_id = $1 AND disabled_at IS NULL"
    " AND $2 = ANY (events))"};

constexpr Statement kWebhookSubscriptions = {
    "webhook_subscriptions",
    "SELECT org_id, to_json(events)::text FROM webhooks WHERE disabled_at IS NULL"};

constexpr Statement kWebhookRentalWanted = {
    "webhook_rental_wanted",
    "SELECT EXISTS (SELECT 1 FROM rentals r JOIN webhooks w ON w.org_id = r.org_id"
    " WHERE r.id = $1 AND w.disabled_at IS NULL AND $2 = ANY (w.events))"};

// The event only when someone subscribes (an org without webhooks stores nothing), and a
// delivery per subscriber; a repeated dedup key writes neither.
constexpr Statement kWebhookEmit = {
    "webhook_emit",
    "WITH subs AS (SELECT id FROM webhooks WHERE org_id = $1 AND disabled_at IS NULL"
    "  AND $2 = ANY (events)),"
    " ev AS (INSERT INTO webhook_events (id, org_id, type, payload, dedup_key, created_at)"
    "  SELECT $3, $1, $2, $4::jsonb, $5, $6 WHERE EXISTS (SELECT 1 FROM subs)"
    "  ON CONFLICT (org_id, dedup_key) WHERE dedup_key IS NOT NULL DO NOTHING RETURNING id),"
    " d AS (INSERT INTO webhook_deliveries (webhook_id, event_id, state, next_attempt_at,"
    "  created_at) SELECT subs.id, ev.id, 'pending', $6, $6 FROM subs, ev RETURNING event_id)"
    " SELECT DISTINCT event_id FROM d"};

constexpr Statement kWebhookPing = {
    "webhook_ping",
    "WITH hook AS (SELECT id FROM webhooks WHERE org_id = $1 AND id = $2"
    "  AND disabled_at IS NULL),"
    " ev AS (INSERT INTO webhook_events (id, org_id, type, payload, created_at)"
    "  SELECT $3, $1, 'webhook.ping', $4::jsonb, $5 FROM hook RETURNING id)"
    " INSERT INTO webhook_deliveries (webhook_id, event_id, state, next_attempt_at, created_at)"
    " SELECT hook.id, ev.id, 'pending', $5, $5 FROM hook, ev RETURNING id"};

// Due time moves a lease ahead with the claim: the same column serves as the lease, so the
// one partial index finds both new deliveries and abandoned claims.
constexpr Statement kWebhookClaim = {
    "webhook_claim",
    "WITH due AS (SELECT id FROM webhook_deliveries WHERE state = 'pending'"
    "  AND next_attempt_at <= $1 ORDER BY next_attempt_at, id LIMIT $3"
    "  FOR UPDATE SKIP LOCKED)"
    " UPDATE webhook_deliveries d SET attempts = d.attempts + 1, next_attempt_at = $2"
    " FROM due, webhooks w, webhook_events e"
    " WHERE d.id = due.id AND w.id = d.webhook_id AND e.id = d.event_id"
    " RETURNING d.id, d.attempts, w.id, w.url, w.secret, e.id, e.type, "
    "e.payload::text, " SQL_MICROS("e.created_at")};

constexpr Statement kWebhookLogAttempt = {
    "webhook_log_attempt",
    "INSERT INTO webhook_attempts (delivery_id, attempt, at, duration_ms, status, error)"
    " VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING"};
constexpr Statement kWebhookFinish = {
    "webhook_finish",
    "UPDATE webhook_deliveries SET state = $3, last_status = $4, last_error = $5,"
    " next_attempt_at = COALESCE($6::timestamptz, next_attempt_at),"
    " finished_at = CASE WHEN $3 = 'pending' THEN NULL ELSE $7::timestamptz END"
    " WHERE id = $1 AND attempts = $2 AND state = 'pending' RETURNING id"};

// The state as a literal, not a parameter, so that the partial index on pending deliveries
// serves every plan of the prepared statement. A claimed delivery's due time is its lease's
// end.
constexpr Statement kWebhookBacklog = {
    "webhook_backlog",
    "WITH pending AS (SELECT created_at, next_attempt_at FROM webhook_deliveries"
    " WHERE state = 'pending')"
    " SELECT count(*), " SQL_MICROS("min(created_at)") ", " SQL_MICROS(
        "min(next_attempt_at)") " FROM pending"};

constexpr Statement kWebhookExpiring = {
    "webhook_expiring_rentals",
    "SELECT r.id, r.org_id FROM rentals r"
    " WHERE r.state = $4::text AND upper(r.period) > $1::timestamptz"
    " AND upper(r.period) <= $1::timestamptz + $2 * interval '1 millisecond'"
    " AND EXISTS (SELECT 1 FROM webhooks w WHERE w.org_id = r.org_id"
    "  AND w.disabled_at IS NULL AND 'rental.expiring' = ANY (w.events))"
    " AND NOT EXISTS (SELECT 1 FROM webhook_events e WHERE e.org_id = r.org_id"
    "  AND e.dedup_key = 'rental.expiring:' || r.id || ':' || " SQL_MICROS("upper(r.period)") ")"
    " ORDER BY upper(r.period), r.id LIMIT $3"};

// Writes the row only when the state changes; RETURNING then says whether it is now below.
constexpr Statement kWebhookBalanceSeen = {
    "webhook_balance_seen",
    "INSERT INTO webhook_low_balance AS b (org_id, below, changed_at) VALUES ($1, $2, $3)"
    " ON CONFLICT (org_id) DO UPDATE SET below = EXCLUDED.below, changed_at = EXCLUDED.changed_at"
    " WHERE b.below IS DISTINCT FROM EXCLUDED.below RETURNING below"};

WebhookRecord webhook_from(const pqxx::row& row) {
  return {row[0].as<std::string>(), row[1].as<std::string>(), row[2].as<std::string>(),
          nlohmann::json::parse(row[3].c_str()).get<std::vector<std::string>>(),
          read_timestamp(row[4])};
}

DeliveryState delivery_state_from(const std::string& text) {
  if (text == "delivered") return DeliveryState::kDelivered;
  if (text == "failed") return DeliveryState::kFailed;
  return DeliveryState::kPending;
}

DeliveryRecord delivery_from(const pqxx::row& row) {
  DeliveryRecord d;
  d.id = row[0].as<long long>();
  d.event_id = row[1].as<std::string>();
  d.event_type = row[2].as<std::string>();
  d.state = delivery_state_from(row[3].as<std::string>());
  d.attempts = row[4].as<int>();
  d.next_attempt_at = read_timestamp(row[5]);
  d.last_status = optional_field<int>(row[6]);
  d.last_error = optional_field<std::string>(row[7]);
  d.created_at = read_timestamp(row[8]);
  d.finished_at = read_optional_timestamp(row[9]);
  return d;
}

bool is_webhook_id(std::string_view id) {
  return is_valid_id(kWebhookPrefix, id);
}

// A secret sealed under webhook_secret_key: this prefix, then the hex of nonce, ciphertext
// and tag. A plain secret starts with "whsec_", so the two never mix up.
constexpr std::string_view kSealedPrefix = "sealed:v1:";

bool is_delivery_id(std::string_view id) {
  return parse_delivery_id(id).has_value();
}

}  // namespace

WebhookStore::WebhookStore(const Clock& clock, const std::string& secret_key) : clock_(clock) {
  // The configured text may be any length; the cipher wants 32 bytes.
  if (!secret_key.empty()) key_ = crypto::sha256_raw(secret_key);
}

std::string WebhookStore::seal_secret(const std::string& webhook_id,
                                      const std::string& secret) const {
  if (key_.empty()) return secret;
  std::string sealed = crypto::seal(key_, secret, webhook_id);
  return std::string(kSealedPrefix) +
         crypto::to_hex(reinterpret_cast<const std::uint8_t*>(sealed.data()), sealed.size());
}

std::string WebhookStore::open_secret(const std::string& webhook_id,
                                      const std::string& stored) const {
  if (stored.rfind(kSealedPrefix, 0) != 0) return stored;  // stored before a key was set
  if (key_.empty()) return "";
  auto bytes = crypto::from_hex(std::string_view(stored).substr(kSealedPrefix.size()));
  if (!bytes) return "";
  // The id is the additional data: a sealed secret copied to another webhook does not open.
  return crypto::open(key_, *bytes, webhook_id).value_or("");
}

std::string delivery_id_text(long long id) {
  return std::string(kDeliveryPrefix) + "_" + std::to_string(id);
}

std::optional<long long> parse_delivery_id(std::string_view text) {
  std::string prefix = std::string(kDeliveryPrefix) + "_";
  if (text.substr(0, prefix.size()) != prefix) return std::nullopt;
  std::string_view digits = text.substr(prefix.size());
  if (digits.empty() || digits.size() > 18 || digits[0] == '0') return std::nullopt;
  long long n = 0;
  auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
  if (ec != std::errc() || ptr != digits.data() + digits.size()) return std::nullopt;
  return n;
}

std::string_view to_string(DeliveryState state) {
  switch (state) {
    case DeliveryState::kPending:
      return "pending";
    case DeliveryState::kDelivered:
      return "delivered";
    case DeliveryState::kFailed:
      return "failed";
  }
  return "pending";
}

std::pair<WebhookRecord, std::string> WebhookStore::create(Tx& tx, const std::string& org_id,
                                                           const std::string& url,
                                                           const std::vector<std::string>& events,
                                                           const Actor& actor) {
  auto now = clock_.now();
  std::string id = new_id(kWebhookPrefix);
  std::string secret = new_secret();
  auto rows = tx.exec(kWebhookInsert, id, org_id, url, pg_array_literal(events),
                      seal_secret(id, secret), actor.user_id, sql_timestamp(now));
  WebhookRecord record = webhook_from(rows[0]);
  write_audit(tx, now, actor,
              {.org_id = org_id,
               .action = "webhook.create",
               .target = record.id,
               .details = {{"url", record.url}, {"events", record.events}}});
  return {std::move(record), std::move(secret)};
}

Page<WebhookRecord> WebhookStore::list(Tx& tx, const std::string& org_id, int limit,
                                       const std::optional<std::string>& cursor) {
  std::optional<Keyset> after;
  if (cursor) after = decode_cursor(*cursor, is_webhook_id);
  auto rows =
      after ? tx.exec(kWebhookListAfter, org_id, sql_timestamp(after->at), after->id, limit + 1)
            : tx.exec(kWebhookListFirst, org_id, limit + 1);
  return page_of<WebhookRecord>(rows, limit, webhook_from, [](const WebhookRecord& w) {
    return Keyset{w.created_at, w.id};
  });
}

std::optional<WebhookRecord> WebhookStore::get(Tx& tx, const std::string& org_id,
                                               const std::string& id) {
  auto rows = tx.exec(kWebhookGet, org_id, id);
  if (rows.empty()) return std::nullopt;
  return webhook_from(rows[0]);
}

bool WebhookStore::remove(Tx& tx, const std::string& org_id, const std::string& id,
                          const Actor& actor) {
  auto now = clock_.now();
  auto rows = tx.exec(kWebhookDisable, org_id, id, sql_timestamp(now));
  if (rows.empty()) return false;
  write_audit(tx, now, actor,
              {.org_id = org_id,
               .action = "webhook.delete",
               .target = id,
               .details = {{"url", rows[0][0].as<std::string>()},
                           {"pending_deliveries_failed", rows[0][1].as<long long>()}}});
  return true;
}

Page<DeliveryRecord> WebhookStore::deliveries(Tx& tx, const std::string& webhook_id, int limit,
                                              const std::optional<std::string>& cursor) {
  std::optional<Keyset> after;
  if (cursor) after = decode_cursor(*cursor, is_delivery_id);
  auto rows = after ? tx.exec(kDeliveriesAfter, webhook_id, sql_timestamp(after->at),
                              *parse_delivery_id(after->id), limit + 1)
                    : tx.exec(kDeliveriesFirst, webhook_id, limit + 1);
  auto page = page_of<DeliveryRecord>(rows, limit, delivery_from, [](const DeliveryRecord& d) {
    return Keyset{d.created_at, delivery_id_text(d.id)};
  });
  if (page.items.empty()) return page;
  std::vector<long long> ids;
  std::map<long long, DeliveryRecord*> by_id;
  for (auto& d : page.items) {
    ids.push_back(d.id);
    by_id[d.id] = &d;
  }
  for (const auto& row : tx.exec(kAttemptsOf, pg_array_literal(ids))) {
    AttemptRecord a;
    a.attempt = row[1].as<int>();
    a.at = read_timestamp(row[2]);
    a.duration_ms = row[3].as<int>();
    a.status = optional_field<int>(row[4]);
    a.error = optional_field<std::string>(row[5]);
    by_id.at(row[0].as<long long>())->attempt_log.push_back(std::move(a));
  }
  return page;
}

bool WebhookStore::wants(Tx& tx, const std::string& org_id, std::string_view type) {
  return tx.exec(kWebhookWants, org_id, std::string(type))[0][0].as<bool>();
}

std::vector<std::pair<std::string, std::vector<std::string>>> WebhookStore::subscriptions(Tx& tx) {
  std::vector<std::pair<std::string, std::vector<std::string>>> out;
  for (const auto& row : tx.exec(kWebhookSubscriptions)) {
    out.emplace_back(
        row[0].as<std::string>(),
        nlohmann::json::parse(row[1].as<std::string>()).get<std::vector<std::string>>());
  }
  return out;
}

bool WebhookStore::rental_wanted(Tx& tx, const std::string& rental_id, std::string_view type) {
  return tx.exec(kWebhookRentalWanted, rental_id, std::string(type))[0][0].as<bool>();
}

std::optional<std::string> WebhookStore::emit(Tx& tx, const std::string& org_id,
                                              std::string_view type, const nlohmann::json& data,
                                              const std::optional<std::string>& dedup_key) {
  auto rows = tx.exec(kWebhookEmit, org_id, std::string(type), new_id(kEventPrefix), data.dump(),
                      dedup_key, sql_timestamp(clock_.now()));
  if (rows.empty()) return std::nullopt;
  return rows[0][0].as<std::string>();
}

std::optional<std::pair<std::string, long long>> WebhookStore::ping(Tx& tx,
                                                                    const std::string& org_id,
                                                                    const std::string& webhook_id) {
  std::string event_id = new_id(kEventPrefix);
  nlohmann::json data = {{"webhook_id", webhook_id}};
  auto rows =
      tx.exec(kWebhookPing, org_id, webhook_id, event_id, data.dump(), sql_timestamp(clock_.now()));
  if (rows.empty()) return std::nullopt;
  return std::make_pair(event_id, rows[0][0].as<long long>());
}

std::vector<ClaimedDelivery> WebhookStore::claim_due(Tx& tx, Timestamp now,
                                                     std::chrono::milliseconds lease, int limit) {
  std::vector<ClaimedDelivery> out;
  auto until = now + std::chrono::duration_cast<std::chrono::microseconds>(lease);
  for (const auto& row : tx.exec(kWebhookClaim, sql_timestamp(now), sql_timestamp(until), limit)) {
    ClaimedDelivery c;
    c.id = row[0].as<long long>();
    c.attempt = row[1].as<int>();
    c.webhook_id = row[2].as<std::string>();
    c.url = row[3].as<std::string>();
    c.secret = open_secret(c.webhook_id, row[4].as<std::string>());
    c.event_id = row[5].as<std::string>();
    c.event_type = row[6].as<std::string>();
    c.payload = row[7].as<std::string>();
    c.event_created_at = read_timestamp(row[8]);
    out.push_back(std::move(c));
  }
  return out;
}

bool WebhookStore::finish(Tx& tx, const ClaimedDelivery& claimed, const AttemptOutcome& outcome) {
  tx.exec(kWebhookLogAttempt, claimed.id, claimed.attempt, sql_timestamp(outcome.at),
          outcome.duration_ms, outcome.status, outcome.error);
  std::optional<std::string> retry_at;
  if (outcome.next == DeliveryState::kPending) retry_at = sql_timestamp(outcome.retry_at);
  return !tx.exec(kWebhookFinish, claimed.id, claimed.attempt, std::string(to_string(outcome.next)),
                  outcome.status, outcome.error, retry_at, sql_timestamp(outcome.at))
              .empty();
}

OutboxBacklog WebhookStore::backlog(Tx& tx) {
  auto row = tx.exec(kWebhookBacklog)[0];
  return {.pending = row[0].as<long long>(),
          .oldest_created_at = read_optional_timestamp(row[1]),
          .first_due_at = read_optional_timestamp(row[2])};
}

std::vector<std::pair<std::string, std::string>> WebhookStore::expiring_rentals(
    Tx& tx, const std::string& running_state, Timestamp now, std::chrono::milliseconds before,
    int limit) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& row : tx.exec(kWebhookExpiring, sql_timestamp(now),
                                 static_cast<long long>(before.count()), limit, running_state)) {
    out.emplace_back(row[0].as<std::string>(), row[1].as<std::string>());
  }
  return out;
}

bool WebhookStore::balance_seen(Tx& tx, const std::string& org_id, bool below) {
  auto rows = tx.exec(kWebhookBalanceSeen, org_id, below, sql_timestamp(clock_.now()));
  return !rows.empty() && rows[0][0].as<bool>();
}

}  // namespace gpurent::webhooks
