// Node power: the BMC settings, sealed; an action checked, sent, audited.
#include "bmc/node_power.h"

#include "bmc/redfish_client.h"
#include "core/crypto.h"
#include "core/error.h"
#include "core/log.h"
#include "core/sql.h"
#include "inventory/node_state.h"

#include <array>
#include <cctype>

namespace gpurent::bmc {
namespace {

constexpr Statement kNodeState = {"bmc_node_state", "SELECT state FROM nodes WHERE id = $1"};
constexpr Statement kUpsert = {
    "bmc_upsert",
    "INSERT INTO node_bmcs (node_id, url, system_id, username, password_sealed, pinned_sha256,"
    " updated_at, updated_by) VALUES ($1, $2, $3, $4, $5, $6, $7::timestamptz, $8)"
    " ON CONFLICT (node_id) DO UPDATE SET url = EXCLUDED.url, system_id = EXCLUDED.system_id,"
    " username = EXCLUDED.username, password_sealed = EXCLUDED.password_sealed,"
    " pinned_sha256 = EXCLUDED.pinned_sha256, updated_at = EXCLUDED.updated_at,"
    " updated_by = EXCLUDED.updated_by"};
constexpr Statement kSelect = {
    "bmc_select", "SELECT url, system_id, username, password_sealed, pinned_sha256, " SQL_MICROS(
                      "updated_at") ", updated_by FROM node_bmcs WHERE node_id = $1"};

struct Stored {
  BmcSettings settings;
  std::string sealed;
};

std::optional<Stored> stored(Tx& tx, const std::string& node_id) {
  auto rows = tx.exec(kSelect, node_id);
  if (rows.empty()) return std::nullopt;
  const auto& r = rows[0];
  return Stored{{.url = r[0].as<std::string>(),
                 .system_id = optional_field<std::string>(r[1]),
                 .username = r[2].as<std::string>(),
                 .pinned_sha256 = optional_field<std::string>(r[4]),
                 .updated_at = read_timestamp(r[5]),
                 .updated_by = optional_field<std::string>(r[6])},
                r[3].as<std::string>()};
}

void check_settings(BmcSettings& s, const std::string& password, bool allow_plain_http) {
  bool https = s.url.rfind("https://", 0) == 0;
  bool http = allow_plain_http && s.url.rfind("http://", 0) == 0;
  if ((!https && !http) || s.url.size() > kMaxBmcUrlBytes) {
    throw Error::invalid_field("url", "must be https://host[:port]");
  }
  auto bounded = [](const char* field, const std::string& v, std::size_t max) {
    if (v.empty() || v.size() > max) {
      throw Error::invalid_field(field, "must be 1 to " + std::to_string(max) + " bytes");
    }
  };
  bounded("username", s.username, kMaxBmcNameBytes);
  bounded("password", password, kMaxBmcPasswordBytes);
  if (s.system_id) bounded("system_id", *s.system_id, kMaxBmcNameBytes);
  if (s.pinned_sha256) {
    std::string hex;
    for (char c : *s.pinned_sha256) {
      if (c != ':') hex.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
    }
    if (hex.size() != 64 || !crypto::from_hex(hex)) {
      throw Error::invalid_field("pinned_sha256", "must be a SHA-256 fingerprint (64 hex digits)");
    }
    s.pinned_sha256 = hex;
  }
  // The client's own checks (a path, a port out of range…), without connecting.
  try {
    RedfishClient probe({.base_url = s.url,
                         .allow_plain_http = allow_plain_http,
                         .username = s.username,
                         .password = password,
                         .pinned_sha256 = s.pinned_sha256.value_or("")});
  } catch (const std::invalid_argument& e) {
    throw Error::invalid_field("url", e.what());
  }
}

Error as_error(const RedfishFailure& f, const std::string& node_id) {
  nlohmann::json details = {{"node_id", node_id},
                            {"bmc_failure", std::string(to_string(f.kind()))}};
  switch (f.kind()) {
    case RedfishFailureKind::kAuth:
      return Error(ErrorCode::kConflict, "The BMC refused the stored credentials.", details);
    case RedfishFailureKind::kUntrusted:
      return Error(ErrorCode::kConflict,
                   "The BMC's certificate is not the one trusted for it: " + std::string(f.what()),
                   details);
    case RedfishFailureKind::kRefused:
      return Error(ErrorCode::kConflict, "The BMC refused the action: " + std::string(f.what()),
                   details);
    default:
      return Error(ErrorCode::kUnavailable, "The BMC did not do it: " + std::string(f.what()),
                   details);
  }
}

}  // namespace

std::optional<ResetType> power_action(std::string_view action) {
  static constexpr std::array<std::pair<std::string_view, ResetType>, 6> kActions{{
      {"on", ResetType::kOn},
      {"off", ResetType::kForceOff},
      {"shutdown", ResetType::kGracefulShutdown},
      {"restart", ResetType::kGracefulRestart},
      {"force_restart", ResetType::kForceRestart},
      {"cycle", ResetType::kPowerCycle},
  }};
  for (const auto& [name, type] : kActions) {
    if (name == action) return type;
  }
  return std::nullopt;
}

NodePower::NodePower(PgPool& pool, const Clock& clock, Options options, Tenants tenants)
    : pool_(pool), clock_(clock), options_(std::move(options)), tenants_(std::move(tenants)) {
  if (!options_.secret_key.empty()) key_ = crypto::sha256_raw(options_.secret_key);
}

BmcSettings NodePower::set(const std::string& node_id, BmcSettings settings,
                           const std::string& password, const Actor& by) {
  check_settings(settings, password, options_.allow_plain_http);
  if (key_.empty()) {
    throw Error(ErrorCode::kConflict,
                "No bmc_secret_key is configured: BMC passwords are only kept sealed.");
  }
  return pool_.transact("bmc_set", [&](Tx& tx) {
    if (tx.exec(kNodeState, node_id).empty()) throw Error(ErrorCode::kNotFound, "No such node.");
    std::string sealed = crypto::seal(key_, password, node_id);
    Timestamp now = clock_.now();
    tx.exec(kUpsert, node_id, settings.url, settings.system_id, settings.username,
            crypto::to_hex(reinterpret_cast<const std::uint8_t*>(sealed.data()), sealed.size()),
            settings.pinned_sha256, sql_timestamp(now), by.user_id);
    write_audit(tx, now, by,
                {.action = "node.bmc_set",
                 .target = node_id,
                 .details = {{"url", settings.url}, {"username", settings.username}}});
    settings.updated_at = now;
    settings.updated_by = by.user_id;
    return settings;
  });
}

BmcSettings NodePower::get(const std::string& node_id) {
  auto found = pool_.read("bmc_get", [&](Tx& tx) { return stored(tx, node_id); });
  if (!found) throw Error(ErrorCode::kNotFound, "The node has no BMC.");
  return found->settings;
}

PowerResult NodePower::act(const std::string& node_id, const std::string& action, const Actor& by) {
  auto type = power_action(action);
  if (!type) {
    throw Error::invalid_field("action",
                               "must be on, off, shutdown, restart, force_restart or cycle");
  }
  const bool restart = *type == ResetType::kGracefulRestart || *type == ResetType::kForceRestart ||
                       *type == ResetType::kPowerCycle;
  // Read, check and audit the request first; the BMC is asked outside the transaction.
  auto bmc = pool_.transact("bmc_power", [&](Tx& tx) {
    auto state = tx.exec(kNodeState, node_id);
    if (state.empty()) throw Error(ErrorCode::kNotFound, "No such node.");
    auto found = stored(tx, node_id);
    if (!found) throw Error(ErrorCode::kNotFound, "The node has no BMC.");
    std::string s = state[0][0].as<std::string>();
    auto parsed = inventory::parse_node_state(s);
    const bool serving = tenants_.serves && tenants_.serves(tx, node_id);
    if (serving && !restart) {
      throw Error(ErrorCode::kInvalidState,
                  "Rentals run on the node: only a restart (restart, force_restart, cycle) "
                  "brings them back; drain it first to cut its power.",
                  {{"state", s}});
    }
    if (!serving && parsed != inventory::NodeState::kMaintenance &&
        parsed != inventory::NodeState::kFailed) {
      throw Error(ErrorCode::kInvalidState,
                  "The node is " + s +
                      ": send it to maintenance (drain it first) before "
                      "cutting its power.",
                  {{"state", s}});
    }
    write_audit(tx, clock_.now(), by,
                {.action = "node.power", .target = node_id, .details = {{"action", action}}});
    return *found;
  });
  auto sealed = crypto::from_hex(bmc.sealed);
  auto password = key_.empty() || !sealed ? std::nullopt : crypto::open(key_, *sealed, node_id);
  if (!password) {
    throw Error(ErrorCode::kConflict,
                "The node's BMC password cannot be opened with this bmc_secret_key; set it again.");
  }
  PowerResult out{.node_id = node_id, .action = action, .reset_type = *type};
  try {
    RedfishClient client({.base_url = bmc.settings.url,
                          .allow_plain_http = options_.allow_plain_http,
                          .username = bmc.settings.username,
                          .password = *password,
                          .pinned_sha256 = bmc.settings.pinned_sha256.value_or(""),
                          .timeout = options_.timeout});
    std::string system = bmc.settings.system_id.value_or("");
    if (system.empty()) {
      auto members = client.systems();
      if (members.size() != 1) {
        throw Error(ErrorCode::kConflict, "The BMC lists " + std::to_string(members.size()) +
                                              " systems; set the node's system_id.");
      }
      // "/redfish/v1/Systems/<id>": its last segment.
      system = members[0].substr(members[0].find_last_of('/') + 1);
      if (!is_valid_system_id(system)) {
        throw Error(ErrorCode::kConflict, "The BMC's only system has no usable id; set system_id.");
      }
    }
    client.reset(system, *type);
    out.power_state = client.system(system).power_state;
  } catch (const RedfishFailure& f) {
    log::warn("node {} power {}: {}", node_id, action, f.what());
    throw as_error(f, node_id);
  }
  log::info("node {} power {} ({}) sent", node_id, action, to_string(*type));
  if (tenants_.restarted && restart) {
    pool_.transact("bmc_power_tenants", [&](Tx& tx) { tenants_.restarted(tx, node_id, action); });
  }
  return out;
}

}  // namespace gpurent::bmc
