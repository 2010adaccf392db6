// An admin's power actions on a node through its BMC over Redfish (issue "Operations that
// respect the tenant"; PUT/GET /v1/admin/nodes/{id}/bmc, POST /v1/admin/nodes/{id}/power).
// The BMC's address and credentials are kept per node, the password sealed (AES-256-GCM under
// bmc_secret_key, the node's id as additional data) and never shown again. A power action is
// only for a node out of service (maintenance or failed): a node that rents must be drained
// first, so no tenant loses a running machine to it. The Redfish exchange runs outside any
// transaction (bmc/redfish_client.h), and its failures are answered by kind.
#pragma once

#include "bmc/redfish.h"
#include "core/audit.h"
#include "core/clock.h"
#include "core/db_pool.h"

#include <chrono>
#include <functional>
#include <optional>
#include <string>

namespace gpurent::bmc {

// The settings' bounds: the route reads with them, NodePower::set checks them.
inline constexpr std::size_t kMaxBmcUrlBytes = 300;
inline constexpr std::size_t kMaxBmcNameBytes = 128;  // username, system_id
inline constexpr std::size_t kMaxBmcPasswordBytes = 256;

struct BmcSettings {
  std::string url;                       // "https://10.0.0.7" (http:// only with allow_plain_http)
  std::optional<std::string> system_id;  // none: the only system the BMC lists
  std::string username;
  std::optional<std::string> pinned_sha256;  // 64 lower-case hex digits; none: the system CAs
  std::optional<Timestamp> updated_at;
  std::optional<std::string> updated_by;
};

// "on" | "off" | "shutdown" | "restart" | "force_restart" | "cycle" to the Redfish reset it
// sends (On, ForceOff, GracefulShutdown, GracefulRestart, ForceRestart, PowerCycle).
std::optional<ResetType> power_action(std::string_view action);

struct PowerResult {
  std::string node_id, action;
  ResetType reset_type = ResetType::kOn;
  std::optional<PowerState> power_state;  // as the BMC reported it right after
};

class NodePower {
 public:
  struct Options {
    std::string secret_key;  // bmc_secret_key; empty: settings cannot be stored
    bool allow_plain_http = false;
    std::chrono::milliseconds timeout = std::chrono::seconds(10);
  };
  // What the scheduler says of the node's tenants (bmc knows nothing of rentals), in the
  // action's own transactions: whether active rentals run on it, and, once the BMC took a
  // restart, that they are to be handed over again (the access and health checks before they
  // are active, the minutes credited).
  struct Tenants {
    std::function<bool(Tx&, const std::string& node_id)> serves;
    std::function<void(Tx&, const std::string& node_id, const std::string& action)> restarted;
  };
  NodePower(PgPool& pool, const Clock& clock, Options options, Tenants tenants = {});

  // Stores (replaces) the node's BMC. not_found for an unknown node; invalid_request naming the
  // field; conflict when no bmc_secret_key is configured.
  BmcSettings set(const std::string& node_id, BmcSettings settings, const std::string& password,
                  const Actor& by);
  // not_found for an unknown node or one without a BMC.
  BmcSettings get(const std::string& node_id);
  // invalid_request for an unknown action; not_found without a BMC; invalid_state unless the
  // node is in maintenance or failed; the BMC's failures: conflict (credentials, certificate,
  // a refused reset) or unavailable (unreachable, timeout, 5xx, a malformed answer).
  // A node serving active rentals may be restarted (restart, force_restart, cycle) whatever
  // its state — a hung node's tenant needs it — and its rentals are handed over again.
  PowerResult act(const std::string& node_id, const std::string& action, const Actor& by);

 private:
  PgPool& pool_;
  const Clock& clock_;
  Options options_;
  Tenants tenants_;
  std::string key_;  // 32 bytes derived from the secret key; empty without one
};

}  // namespace gpurent::bmc
