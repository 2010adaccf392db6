// The platform's SSH certificate authority: two Ed25519 keys, one signing the user
// certificates engineers log in to a rental's node with, one signing the nodes' host
// certificates engineers check the node by. Certificates are in OpenSSH's format
// (PROTOCOL.certkeys: the `*-cert-v01@openssh.com` types), signed with OpenSSL, for every
// key type the key registry accepts (identity/ssh_public_key.h).
//
// The keys are made on first start in a folder readable by its owner only (0700, keys
// 0600; a key others can read is refused, as OpenSSH refuses one); every replica of
// gpurentd must see the same folder.
#pragma once

#include "core/clock.h"
#include "identity/ssh_public_key.h"

#include <array>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gpurent::identity {

enum class SshCertificateType : std::uint32_t { kUser = 1, kHost = 2 };

// Which extensions a user certificate grants: the interactive set below, or none at all (a
// certificate that may only run its forced command: no terminal, no forwarding, no rc).
// Host certificates carry none either way.
enum class SshCertificateExtensions { kInteractive, kNone };

// The critical options OpenSSH defines for user certificates (PROTOCOL.certkeys) that the
// CA signs: sshd runs `force-command` instead of whatever the client asks, and accepts the
// certificate only from a client in `source-address` (comma-separated CIDR list).
inline constexpr std::string_view kForceCommand = "force-command";
inline constexpr std::string_view kSourceAddress = "source-address";

struct SshCertificateRequest {
  SshCertificateType type = SshCertificateType::kUser;
  std::uint64_t serial = 0;
  std::string key_id;                   // shown by `ssh-keygen -L` and logged by sshd
  std::vector<std::string> principals;  // user names / host names; at least one
  Timestamp valid_after;                // whole seconds: OpenSSH's resolution
  Timestamp valid_before;
  // (name, value) pairs, user certificates only, each name once: kForceCommand or
  // kSourceAddress with a value of 1 to 1024 printable ASCII bytes. Encoded in name order,
  // as sshd requires.
  std::vector<std::pair<std::string, std::string>> critical_options;
  SshCertificateExtensions extensions = SshCertificateExtensions::kInteractive;
};

// The user certificate's extensions: what an interactive session needs (a terminal, agent
// and port forwarding, X11, ~/.ssh/rc) — the set `ssh-keygen -s` grants by default.
inline constexpr std::array<std::string_view, 5> kUserCertificateExtensions{
    "permit-X11-forwarding", "permit-agent-forwarding", "permit-port-forwarding", "permit-pty",
    "permit-user-rc"};

class SshCertificateAuthority {
 public:
  // Loads `dir/ssh_user_ca` and `dir/ssh_host_ca` (PKCS#8 PEM), making each that does not
  // exist. Throws std::runtime_error when a key is unreadable, not Ed25519, or readable by
  // group or others. Replicas starting together: a lock file lets one make the keys.
  static SshCertificateAuthority load_or_create(const std::filesystem::path& dir);

  SshCertificateAuthority(SshCertificateAuthority&&) noexcept;
  SshCertificateAuthority& operator=(SshCertificateAuthority&&) noexcept;
  ~SshCertificateAuthority();

  // "ssh-ed25519 AAAA… gpurent-user-ca": the line for sshd's TrustedUserCAKeys.
  const std::string& user_ca_public_key() const;
  // "ssh-ed25519 AAAA… gpurent-host-ca": for known_hosts' @cert-authority lines.
  const std::string& host_ca_public_key() const;

  // `key` signed into a certificate by the user CA (kUser) or the host CA (kHost): one line,
  // "<type>-cert-v01@openssh.com <base64> <key_id>", as `ssh-keygen -s` writes it.
  // Throws std::invalid_argument for a request without principals, with valid_after not
  // before valid_before, with a key id or principal that is empty, over 255 bytes or not
  // printable ASCII, or with a critical option that is unknown, repeated, on a host
  // certificate, or has a value outside the rule above.
  std::string sign(const SshPublicKey& key, const SshCertificateRequest& request) const;

  // The platform's third key in the same folder, `report_signing`: it signs what the platform
  // vouches for outside SSH (a rental's handover report, scheduler/handover_report.h). The
  // raw 64-byte Ed25519 signature of `bytes`, which `openssl pkeyutl -verify -rawin` checks
  // against report_public_key_pem().
  std::string sign_report(std::string_view bytes) const;
  // "-----BEGIN PUBLIC KEY-----…": the key published at GET /v1/platform/report-key.
  const std::string& report_public_key_pem() const;
  // "gpurent-report-<16 hex>": the first 8 bytes of the SHA-256 of the raw public key, so a
  // report names the key that signed it.
  const std::string& report_key_id() const;

 private:
  struct State;
  explicit SshCertificateAuthority(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace gpurent::identity
