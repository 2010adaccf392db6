// SshAccess: certificates from the rental's period and principal, recorded under a serial
// from the database; the rental's SSH details from its node's name and host keys.
#include "scheduler/ssh_access.h"

#include "core/error.h"
#include "core/log.h"
#include "core/pg_array.h"
#include "core/sql.h"
#include "scheduler/lifecycle_rules.h"

#include <map>

namespace gpurent::scheduler {
namespace {

constexpr Statement kNextSerial = {"ssh_access_next_serial",
                                   "SELECT nextval('ssh_certificate_serials')"};
constexpr Statement kRecordCertificate = {
    "ssh_access_record_certificate",
    "INSERT INTO ssh_certificates (serial, rental_id, org_id, user_id, token_id, key_type,"
    " key_fingerprint, key_id, principals, valid_after, valid_before, issued_at)"
    " VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9::text[], $10, $11, $12)"};
constexpr auto kHostCertificateValidity = std::chrono::hours(24 * 365);
constexpr auto kHostCertificateBackdate = std::chrono::minutes(5);

// Each named node's address. $1 the node ids (text[]).
constexpr Statement kNodeAddresses = {
    "ssh_access_node_addresses",
    "SELECT id, hostname, ssh_port FROM nodes WHERE id = ANY ($1::text[])"};
constexpr Statement kNodeProbeKey = {"ssh_access_node_probe_key",
                                     "SELECT hostname, ssh_probe_key FROM nodes WHERE id = $1"};

// Whole seconds, inside the period: OpenSSH's validity has no finer resolution.
Timestamp ceil_seconds(Timestamp t) {
  auto s = std::chrono::ceil<std::chrono::seconds>(t.time_since_epoch());
  return Timestamp(std::chrono::duration_cast<Timestamp::duration>(s));
}
Timestamp floor_seconds(Timestamp t) {
  auto s = std::chrono::floor<std::chrono::seconds>(t.time_since_epoch());
  return Timestamp(std::chrono::duration_cast<Timestamp::duration>(s));
}

}  // namespace

IssuedUserCertificate SshAccess::issue(Tx& tx, const RentalRecord& r,
                                       const identity::SshPublicKey& key,
                                       const CertificateRequester& requester) {
  if (!allows(r.state, RentalAction::kSshCertificate)) {
    throw Error(ErrorCode::kInvalidState,
                "Certificates are issued for scheduled, provisioning and active rentals; this "
                "one is " +
                    std::string(to_string(r.state)) + ".",
                {{"state", to_string(r.state)}});
  }
  IssuedUserCertificate out;
  out.serial = tx.exec(kNextSerial)[0][0].as<std::uint64_t>();
  out.key_id = "rental=" + r.id + " user=" + requester.user_id;
  if (requester.token_id) out.key_id += " token=" + *requester.token_id;
  out.principals = {rental_principal(r.id)};
  for (const auto& p : out.principals) {
    // A customer's certificate must never pass for the agent's login probe.
    if (p.starts_with(kProbePrincipalPrefix)) {
      throw std::logic_error("a rental certificate would carry a probe principal");
    }
  }
  out.valid_after = ceil_seconds(r.period.start);
  out.valid_before = floor_seconds(r.period.end);
  out.user = rental_login(r.id);
  out.certificate = ca_.sign(key, {.type = identity::SshCertificateType::kUser,
                                   .serial = out.serial,
                                   .key_id = out.key_id,
                                   .principals = out.principals,
                                   .valid_after = out.valid_after,
                                   .valid_before = out.valid_before});
  tx.exec(kRecordCertificate, static_cast<long long>(out.serial), r.id, r.org_id, requester.user_id,
          requester.token_id, key.type, key.fingerprint, out.key_id,
          pg_array_literal(out.principals), sql_timestamp(out.valid_after),
          sql_timestamp(out.valid_before), sql_timestamp(clock_.now()));
  return out;
}

std::optional<SshDetails> SshAccess::details(Tx& tx, const RentalRecord& r) {
  return details(tx, std::vector<RentalRecord>{r}).front();
}

std::vector<std::optional<SshDetails>> SshAccess::details(
    Tx& tx, const std::vector<RentalRecord>& rentals) {
  std::vector<std::optional<SshDetails>> out(rentals.size());
  std::vector<std::string> nodes;
  for (const auto& r : rentals) {
    if (r.state == RentalState::kActive && r.node_id) nodes.push_back(*r.node_id);
  }
  if (nodes.empty()) return out;
  // What every rental on the node shares: its address and its host keys.
  std::map<std::string, std::pair<std::string, int>> by_id;  // host, port
  for (const auto& row : tx.exec(kNodeAddresses, pg_array_literal(nodes))) {
    by_id[row[0].as<std::string>()] = {row[1].as<std::string>(), row[2].as<int>()};
  }
  auto keys = host_keys_.list(tx, nodes);
  for (std::size_t i = 0; i < rentals.size(); ++i) {
    const auto& r = rentals[i];
    if (r.state != RentalState::kActive || !r.node_id) continue;
    auto node = by_id.find(*r.node_id);
    if (node == by_id.end()) continue;
    SshDetails d;
    d.host = node->second.first;
    d.port = node->second.second;
    d.user = rental_login(r.id);
    d.command =
        "ssh " + (d.port == 22 ? "" : "-p " + std::to_string(d.port) + " ") + d.user + "@" + d.host;
    std::string pattern = d.port == 22 ? d.host : "[" + d.host + "]:" + std::to_string(d.port);
    if (auto k = keys.find(*r.node_id); k != keys.end()) {
      for (const auto& key : k->second) {
        d.host_key_fingerprints.push_back(key.fingerprint);
        d.known_hosts.push_back(pattern + " " + key.public_key);
      }
    }
    d.known_hosts.push_back("@cert-authority " + pattern + " " + ca_.host_ca_public_key());
    d.ssh_config = "Host gpurent-" + r.id + "\n  HostName " + d.host + "\n  Port " +
                   std::to_string(d.port) + "\n  User " + d.user +
                   "\n  UserKnownHostsFile ~/.ssh/gpurent_known_hosts\n"
                   "  StrictHostKeyChecking yes\n";
    out[i] = std::move(d);
  }
  return out;
}

std::string probe_principal(const std::string& rental_id) {
  return std::string(kProbePrincipalPrefix) + rental_id;
}

Timestamp SshAccess::probe_valid_before(Timestamp now) {
  return floor_seconds(now) + kProbeLifetime;
}

std::optional<nlohmann::json> SshAccess::probe_for(Tx& tx, const RentalRecord& r, Timestamp now) {
  if (!r.node_id) return std::nullopt;
  auto rows = tx.exec(kNodeProbeKey, *r.node_id);
  if (rows.empty() || rows[0][1].is_null()) return std::nullopt;
  std::string hostname = rows[0][0].as<std::string>();
  identity::SshPublicKey key;
  try {
    key = identity::parse_ssh_public_key(rows[0][1].as<std::string>());
  } catch (const Error& e) {
    // The hello stores only keys that parse; one that does not is probed without.
    log::warn("node {}: its SSH probe key does not parse: {}", *r.node_id, e.what());
    return std::nullopt;
  }
  auto serial = tx.exec(kNextSerial)[0][0].as<std::uint64_t>();
  std::string principal = probe_principal(r.id);
  std::string key_id = "gpurent-probe rental=" + r.id + " node=" + *r.node_id;
  Timestamp valid_after = floor_seconds(now) - kProbeBackdate;
  Timestamp valid_before = probe_valid_before(now);
  std::string certificate =
      ca_.sign(key, {.type = identity::SshCertificateType::kUser,
                     .serial = serial,
                     .key_id = key_id,
                     .principals = {principal},
                     .valid_after = valid_after,
                     .valid_before = valid_before,
                     .critical_options = {{std::string(identity::kForceCommand),
                                           std::string(kProbeForceCommand)}},
                     .extensions = identity::SshCertificateExtensions::kNone});
  // Recorded as the customers' are, with no user or token: the platform asked for it.
  tx.exec(kRecordCertificate, static_cast<long long>(serial), r.id, r.org_id,
          std::optional<std::string>(), std::optional<std::string>(), key.type, key.fingerprint,
          key_id, pg_array_literal(std::vector<std::string>{principal}), sql_timestamp(valid_after),
          sql_timestamp(valid_before), sql_timestamp(now));
  return nlohmann::json{{"certificate", certificate},
                        {"principal", principal},
                        {"host", hostname},
                        {"host_ca_key", ca_.host_ca_public_key()}};
}

void SshAccess::certify_host_keys(Tx& tx, const std::string& node_id, const std::string& hostname,
                                  std::vector<inventory::HostKey>& keys) {
  auto now = clock_.now();
  for (auto& k : keys) {
    identity::SshPublicKey key;
    try {
      key = identity::parse_ssh_public_key(k.public_key);
    } catch (const Error&) {
      continue;
    }
    auto serial = tx.exec(kNextSerial)[0][0].as<std::uint64_t>();
    k.certificate = ca_.sign(key, {.type = identity::SshCertificateType::kHost,
                                   .serial = serial,
                                   .key_id = "node=" + node_id + " host=" + hostname,
                                   .principals = {hostname},
                                   .valid_after = floor_seconds(now - kHostCertificateBackdate),
                                   .valid_before = floor_seconds(now + kHostCertificateValidity)});
  }
}

std::vector<std::string> SshAccess::host_certificates(Tx& tx, const std::string& node_id) {
  std::vector<std::string> out;
  for (const auto& k : host_keys_.list(tx, node_id)) {
    if (!k.certificate.empty()) out.push_back(k.certificate);
  }
  return out;
}

std::vector<std::string> RentalAccessMaterial::authorized_keys(Tx& tx, const RentalRecord& r) {
  std::vector<std::string> out;
  for (const auto& id : r.ssh_key_ids) {
    if (auto key = keys_.get(tx, r.org_id, id)) out.push_back(key->public_key);
  }
  return out;
}

std::optional<nlohmann::json> RentalAccessMaterial::probe(Tx& tx, const RentalRecord& r,
                                                          Timestamp) {
  return access_.probe_for(tx, r, SystemClock().now());
}

}  // namespace gpurent::scheduler
