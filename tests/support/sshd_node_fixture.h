// A rental fleet with one node that is real where logging in is concerned: OpenSSH's sshd on
// 127.0.0.1 at a free port, and a real `gpurent-agent` that reports sshd's host key and
// installs each rental's access through an operator hook (which makes the rental's login
// with useradd, so the tests that use it need root). Shared by the SSH login tests of the
// server (tests/e2e/sshd_login_e2etest.cpp) and of the CLI (cli/tests/cli_sshd_e2etest.cpp).
#pragma once

#include "core/subprocess.h"
#include "tests/support/child_process.h"
#include "tests/support/paths.h"
#include "tests/support/rental_fleet_fixture.h"
#include "tests/support/wait_for.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

namespace gpurent::testing {

// A file's whole content ("" when it is not there).
inline std::string read_file_text(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// A TCP port nobody listens on now (the kernel's choice for port 0, released).
inline int free_tcp_port() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t n = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &n);
  close(fd);
  return ntohs(a.sin_port);
}

class SshdNodeTest : public RentalFleetTest {
 protected:
  // A server with an agent listener and a fleet of two nodes; `name` names the temporary
  // folders.
  void start_fleet(const std::string& name) {
    pki_dir_ = make_temp_dir(name + "-pki");
    work_ = make_temp_dir(name);
    server_ = agent_server(pki_dir_);
    seed_fleet({2});
  }

  void TearDown() override {
    sshd_.reset();
    agent_.reset();
    // Every login the hook made, whichever rental it was for.
    std::istringstream created(read_file_text(work_ + "/created-users"));
    for (std::string user; std::getline(created, user);) {
      if (!user.empty()) run_subprocess({"userdel", user});
    }
    ApiTest::TearDown();
    if (!pki_dir_.empty()) std::filesystem::remove_all(pki_dir_);
    if (!work_.empty()) std::filesystem::remove_all(work_);
  }

  // sshd's host key, the operator's access hook and sshd's configuration, at a free port.
  void prepare_sshd() {
    namespace fs = std::filesystem;
    port_ = free_tcp_port();
    fs::create_directories(work_ + "/hostkeys");
    auto made = run_subprocess({"ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "root@node",
                                "-f", work_ + "/hostkeys/ssh_host_ed25519_key"});
    ASSERT_EQ(made.exit_code, 0) << made.output;
    // The operator's hook: the rental's login made on install, as a real node's hook would.
    // '*' is no password, not a locked account (sshd refuses locked ones without PAM).
    std::ofstream(work_ + "/access-hook")
        << "#!/bin/sh\n"
        << "[ \"$GPURENT_ACCESS_ACTION\" = install ] || exit 0\n"
        << "id \"$GPURENT_ACCESS_USER\" >/dev/null 2>&1 && exit 0\n"
        << "useradd -M -p '*' -d /tmp -s /bin/sh "
           "\"$GPURENT_ACCESS_USER\" || exit 1\n"
        << "echo \"$GPURENT_ACCESS_USER\" >> " << work_
        << "/created-users\n"
        // sshd takes the host certificate install_access wrote when it reloads.
        << "kill -HUP \"$(cat " << work_ << "/sshd.pid)\"\n";
    fs::permissions(work_ + "/access-hook", fs::perms::owner_all);
    std::string access = work_ + "/access";
    std::ofstream(work_ + "/sshd_config")
        << "Port " << port_ << "\nListenAddress 127.0.0.1\n"
        << "HostKey " << work_ << "/hostkeys/ssh_host_ed25519_key\n"
        << "HostCertificate " << access << "/host_certificates/ssh_host_ed25519_key-cert.pub\n"
        << "PidFile " << work_ << "/sshd.pid\n"
        << "TrustedUserCAKeys " << access << "/trusted_user_ca_keys\n"
        << "AuthorizedPrincipalsFile " << access << "/users/%u/principals\n"
        << "AuthorizedKeysFile " << access << "/users/%u/authorized_keys\n"
        << "PasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\n"
        // The files live under /tmp, which everyone may write to.
        << "StrictModes no\nLogLevel VERBOSE\n";
  }

  // sshd as a node runs it; the access hook reloads it once install_access wrote its files.
  void start_sshd() {
    std::filesystem::create_directories("/run/sshd");  // sshd's privilege separation folder
    sshd_ = std::make_unique<ChildProcess>(
        "/usr/sbin/sshd", std::vector<std::string>{"-D", "-e", "-f", work_ + "/sshd_config"},
        work_ + "/sshd.log");
    ASSERT_TRUE(wait_for([&] {
      return read_file_text(work_ + "/sshd.log").find("listening") != std::string::npos;
    })) << read_file_text(work_ + "/sshd.log");
  }

  // The node on 127.0.0.1 at sshd's port, served by a real agent reporting sshd's host key.
  std::string agent_node() {
    auto [node_id, token] = create_enrolling_node("127.0.0.1");
    auto labelled = patch("/v1/admin/nodes/" + node_id,
                          {{"labels", {{"ssh_port", std::to_string(port_)}}}}, session(admin_));
    EXPECT_EQ(labelled.status, 200) << labelled.body;
    std::string url = "https://127.0.0.1:" + std::to_string(server_->agent_port());
    auto enrolled = run_subprocess({agent_path(), "enroll", "--url", url, "--token", token,
                                    "--ca-file", pki_dir_ + "/ca.crt", "--state-dir",
                                    work_ + "/state", "--log-format", "text"});
    EXPECT_EQ(enrolled.exit_code, 0) << enrolled.output;
    agent_ = std::make_unique<ChildProcess>(
        agent_path(),
        simulated_agent_run(
            url, work_, "100ms",
            {"--access-hook", work_ + "/access-hook", "--ssh-host-keys", work_ + "/hostkeys",
             "--sshd-address", "127.0.0.1:" + std::to_string(port_)}),
        work_ + "/agent.log");
    EXPECT_TRUE(wait_for([&] {
      nlohmann::json n = node_view(node_id);
      return n["state"] == "available" && n["health"] == "ok";
    })) << agent_->log();
    return node_id;
  }

  std::string pki_dir_;
  std::string work_;
  int port_ = 0;
  std::unique_ptr<ChildProcess> sshd_;
  std::unique_ptr<ChildProcess> agent_;
};

}  // namespace gpurent::testing
