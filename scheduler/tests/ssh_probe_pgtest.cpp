// SshAccess's probe certificates against a real PostgreSQL and the real ssh-keygen: the
// install_access "probe" member is there exactly when the node's agent reported a probe key;
// its certificate is the user CA's, for that key, with the probe principal alone, valid two
// minutes around now, forcing /bin/true with no extensions, and recorded; a customer's
// certificate never carries a probe principal; the rental's SSH details take the node's
// ssh_port field.
#include "scheduler/ssh_access.h"

#include "core/subprocess.h"
#include "scheduler/lifecycle_rules.h"
#include "scheduler/tests/scheduler_fixture.h"
#include "tests/support/test_keys.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace gpurent::scheduler {
namespace ssh_probe_pgtest {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

std::string read_text(const fs::path& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// "type base64" of an OpenSSH public key line: what a hello's probe key is stored as.
std::string without_comment(const std::string& line) {
  auto second = line.find(' ', line.find(' ') + 1);
  std::string out = line.substr(0, second);
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  return out;
}

class SshProbeTest : public SchedulerTest {
 protected:
  void SetUp() override {
    SchedulerTest::SetUp();
    std::string pattern = (fs::temp_directory_path() / "gpurent-ssh-probe-XXXXXX").string();
    dir_ = mkdtemp(pattern.data());
    ca_.emplace(identity::SshCertificateAuthority::load_or_create(dir_ / "ca"));
    ssh_.emplace(*ca_, clock_);
    probe_key_ = without_comment(
        read_text(testing::ssh_key_pair("probe-ed25519", {"-t", "ed25519"}) + ".pub"));
  }
  void TearDown() override { fs::remove_all(dir_); }

  RentalRecord rental(const std::string& id) {
    return *read([&](Tx& tx) { return rentals_.get(tx, a_.org_id, id); });
  }
  // A booked rental on a node of its own; the node's agent reported the probe key when
  // `with_probe_key`.
  RentalRecord booked(const std::string& hostname, bool with_probe_key) {
    std::string n = node(hostname);
    if (with_probe_key) {
      transact([&](Tx& tx) { nodes_.record_ssh_probe_key(tx, n, probe_key_); });
    }
    return rental(book(a_, n, {0, 1, 2, 3, 4, 5, 6, 7}, hours(0, 24)));
  }
  std::optional<nlohmann::json> probe_for(const RentalRecord& r, Timestamp now) {
    return transact([&](Tx& tx) { return ssh_->probe_for(tx, r, now); });
  }
  // What `ssh-keygen -L` prints of `certificate`, in UTC; it fails on a bad signature.
  std::string listing(const std::string& certificate) {
    fs::path path = dir_ / ("cert" + std::to_string(++n_) + "-cert.pub");
    std::ofstream(path) << certificate << "\n";
    auto r = run_subprocess({"env", "TZ=UTC", "ssh-keygen", "-L", "-f", path.string()});
    EXPECT_EQ(r.exit_code, 0) << r.output;
    return r.output;
  }

  fs::path dir_;
  int n_ = 0;
  std::optional<identity::SshCertificateAuthority> ca_;
  std::optional<SshAccess> ssh_;
  std::string probe_key_;
};

TEST_F(SshProbeTest, NoProbeWithoutTheNodesProbeKey) {
  auto r = booked("noprobe-01", /*with_probe_key=*/false);
  EXPECT_FALSE(probe_for(r, clock_.now())) << "the node reported no probe key";
  auto unplaced = r;
  unplaced.node_id.reset();
  EXPECT_FALSE(probe_for(unplaced, clock_.now())) << "a rental without a node";
  // A later hello without the key takes the probe away again.
  transact([&](Tx& tx) { nodes_.record_ssh_probe_key(tx, *r.node_id, probe_key_); });
  EXPECT_TRUE(probe_for(r, clock_.now()));
  transact([&](Tx& tx) { nodes_.record_ssh_probe_key(tx, *r.node_id, std::nullopt); });
  EXPECT_FALSE(probe_for(r, clock_.now()));
  EXPECT_EQ(count("SELECT count(*) FROM ssh_certificates"), 1) << "only the one issued";
}

TEST_F(SshProbeTest, TheProbeCertificateIsTheUserCasForTheAgentsKeyAndNothingMore) {
  auto r = booked("probe-01.example.net", /*with_probe_key=*/true);
  // 2030-01-01T00:00:00.750Z: the validity is in whole seconds around it.
  Timestamp now = Timestamp(std::chrono::seconds(1'893'456'000)) + std::chrono::milliseconds(750);
  auto probe = probe_for(r, now);
  ASSERT_TRUE(probe);
  ASSERT_TRUE(probe->is_object());
  EXPECT_EQ(probe->size(), 4u) << probe->dump();
  EXPECT_EQ(probe->at("principal"), "gpurent-probe-" + r.id);
  EXPECT_EQ(probe->at("principal"), probe_principal(r.id));
  EXPECT_EQ(probe->at("host"), "probe-01.example.net") << "the name its host certificates carry";
  EXPECT_EQ(probe->at("host_ca_key"), ca_->host_ca_public_key());
  std::string certificate = probe->at("certificate");
  EXPECT_EQ(certificate.rfind("ssh-ed25519-cert-v01@openssh.com ", 0), 0u) << certificate;

  std::string shown = listing(certificate);
  auto probe_fingerprint = identity::parse_ssh_public_key(probe_key_).fingerprint;
  auto user_ca = identity::parse_ssh_public_key(ca_->user_ca_public_key()).fingerprint;
  EXPECT_THAT(shown, HasSubstr("Type: ssh-ed25519-cert-v01@openssh.com user certificate"));
  EXPECT_THAT(shown, HasSubstr("Public key: ED25519-CERT " + probe_fingerprint));
  EXPECT_THAT(shown, HasSubstr("Signing CA: ED25519 " + user_ca));
  EXPECT_THAT(shown,
              HasSubstr("Key ID: \"gpurent-probe rental=" + r.id + " node=" + *r.node_id + "\""));
  EXPECT_THAT(shown, HasSubstr("Valid: from 2029-12-31T23:59:50 to 2030-01-01T00:01:50"));
  EXPECT_THAT(shown, HasSubstr("Principals: \n                gpurent-probe-" + r.id +
                               "\n        Critical Options:"))
      << "the probe principal alone";
  EXPECT_THAT(shown, HasSubstr("Critical Options: \n                force-command /bin/true\n"));
  EXPECT_THAT(shown, HasSubstr("Extensions: (none)"));
  EXPECT_EQ(SshAccess::probe_valid_before(now),
            Timestamp(std::chrono::seconds(1'893'456'000 + 110)))
      << "the install_access deadline is the certificate's end";

  // Recorded like a customer's, under a serial of its own, asked for by no user.
  EXPECT_EQ(
      count("SELECT count(*) FROM ssh_certificates WHERE rental_id = '" + r.id +
            "' AND org_id = '" + r.org_id +
            "' AND user_id IS NULL AND token_id IS NULL AND principals = ARRAY['" +
            probe_principal(r.id) + "'] AND key_id LIKE 'gpurent-probe %' AND key_fingerprint = '" +
            probe_fingerprint +
            "' AND valid_after = '2029-12-31T23:59:50Z' AND"
            " valid_before = '2030-01-01T00:01:50Z'"),
      1);
  auto again = probe_for(r, now);
  ASSERT_TRUE(again);
  EXPECT_NE(again->at("certificate"), probe->at("certificate")) << "a fresh one each time";
  EXPECT_EQ(count("SELECT count(DISTINCT serial) FROM ssh_certificates"), 2);
}

TEST_F(SshProbeTest, ACustomersCertificateNeverCarriesAProbePrincipal) {
  auto r = booked("cust-01", /*with_probe_key=*/true);
  // The route POST /v1/rentals/{id}/ssh-certificate signs through issue(), with the key the
  // customer sends: the agent's own probe key, even, gets the rental's principal only.
  for (const auto& key_line :
       {probe_key_,
        read_text(testing::ssh_key_pair("customer-ed25519", {"-t", "ed25519"}) + ".pub")}) {
    auto key = identity::parse_ssh_public_key(key_line);
    auto issued = transact([&](Tx& tx) {
      return ssh_->issue(tx, r, key, {.user_id = a_.user_id, .token_id = std::nullopt});
    });
    EXPECT_EQ(issued.principals, std::vector<std::string>{rental_principal(r.id)});
    for (const auto& p : issued.principals) {
      EXPECT_FALSE(p.starts_with(kProbePrincipalPrefix)) << p;
    }
    std::string shown = listing(issued.certificate);
    EXPECT_THAT(shown, HasSubstr("Principals: \n                " + r.id + "\n        Critical"));
    EXPECT_THAT(shown, Not(HasSubstr("gpurent-probe")));
    EXPECT_THAT(shown, HasSubstr("Critical Options: (none)"));
  }
  EXPECT_NE(rental_principal(r.id), probe_principal(r.id));
  EXPECT_EQ(count("SELECT count(*) FROM ssh_certificates WHERE EXISTS (SELECT 1 FROM"
                  " unnest(principals) p WHERE p LIKE 'gpurent-probe-%')"),
            0);
}

TEST_F(SshProbeTest, TheRentalsSshDetailsTakeTheNodesSshPortField) {
  auto r = booked("port-01.example.net", /*with_probe_key=*/false);
  r.state = RentalState::kActive;
  auto details = [&] { return *transact([&](Tx& tx) { return ssh_->details(tx, r); }); };
  EXPECT_EQ(details().port, 22);
  EXPECT_EQ(details().command, "ssh " + rental_login(r.id) + "@port-01.example.net");
  inventory::NodeChange change;
  change.ssh_port = 2222;
  // A label of the old name is not read any more.
  change.labels = nlohmann::json{{"ssh_port", "2200"}};
  transact([&](Tx& tx) { nodes_.update(tx, *r.node_id, change, admin_); });
  auto d = details();
  EXPECT_EQ(d.host, "port-01.example.net");
  EXPECT_EQ(d.port, 2222);
  EXPECT_EQ(d.command, "ssh -p 2222 " + rental_login(r.id) + "@port-01.example.net");
  EXPECT_THAT(d.known_hosts.back(), HasSubstr("@cert-authority [port-01.example.net]:2222 "));
  EXPECT_THAT(d.ssh_config, HasSubstr("  Port 2222\n"));
}

}  // namespace ssh_probe_pgtest
}  // namespace gpurent::scheduler
