// Enrolment and the certificate check, over node_enrollment_tokens and node_certificates.
#include "inventory/node_identity.h"

#include "core/error.h"
#include "core/sql.h"
#include "inventory/node_state.h"

namespace gpurent::inventory {
namespace {

constexpr Statement kNodeState = {"identity_node_state",
                                  "SELECT state FROM nodes WHERE id = $1 FOR UPDATE"};
constexpr Statement kRevokeCurrent = {
    "identity_revoke_current",
    "UPDATE node_certificates SET revoked_at = $2, revoked_reason = $3"
    " WHERE node_id = $1 AND revoked_at IS NULL RETURNING serial"};
constexpr Statement kInsertCertificate = {
    "identity_insert_certificate",
    "INSERT INTO node_certificates (serial, node_id, sha256_fingerprint, not_before, not_after,"
    " issued_at) VALUES ($1, $2, $3, $4, $5, $6)"};
constexpr Statement kCheck = {
    "identity_check_certificate",
    "SELECT c.node_id, c.revoked_at IS NOT NULL, c.not_after <= $2, n.state = $3::text"
    " FROM node_certificates c JOIN nodes n ON n.id = c.node_id WHERE c.serial = $1"};

}  // namespace

std::string_view to_string(CertificateVerdict verdict) {
  switch (verdict) {
    case CertificateVerdict::kAccepted:
      return "accepted";
    case CertificateVerdict::kUnknown:
      return "unknown certificate";
    case CertificateVerdict::kRevoked:
      return "revoked certificate";
    case CertificateVerdict::kExpired:
      return "expired certificate";
    case CertificateVerdict::kNodeRetired:
      return "node retired";
  }
  return "unknown certificate";
}

Enrolled NodeIdentity::enroll(Tx& tx, const std::string& token, const std::string& csr_pem,
                              const std::string& client_ip) {
  Timestamp now = clock_.now();
  auto consumed = nodes_.consume_enrollment_token(tx, token);
  if (!consumed) {
    throw Error(ErrorCode::kUnauthenticated,
                "The enrolment token is unknown, used or expired; create a new one for the node.");
  }
  const std::string& node_id = *consumed;
  if (tx.exec(kNodeState, node_id)[0][0].as<std::string>() == to_string(NodeState::kRetired)) {
    throw Error(ErrorCode::kInvalidState, "The node is retired; its agent cannot enrol.",
                {{"state", "retired"}});
  }
  IssuedCertificate certificate;
  try {
    certificate = ca_.sign_client_csr(csr_pem, node_id, validity_);
  } catch (const CsrRejected& e) {
    throw Error::invalid_field("csr_pem", e.what());
  }
  Actor agent{.ip = client_ip};
  for (const auto& revoked : tx.exec(kRevokeCurrent, node_id, sql_timestamp(now),
                                     std::string("superseded by a new enrolment"))) {
    write_audit(tx, now, agent,
                {.action = "node.certificate_revoke",
                 .target = node_id,
                 .details = {{"serial", revoked[0].as<std::string>()},
                             {"reason", "superseded by a new enrolment"}}});
  }
  tx.exec(kInsertCertificate, certificate.serial, node_id, certificate.sha256_fingerprint,
          sql_timestamp(certificate.not_before), sql_timestamp(certificate.not_after),
          sql_timestamp(now));
  write_audit(tx, now, agent,
              {.action = "node.enroll",
               .target = node_id,
               .details = {{"serial", certificate.serial},
                           {"sha256_fingerprint", certificate.sha256_fingerprint}}});
  return {node_id, std::move(certificate), ca_.certificate_pem()};
}

CertificateCheck NodeIdentity::check(Tx& tx, const std::string& serial) {
  auto rows = tx.exec(kCheck, serial, sql_timestamp(clock_.now()),
                      std::string(to_string(NodeState::kRetired)));
  if (rows.empty()) return {CertificateVerdict::kUnknown, ""};
  const auto& row = rows[0];
  CertificateCheck out{CertificateVerdict::kAccepted, row[0].as<std::string>()};
  if (row[3].as<bool>()) {
    out.verdict = CertificateVerdict::kNodeRetired;
  } else if (row[1].as<bool>()) {
    out.verdict = CertificateVerdict::kRevoked;
  } else if (row[2].as<bool>()) {
    out.verdict = CertificateVerdict::kExpired;
  }
  return out;
}

bool NodeIdentity::revoke(Tx& tx, const std::string& node_id, const std::string& reason,
                          const Actor& actor) {
  Timestamp now = clock_.now();
  auto rows = tx.exec(kRevokeCurrent, node_id, sql_timestamp(now), reason);
  for (const auto& revoked : rows) {
    write_audit(tx, now, actor,
                {.action = "node.certificate_revoke",
                 .target = node_id,
                 .details = {{"serial", revoked[0].as<std::string>()}, {"reason", reason}}});
  }
  return !rows.empty();
}

}  // namespace gpurent::inventory
