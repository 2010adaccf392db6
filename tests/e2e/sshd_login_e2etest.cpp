// An engineer logs in to a rental's node through a real sshd, configured with the shipped
// drop-in from the files the real `gpurent-agent` wrote (TrustedUserCAKeys,
// AuthorizedPrincipalsFile, AuthorizedKeysFile, HostCertificate under its access root), the
// login made by the shipped access hook, with a certificate the API issued for the active
// rental, the host checked through the rental's served known_hosts lines with
// StrictHostKeyChecking=yes. Refused: a certificate for another rental, an expired one, a key
// never registered, and every login once the rental has ended.
//
// The hook makes real accounts (useradd), so the test needs root (CI runs as root); see
// tests/support/sshd_node_fixture.h for how the node is set up.
#include "core/sql.h"
#include "core/subprocess.h"
#include "identity/ssh_certificate_authority.h"
#include "tests/support/child_process.h"
#include "tests/support/paths.h"
#include "tests/support/rental_fleet_fixture.h"
#include "tests/support/sshd_node_fixture.h"
#include "tests/support/test_keys.h"
#include "tests/support/wait_for.h"

#include <gtest/gtest.h>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

namespace gpurent::testing::sshd_login_e2e {

using nlohmann::json;
namespace fs = std::filesystem;

std::string first_line(std::string text) {
  return text.substr(0, text.find('\n'));
}

class SshdLoginE2E : public SshdNodeTest {
 protected:
  std::string login_;

  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "the shipped access hook's useradd needs root";
    start_fleet("gpurent-sshd");
    prepare_sshd();
    // Running before the rental: install_access checks that it answers.
    start_sshd();
  }
};

TEST_F(SshdLoginE2E, ACertificateForTheActiveRentalLogsInAndNothingElseDoes) {
  agent_node();
  Login owner = account("owner@example.com", "Acme");
  std::string registered = key_pair("sshd-registered");
  std::string rental = book_with_key(owner, first_line(read_file_text(registered + ".pub")));
  ASSERT_FALSE(rental.empty());
  ASSERT_TRUE(drive_until(owner, rental, "active")) << agent_->log();
  json ssh_info = get("/v1/rentals/" + rental, session(owner)).json()["ssh"];
  ASSERT_TRUE(ssh_info.is_object());
  login_ = login_of(ssh_info);
  // Active only once the agent logged in as the rental's login itself: its install_access
  // result says so.
  std::string checked;
  json tasks = get("/v1/test/rentals/" + rental + "/tasks", {}).json();
  for (const auto& t : tasks["items"]) {
    if (t["kind"] == "install_access" && t["state"] == "succeeded") checked = t.dump();
  }
  EXPECT_NE(checked.find("login as " + login_ + " verified"), std::string::npos) << checked;
  EXPECT_EQ(ssh_info["command"], "ssh -p " + std::to_string(port_) + " " + login_ + "@127.0.0.1");
  ASSERT_EQ(ssh_info["host_key_fingerprints"].size(), 1u) << ssh_info;
  std::string known_hosts;
  for (const auto& line : ssh_info["known_hosts"]) known_hosts += line.get<std::string>() + "\n";
  std::string known_hosts_file = write("known_hosts", known_hosts);
  EXPECT_NE(ssh_info["ssh_config"].get<std::string>().find("Port " + std::to_string(port_)),
            std::string::npos)
      << ssh_info["ssh_config"];
  // The host certificate install_access wrote: the host CA's, naming the node's host.
  std::string host_cert = access_root() + "/host_certificates/ssh_host_ed25519_key-cert.pub";
  auto listed = run_subprocess({"ssh-keygen", "-L", "-f", host_cert});
  ASSERT_EQ(listed.exit_code, 0) << listed.output;
  EXPECT_NE(listed.output.find("host certificate"), std::string::npos) << listed.output;
  EXPECT_NE(listed.output.find("Principals: \n                127.0.0.1\n"), std::string::npos)
      << listed.output;

  // A certificate for a key the org never registered: it logs in, and the host is checked.
  std::string engineer = key_pair("sshd-engineer");
  auto issued =
      post("/v1/rentals/" + rental + "/ssh-certificate",
           {{"public_key", first_line(read_file_text(engineer + ".pub"))}}, session(owner));
  ASSERT_EQ(issued.status, 200) << issued.body;
  std::string cert =
      write("engineer-cert.pub", issued.json()["certificate"].get<std::string>() + "\n");
  // Its validity starts at the period's start rounded up to a whole second, which may still
  // be ahead of the clock this soon after booking "now".
  std::this_thread::sleep_for(std::chrono::seconds(1));
  auto in = ssh(login_, engineer, cert, known_hosts_file);
  EXPECT_EQ(in.exit_code, 0) << in.output << read_file_text(work_ + "/sshd.log") << issued.body
                             << get("/v1/rentals/" + rental, session(owner)).body;
  EXPECT_NE(in.output.find("logged-in"), std::string::npos) << in.output;
  // The host CA's line alone is enough to trust the node: sshd shows its host certificate.
  std::string ca_only;
  for (const auto& line : ssh_info["known_hosts"]) {
    if (line.get<std::string>().rfind("@cert-authority ", 0) == 0) ca_only = line;
  }
  auto through_ca = ssh(login_, engineer, cert, write("ca_known_hosts", ca_only + "\n"));
  EXPECT_EQ(through_ca.exit_code, 0) << through_ca.output;
  // The registered key, for clients without certificates, through authorized_keys.
  auto plain = ssh(login_, registered, "", known_hosts_file);
  EXPECT_EQ(plain.exit_code, 0) << plain.output;
  // A host that is not the one the rental names is not trusted.
  auto wrong_host =
      ssh(login_, engineer, cert,
          write("other_known_hosts", "[127.0.0.1]:" + std::to_string(port_) + " " +
                                         first_line(read_file_text(registered + ".pub")) + "\n"));
  EXPECT_NE(wrong_host.exit_code, 0) << wrong_host.output;

  // Refused: the key alone, never registered; a certificate of another rental; an expired one.
  auto bare = ssh(login_, engineer, "", known_hosts_file);
  EXPECT_NE(bare.exit_code, 0) << bare.output;
  std::string other =
      book_with_key(owner, first_line(read_file_text(key_pair("sshd-other").append(".pub"))));
  auto other_cert =
      post("/v1/rentals/" + other + "/ssh-certificate",
           {{"public_key", first_line(read_file_text(engineer + ".pub"))}}, session(owner));
  ASSERT_EQ(other_cert.status, 200) << other_cert.body;
  auto crossed =
      ssh(login_, engineer,
          write("other-cert.pub", other_cert.json()["certificate"].get<std::string>() + "\n"),
          known_hosts_file);
  EXPECT_NE(crossed.exit_code, 0) << crossed.output;
  // The platform's own CA, read from its folder, signs one whose validity has passed.
  auto ca = identity::SshCertificateAuthority::load_or_create(server_->ssh_ca_dir());
  auto now =
      std::chrono::time_point_cast<std::chrono::microseconds>(std::chrono::system_clock::now());
  std::string expired =
      ca.sign(identity::parse_ssh_public_key(first_line(read_file_text(engineer + ".pub"))),
              {.serial = 999999,
               .key_id = "expired",
               .principals = {rental},
               .valid_after = now - std::chrono::hours(2),
               .valid_before = now - std::chrono::hours(1)});
  auto late = ssh(login_, engineer, write("expired-cert.pub", expired + "\n"), known_hosts_file);
  EXPECT_NE(late.exit_code, 0) << late.output;

  // Ended: revoke_access took the login's files away; no way in remains.
  ASSERT_EQ(post("/v1/rentals/" + rental + "/terminate", json::object(), session(owner)).status,
            200);
  ASSERT_TRUE(drive_until(owner, rental, "ended")) << agent_->log();
  auto after_cert = ssh(login_, engineer, cert, known_hosts_file);
  EXPECT_NE(after_cert.exit_code, 0) << after_cert.output;
  auto after_key = ssh(login_, registered, "", known_hosts_file);
  EXPECT_NE(after_key.exit_code, 0) << after_key.output;
  // And the shipped hook removed the account.
  EXPECT_FALSE(uid_of(login_)) << login_;
}

}  // namespace gpurent::testing::sshd_login_e2e
