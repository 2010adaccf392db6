// A node agent's identity: enrolment, which trades the node's single-use token and the
// agent's certificate request for a client certificate from the platform's CA, and the
// check the agent listener makes of every certificate that connects.
#pragma once

#include "core/audit.h"
#include "core/certificate_authority.h"
#include "core/clock.h"
#include "core/db_pool.h"
#include "inventory/node_store.h"

#include <chrono>
#include <optional>
#include <string>

namespace gpurent::inventory {

struct Enrolled {
  std::string node_id;
  IssuedCertificate certificate;
  std::string ca_pem;  // for the agent's trust store: it trusts this CA alone
};

// Whether a certificate presented on the agent listener may speak for its node.
enum class CertificateVerdict {
  kAccepted,
  kUnknown,      // never issued here (another CA's, or a forged one that chained anyway)
  kRevoked,      // revoked, or superseded by a later enrolment of the node
  kExpired,      // past its not_after (TLS refuses it first; this is the second check)
  kNodeRetired,  // the node is retired: its agent is done
};
std::string_view to_string(CertificateVerdict verdict);

struct CertificateCheck {
  CertificateVerdict verdict = CertificateVerdict::kUnknown;
  std::string node_id;  // set when the serial is known
};

class NodeIdentity {
 public:
  NodeIdentity(const Clock& clock, NodeStore& nodes, const CertificateAuthority& ca,
               std::chrono::seconds certificate_validity)
      : clock_(clock), nodes_(nodes), ca_(ca), validity_(certificate_validity) {}

  // Enrols the agent of the node `token` was made for: marks the token used, revokes the
  // node's current certificate if it has one (a reinstalled agent enrols again with a new
  // token), signs the CSR with the node's id as its name, records the certificate and an
  // audit row. Throws Error: unauthenticated for an unknown, used or expired token (which
  // one is not said); invalid_state for a retired node; invalid_request (field csr_pem) for
  // a CSR the CA refuses — and then the token stays unused, since the caller's transaction
  // rolls back.
  Enrolled enroll(Tx& tx, const std::string& token, const std::string& csr_pem,
                  const std::string& client_ip);

  // The verdict on a connecting agent's certificate, by its serial (lowercase hex).
  CertificateCheck check(Tx& tx, const std::string& serial);

  // Revokes the node's current certificate; false when it has none.
  bool revoke(Tx& tx, const std::string& node_id, const std::string& reason, const Actor& actor);

 private:
  const Clock& clock_;
  NodeStore& nodes_;
  const CertificateAuthority& ca_;
  std::chrono::seconds validity_;
};

}  // namespace gpurent::inventory
