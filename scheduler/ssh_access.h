// SSH access to a rental's node: the user certificates engineers log in with (signed by the
// platform's SSH CA for exactly the rental's period, with the rental's own principal), and
// what the rental shows them — host, port, login, the node's host-key fingerprints, a
// ready-to-paste command and the known_hosts lines that let `ssh` check the host without
// trusting it on first use.
#pragma once

#include "core/clock.h"
#include "core/db_pool.h"
#include "identity/ssh_certificate_authority.h"
#include "identity/ssh_key_store.h"
#include "identity/ssh_public_key.h"
#include "inventory/node_host_keys.h"
#include "scheduler/access_material.h"
#include "scheduler/records.h"

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpurent::scheduler {

// The principal of the probe certificates install_access carries: "gpurent-probe-" and the
// rental id. sshd accepts it for the rental's login only while the agent's probe runs (the
// agent adds it to the login's principals file and removes it after); no certificate a
// customer gets carries it (those carry rental_principal alone, and issue() refuses any
// other), and the probe certificate is for the agent's own key, whose private half never
// leaves the node.
inline constexpr std::string_view kProbePrincipalPrefix = "gpurent-probe-";
std::string probe_principal(const std::string& rental_id);

// A probe certificate is valid from this long before it is made (clock skew between the
// control plane and the node) ...
inline constexpr std::chrono::seconds kProbeBackdate{10};
// ... to this long after: two minutes in all, OpenSSH's whole seconds.
inline constexpr std::chrono::seconds kProbeLifetime{110};
// The command sshd runs for a probe login whatever the client asks (a critical option).
inline constexpr std::string_view kProbeForceCommand = "/bin/true";

struct SshDetails {
  std::string host;
  int port = 22;
  std::string user;  // the rental's own login on the node (rental_login)
  std::vector<std::string> host_key_fingerprints;
  std::string command;  // "ssh -p PORT USER@HOST", ready to paste
  // One line per host key ("HOST TYPE BASE64", with "[HOST]:PORT" off port 22) and the
  // host CA's "@cert-authority" line: what `ssh -o StrictHostKeyChecking=yes` trusts.
  std::vector<std::string> known_hosts;
  // A `Host` block for ~/.ssh/config naming the rental ("gpurent-rnt_…"), with the host,
  // port, user and a known_hosts file of its own (~/.ssh/gpurent_known_hosts).
  std::string ssh_config;
};

struct IssuedUserCertificate {
  std::string certificate;  // the -cert.pub line
  std::uint64_t serial = 0;
  std::string key_id;
  std::vector<std::string> principals;
  Timestamp valid_after;
  Timestamp valid_before;
  std::string user;  // the login the certificate is for
};

// Who asked: the user, and the API token when it came through one.
struct CertificateRequester {
  std::string user_id;
  std::optional<std::string> token_id;
};

class SshAccess {
 public:
  SshAccess(const identity::SshCertificateAuthority& ca, const Clock& clock)
      : ca_(ca), host_keys_(clock), clock_(clock) {}

  // A certificate for `key` on rental `r`, valid for exactly the rental's period, recorded
  // with a serial of its own; its one principal is rental_principal(r.id), never a probe's.
  // invalid_state (details.state) unless the rental is scheduled, provisioning or active: there is
  // no access to give before it is placed or after it ends.
  IssuedUserCertificate issue(Tx& tx, const RentalRecord& r, const identity::SshPublicKey& key,
                              const CertificateRequester& requester);

  // install_access's "probe" member for rental `r` at `now`, when its node's agent reported
  // a probe key (nodes.ssh_probe_key); nullopt when it did not, or the rental has no node:
  //   {"certificate": the user CA's certificate for the agent's probe key, type user, its
  //                   one principal probe_principal(r.id), valid from now - kProbeBackdate
  //                   to probe_valid_before(now), critical option force-command=/bin/true,
  //                   no extensions (no pty, forwarding or rc), recorded in
  //                   ssh_certificates with a serial of its own and no user;
  //    "principal":   probe_principal(r.id),
  //    "host":        the node's hostname, the name its host certificates carry
  //                   (certify_host_keys);
  //    "host_ca_key": the host CA's public key, for the probe's @cert-authority line}.
  std::optional<nlohmann::json> probe_for(Tx& tx, const RentalRecord& r, Timestamp now);
  // When a probe certificate made at `now` stops being valid (whole seconds): the deadline
  // of the install_access task that carries it.
  static Timestamp probe_valid_before(Timestamp now);

  // The rental's SSH details once it is active; nullopt before and after. The host is the
  // node's hostname, the port its ssh_port.
  std::optional<SshDetails> details(Tx& tx, const RentalRecord& r);
  // The same for a page of rentals, in their order, in one statement however many are active
  // (GET /v1/rentals lists up to 500).
  std::vector<std::optional<SshDetails>> details(Tx& tx, const std::vector<RentalRecord>& rentals);

  // Signs each of a node's host keys (as its agent reported them) into a host certificate
  // for `hostname`, valid from a few minutes ago (clock skew) for a year; each hello signs
  // them again. A key that does not parse is left without one.
  void certify_host_keys(Tx& tx, const std::string& node_id, const std::string& hostname,
                         std::vector<inventory::HostKey>& keys);
  // The node's host certificates, as install_access carries them.
  std::vector<std::string> host_certificates(Tx& tx, const std::string& node_id);

  // The user CA's public key, for sshd's TrustedUserCAKeys on every node.
  const std::string& user_ca_public_key() const { return ca_.user_ca_public_key(); }

 private:
  const identity::SshCertificateAuthority& ca_;
  inventory::NodeHostKeys host_keys_;
  const Clock& clock_;
};

// The SSH capability's answer to install_access: the rental's keys from identity's store,
// the node's host certificates and the login probe from SshAccess. The probe's two minutes
// are the real clock's, whatever the platform's (the test clock in test mode): the node's
// sshd judges the certificate by its own.
class RentalAccessMaterial final : public AccessMaterial {
 public:
  RentalAccessMaterial(SshAccess& access, identity::SshKeyStore& keys)
      : access_(access), keys_(keys) {}
  std::vector<std::string> authorized_keys(Tx& tx, const RentalRecord& r) override;
  std::vector<std::string> host_certificates(Tx& tx, const std::string& node_id) override {
    return access_.host_certificates(tx, node_id);
  }
  std::optional<nlohmann::json> probe(Tx& tx, const RentalRecord& r, Timestamp now) override;

 private:
  SshAccess& access_;
  identity::SshKeyStore& keys_;
};

}  // namespace gpurent::scheduler
