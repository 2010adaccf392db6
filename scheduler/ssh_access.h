// SSH access to a rental's node: the user certificates engineers log in with (signed by the
// platform's SSH CA for exactly the rental's period, with the rental's own principal), and
// what the rental shows them — host, port, login, the node's host-key fingerprints, a
// ready-to-paste command and the known_hosts lines that let `ssh` check the host without
// trusting it on first use.
#pragma once

#include "core/clock.h"
#include "core/db_pool.h"
#include "identity/ssh_certificate_authority.h"
#include "identity/ssh_public_key.h"
#include "inventory/node_host_keys.h"
#include "scheduler/records.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gpurent::scheduler {

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
  // with a serial of its own. invalid_state (details.state) unless the rental is scheduled,
  // provisioning or active: there is no access to give before it is placed or after it ends.
  IssuedUserCertificate issue(Tx& tx, const RentalRecord& r, const identity::SshPublicKey& key,
                              const CertificateRequester& requester);

  // The rental's SSH details once it is active; nullopt before and after.
  std::optional<SshDetails> details(Tx& tx, const RentalRecord& r);

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

}  // namespace gpurent::scheduler
