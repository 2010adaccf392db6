// The platform's own X.509 certificate authority for its agents: it signs each node agent's
// client certificate at enrolment (the node's id as the subject's common name, client
// authentication only) and the agent listener's server certificate, so agents and the
// control plane trust each other through this CA alone and never through a public one.
//
// Its key is made on first start and kept in a folder readable by its owner only; a key file
// that others can read is refused, as OpenSSH refuses a private key with open permissions.
// Every replica of gpurentd must see the same folder (or a copy of it).
#pragma once

#include "core/clock.h"

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace gpurent {

// A certificate the CA issued.
struct IssuedCertificate {
  std::string certificate_pem;
  std::string serial;              // lowercase hex, unique per certificate
  std::string sha256_fingerprint;  // lowercase hex of the DER encoding's SHA-256
  Timestamp not_before;
  Timestamp not_after;
};

// The same, with the private key the CA made for it (the agent listener's own).
struct IssuedKeyPair {
  IssuedCertificate certificate;
  std::string private_key_pem;
};

// Why a certificate signing request was refused: its text names what is wrong.
class CsrRejected : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class CertificateAuthority {
 public:
  // Loads `dir/ca.key` and `dir/ca.crt`, or makes them (an ECDSA P-256 key, a self-signed
  // certificate valid for ten years named `name`) when neither exists. The folder is made
  // 0700 and the key 0600. Throws std::runtime_error when only one of the files exists,
  // they do not match, or the key is readable by group or others. Replicas sharing the
  // folder may call it at once: a lock file in it lets one make the CA and the rest load it.
  static CertificateAuthority load_or_create(const std::filesystem::path& dir,
                                             const std::string& name, const Clock& clock);

  CertificateAuthority(CertificateAuthority&&) noexcept;
  CertificateAuthority& operator=(CertificateAuthority&&) noexcept;
  ~CertificateAuthority();

  // The CA's certificate, for the agents' trust store and the listener's client check.
  const std::string& certificate_pem() const;

  // Signs an agent's CSR (PEM, at most 16 KiB) as the client certificate of `node_id`,
  // valid from now for `validity`. The CSR's own subject and extensions are ignored: the CA
  // decides them. Throws CsrRejected when the text is not one PEM certificate request, its
  // signature does not verify, or its key is not ECDSA P-256/P-384, Ed25519 or RSA of at
  // least 2048 bits.
  IssuedCertificate sign_client_csr(std::string_view csr_pem, const std::string& node_id,
                                    std::chrono::seconds validity) const;

  // A fresh key and a server certificate for the agent listener, naming `hosts` (DNS names
  // or IP addresses) as subject alternative names.
  IssuedKeyPair issue_server_certificate(const std::vector<std::string>& hosts,
                                         std::chrono::seconds validity) const;

 private:
  struct State;
  explicit CertificateAuthority(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace gpurent
