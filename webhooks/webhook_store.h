// Webhook endpoints, the outbox of events, deliveries and their attempt log
// (migrations/0018_webhooks.sql). Every method runs inside the caller's transaction
// (core/db_pool.h "Tx"); tenant-facing ones filter by org.
#pragma once

#include "core/audit.h"
#include "core/clock.h"
#include "core/db_pool.h"
#include "core/paging.h"

#include <nlohmann/json.hpp>

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpurent::webhooks {

inline constexpr std::string_view kWebhookPrefix = "whk";
inline constexpr std::string_view kEventPrefix = "evt";
// Deliveries are numbered by the database; their ids are "whd_<n>".
inline constexpr std::string_view kDeliveryPrefix = "whd";

std::string delivery_id_text(long long id);
// The number in "whd_<n>"; nullopt for anything else.
std::optional<long long> parse_delivery_id(std::string_view text);

struct WebhookRecord {
  std::string id;
  std::string org_id;
  std::string url;
  std::vector<std::string> events;
  Timestamp created_at;
};

enum class DeliveryState { kPending, kDelivered, kFailed };
std::string_view to_string(DeliveryState state);

struct AttemptRecord {
  int attempt = 0;
  Timestamp at;
  int duration_ms = 0;
  std::optional<int> status;  // the receiver's HTTP status, when it answered
  std::optional<std::string> error;
};

struct DeliveryRecord {
  long long id = 0;
  std::string event_id;
  std::string event_type;
  DeliveryState state = DeliveryState::kPending;
  int attempts = 0;
  Timestamp next_attempt_at;
  std::optional<int> last_status;
  std::optional<std::string> last_error;
  Timestamp created_at;
  std::optional<Timestamp> finished_at;
  std::vector<AttemptRecord> attempt_log;  // oldest first
};

// What a worker sends: the delivery it claimed and the event it carries.
struct ClaimedDelivery {
  long long id = 0;
  int attempt = 0;  // this attempt's number, 1 for the first
  std::string webhook_id;
  std::string url;
  // Empty when the stored secret cannot be opened (sealed under another key, or sealed while
  // this replica has none): the delivery then fails without being sent.
  std::string secret;
  std::string event_id;
  std::string event_type;
  std::string payload;  // the event's data object, as JSON text
  Timestamp event_created_at;
};

// The deliveries still to make (pending: neither delivered nor given up), all webhooks and
// orgs together.
struct OutboxBacklog {
  long long pending = 0;
  std::optional<Timestamp> oldest_created_at;  // the pending delivery made first
  std::optional<Timestamp> first_due_at;       // the soonest next attempt among them
};

// An attempt's result and what happens next.
struct AttemptOutcome {
  Timestamp at;
  int duration_ms = 0;
  std::optional<int> status;
  std::optional<std::string> error;
  DeliveryState next = DeliveryState::kPending;
  Timestamp retry_at;  // for kPending
};

class WebhookStore {
 public:
  // `secret_key` (config webhook_secret_key; every replica needs the same one) seals each
  // signing secret with AES-256-GCM before it is stored, bound to its webhook's id, so the
  // database alone does not give them away. Empty: secrets are stored as they are.
  explicit WebhookStore(const Clock& clock, const std::string& secret_key = "");

  // The new webhook and its secret (returned to the caller once, never again), with an
  // audit row that names the URL and events but not the secret.
  std::pair<WebhookRecord, std::string> create(Tx& tx, const std::string& org_id,
                                               const std::string& url,
                                               const std::vector<std::string>& events,
                                               const Actor& actor);
  // The org's live webhooks, oldest first.
  Page<WebhookRecord> list(Tx& tx, const std::string& org_id, int limit,
                           const std::optional<std::string>& cursor);
  std::optional<WebhookRecord> get(Tx& tx, const std::string& org_id, const std::string& id);
  // Disables it (its log is kept) and fails its pending deliveries; false for an unknown
  // or another org's webhook.
  bool remove(Tx& tx, const std::string& org_id, const std::string& id, const Actor& actor);

  // The webhook's deliveries, newest first, each with its attempts. The caller checks that
  // the webhook is the org's.
  Page<DeliveryRecord> deliveries(Tx& tx, const std::string& webhook_id, int limit,
                                  const std::optional<std::string>& cursor);

  // True when a live webhook of the org subscribes to `type`: producers ask before they
  // build a payload.
  bool wants(Tx& tx, const std::string& org_id, std::string_view type);
  // Every live webhook's org and the event types it subscribes to: what SubscriptionCopy
  // keeps in memory.
  std::vector<std::pair<std::string, std::vector<std::string>>> subscriptions(Tx& tx);
  // The same for the org that owns `rental_id`, in one statement: a rental's move asks this
  // before it reads the rental to build a payload, so moves of orgs without webhooks cost
  // one statement more, not two.
  bool rental_wanted(Tx& tx, const std::string& rental_id, std::string_view type);

  // Writes the event and one pending delivery, due now, per live webhook of the org that
  // subscribes to `type`, in one statement inside the caller's transaction: the event
  // commits or rolls back with the change it reports. Nothing when no webhook subscribes,
  // or when `dedup_key` names an event the org has already (nullopt then); else the
  // event's id.
  std::optional<std::string> emit(Tx& tx, const std::string& org_id, std::string_view type,
                                  const nlohmann::json& data,
                                  const std::optional<std::string>& dedup_key = std::nullopt);
  // A webhook.ping event for this one webhook of the org: (event id, delivery id), or
  // nullopt for an unknown or another org's webhook.
  std::optional<std::pair<std::string, long long>> ping(Tx& tx, const std::string& org_id,
                                                        const std::string& webhook_id);

  // Claims up to `limit` pending deliveries due at `now`, oldest due first, skipping rows
  // other replicas hold (FOR UPDATE SKIP LOCKED): counts the attempt and moves the delivery's
  // due time to now + `lease`. The claimer sends it outside any transaction and then calls
  // finish(); should it die first, the delivery is due again when the lease ends.
  std::vector<ClaimedDelivery> claim_due(Tx& tx, Timestamp now, std::chrono::milliseconds lease,
                                         int limit);
  // Logs the attempt and moves the delivery on, only while the claim is still this one's
  // (the same attempt count, still pending): a claim whose lease ran out and that another
  // replica took over logs its attempt but decides nothing. False then.
  bool finish(Tx& tx, const ClaimedDelivery& claimed, const AttemptOutcome& outcome);

  // The outbox's backlog, in one statement over the pending deliveries' partial index: what
  // /metrics shows, as the delivery worker last looked.
  OutboxBacklog backlog(Tx& tx);

  // Rentals in `running_state` (the scheduler's name for active, which the wiring passes:
  // webhooks know no rental states) of orgs that subscribe to rental.expiring whose end is
  // within `before` of `now` and not yet past, with no expiry warning for that end:
  // (rental id, org id).
  std::vector<std::pair<std::string, std::string>> expiring_rentals(
      Tx& tx, const std::string& running_state, Timestamp now, std::chrono::milliseconds before,
      int limit);

  // Records whether the org's balance is below the threshold now; true when it just went
  // below (it was not, or nothing was recorded): the moment to write billing.low_balance.
  bool balance_seen(Tx& tx, const std::string& org_id, bool below);

 private:
  std::string seal_secret(const std::string& webhook_id, const std::string& secret) const;
  std::string open_secret(const std::string& webhook_id, const std::string& stored) const;

  const Clock& clock_;
  std::string key_;  // 32 bytes, or empty
};

}  // namespace gpurent::webhooks
