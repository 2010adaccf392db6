// Tests enrolment and the agent listener's certificate check over a real database and the
// real CA: a token and a CSR become the node's certificate once; a second enrolment
// supersedes the first; revoked, foreign and retired nodes' certificates are refused.
#include "core/error.h"
#include "core/subprocess.h"
#include "inventory/node_identity.h"
#include "inventory/tests/inventory_fixture.h"

#include <filesystem>
#include <fstream>
#include <sstream>

namespace gpurent::inventory {
namespace node_identity_pgtest {

namespace fs = std::filesystem;
using std::chrono::hours;

class NodeIdentityTest : public InventoryTest {
 protected:
  NodeIdentityTest() {
    std::string pattern = (fs::temp_directory_path() / "gpurent-identity-XXXXXX").string();
    dir_ = mkdtemp(pattern.data());
    ca_.emplace(CertificateAuthority::load_or_create(dir_ / "pki", "test CA", clock_));
    other_ca_.emplace(CertificateAuthority::load_or_create(dir_ / "other", "other CA", clock_));
    identity_.emplace(clock_, nodes_, *ca_, hours(24 * 365));
  }
  ~NodeIdentityTest() override { fs::remove_all(dir_); }

  // A CSR as the agent makes one with `openssl req`.
  std::string csr() {
    std::string base = (dir_ / ("agent" + std::to_string(++n_))).string();
    auto r = run_subprocess({"openssl", "req", "-new", "-nodes", "-newkey", "ec", "-pkeyopt",
                             "ec_paramgen_curve:P-256", "-keyout", base + ".key", "-out",
                             base + ".csr", "-subj", "/CN=agent"});
    EXPECT_EQ(r.exit_code, 0) << r.output;
    std::ifstream in(base + ".csr");
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
  }

  CreatedNode new_node(const std::string& hostname) {
    return transact(
        [&](Tx& tx) { return nodes_.create(tx, node(hostname, "L4-24GB", 2), admin_); });
  }
  Enrolled enroll(const std::string& token, const std::string& request) {
    return transact([&](Tx& tx) { return identity_->enroll(tx, token, request, "198.51.100.9"); });
  }
  CertificateVerdict verdict(const std::string& serial) {
    return read([&](Tx& tx) { return identity_->check(tx, serial).verdict; });
  }
  ErrorCode refusal(const std::function<void()>& fn) {
    try {
      fn();
    } catch (const Error& e) {
      return e.code();
    }
    ADD_FAILURE() << "not refused";
    return ErrorCode::kInternal;
  }

  fs::path dir_;
  int n_ = 0;
  std::optional<CertificateAuthority> ca_, other_ca_;
  std::optional<NodeIdentity> identity_;
};

TEST_F(NodeIdentityTest, ATokenAndACsrBecomeTheNodesCertificateOnce) {
  auto created = new_node("gpu-1");
  auto enrolled = enroll(created.enrollment_token, csr());
  EXPECT_EQ(enrolled.node_id, created.node.node.id);
  EXPECT_EQ(enrolled.ca_pem, ca_->certificate_pem());
  EXPECT_EQ(verdict(enrolled.certificate.serial), CertificateVerdict::kAccepted);
  EXPECT_EQ(read([&](Tx& tx) { return identity_->check(tx, enrolled.certificate.serial); }).node_id,
            created.node.node.id);
  EXPECT_EQ(count("SELECT count(*) FROM audit_log WHERE action = 'node.enroll' AND target = '" +
                  created.node.node.id + "'"),
            1);
  // The token was single-use.
  EXPECT_EQ(refusal([&] { enroll(created.enrollment_token, csr()); }), ErrorCode::kUnauthenticated);
}

TEST_F(NodeIdentityTest, ARefusedCsrLeavesTheTokenUnused) {
  auto created = new_node("gpu-1");
  EXPECT_EQ(refusal([&] { enroll(created.enrollment_token, "not a CSR"); }),
            ErrorCode::kInvalidRequest);
  EXPECT_EQ(count("SELECT count(*) FROM node_certificates"), 0);
  auto enrolled = enroll(created.enrollment_token, csr());
  EXPECT_EQ(verdict(enrolled.certificate.serial), CertificateVerdict::kAccepted);
}

TEST_F(NodeIdentityTest, ExpiredAndUnknownTokensAreRefusedAlike) {
  auto created = new_node("gpu-1");
  EXPECT_EQ(refusal([&] { enroll("gpe_" + std::string(64, '0'), csr()); }),
            ErrorCode::kUnauthenticated);
  clock_.advance(hours(24) + std::chrono::seconds(1));
  EXPECT_EQ(refusal([&] { enroll(created.enrollment_token, csr()); }), ErrorCode::kUnauthenticated);
}

TEST_F(NodeIdentityTest, ANewEnrolmentSupersedesTheLastAndRevocationIsFinal) {
  auto created = new_node("gpu-1");
  auto first = enroll(created.enrollment_token, csr());
  // A reinstalled agent enrols again with a new token.
  std::string token = transact([&](Tx& tx) {
    return nodes_.issue_enrollment_token(tx, created.node.node.id, admin_)->enrollment_token;
  });
  auto second = enroll(token, csr());
  EXPECT_EQ(verdict(first.certificate.serial), CertificateVerdict::kRevoked);
  EXPECT_EQ(verdict(second.certificate.serial), CertificateVerdict::kAccepted);
  EXPECT_TRUE(transact(
      [&](Tx& tx) { return identity_->revoke(tx, created.node.node.id, "key leaked", admin_); }));
  EXPECT_EQ(verdict(second.certificate.serial), CertificateVerdict::kRevoked);
  EXPECT_FALSE(transact(
      [&](Tx& tx) { return identity_->revoke(tx, created.node.node.id, "again", admin_); }));
  EXPECT_EQ(count("SELECT count(*) FROM node_certificates WHERE revoked_at IS NULL"), 0);
}

TEST_F(NodeIdentityTest, ForeignExpiredAndRetiredNodesCertificatesAreRefused) {
  auto created = new_node("gpu-1");
  auto enrolled = enroll(created.enrollment_token, csr());
  // A certificate another CA issued for the same node id is unknown here.
  auto foreign = other_ca_->sign_client_csr(csr(), created.node.node.id, hours(1));
  EXPECT_EQ(verdict(foreign.serial), CertificateVerdict::kUnknown);
  clock_.advance(hours(24 * 366));
  EXPECT_EQ(verdict(enrolled.certificate.serial), CertificateVerdict::kExpired);
  transact([&](Tx& tx) {
    nodes_.transition(tx, created.node.node.id, NodeAction::kRetire, "gone", admin_);
  });
  EXPECT_EQ(verdict(enrolled.certificate.serial), CertificateVerdict::kNodeRetired);
}

TEST_F(NodeIdentityTest, ARetiredNodeCannotEnrol) {
  auto created = new_node("gpu-1");
  transact([&](Tx& tx) {
    nodes_.transition(tx, created.node.node.id, NodeAction::kRetire, "gone", admin_);
  });
  EXPECT_EQ(refusal([&] { enroll(created.enrollment_token, csr()); }), ErrorCode::kInvalidState);
}

}  // namespace node_identity_pgtest
}  // namespace gpurent::inventory
