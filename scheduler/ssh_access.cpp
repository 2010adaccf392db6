// SshAccess: certificates from the rental's period and principal, recorded under a serial
// from the database; the rental's SSH details from its node's name and host keys.
#include "scheduler/ssh_access.h"

#include "core/error.h"
#include "core/pg_array.h"
#include "core/sql.h"
#include "scheduler/lifecycle_rules.h"

#include <charconv>

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

constexpr Statement kNodeAddress = {
    "ssh_access_node_address", "SELECT hostname, labels->>'ssh_port' FROM nodes WHERE id = $1"};

// Whole seconds, inside the period: OpenSSH's validity has no finer resolution.
Timestamp ceil_seconds(Timestamp t) {
  auto s = std::chrono::ceil<std::chrono::seconds>(t.time_since_epoch());
  return Timestamp(std::chrono::duration_cast<Timestamp::duration>(s));
}
Timestamp floor_seconds(Timestamp t) {
  auto s = std::chrono::floor<std::chrono::seconds>(t.time_since_epoch());
  return Timestamp(std::chrono::duration_cast<Timestamp::duration>(s));
}

// The node's `ssh_port` label when it is a port number; 22 otherwise.
int port_of(const std::optional<std::string>& label) {
  int port = 0;
  if (!label) return 22;
  auto [end, ec] = std::from_chars(label->data(), label->data() + label->size(), port);
  if (ec != std::errc() || end != label->data() + label->size() || port < 1 || port > 65535)
    return 22;
  return port;
}

}  // namespace

IssuedUserCertificate SshAccess::issue(Tx& tx, const RentalRecord& r,
                                       const identity::SshPublicKey& key,
                                       const CertificateRequester& requester) {
  bool open = r.state == RentalState::kScheduled || r.state == RentalState::kProvisioning ||
              r.state == RentalState::kActive;
  if (!open) {
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
  if (r.state != RentalState::kActive || !r.node_id) return std::nullopt;
  auto rows = tx.exec(kNodeAddress, *r.node_id);
  if (rows.empty()) return std::nullopt;
  SshDetails out;
  out.host = rows[0][0].as<std::string>();
  out.port = port_of(optional_field<std::string>(rows[0][1]));
  out.user = rental_login(r.id);
  out.command = "ssh " + (out.port == 22 ? "" : "-p " + std::to_string(out.port) + " ") + out.user +
                "@" + out.host;
  std::string pattern =
      out.port == 22 ? out.host : "[" + out.host + "]:" + std::to_string(out.port);
  for (const auto& k : host_keys_.list(tx, *r.node_id)) {
    out.host_key_fingerprints.push_back(k.fingerprint);
    out.known_hosts.push_back(pattern + " " + k.public_key);
  }
  out.known_hosts.push_back("@cert-authority " + pattern + " " + ca_.host_ca_public_key());
  out.ssh_config = "Host gpurent-" + r.id + "\n  HostName " + out.host + "\n  Port " +
                   std::to_string(out.port) + "\n  User " + out.user +
                   "\n  UserKnownHostsFile ~/.ssh/gpurent_known_hosts\n"
                   "  StrictHostKeyChecking yes\n";
  return out;
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

}  // namespace gpurent::scheduler
