// A rental fleet with one node that is real where logging in is concerned, set up as README's
// "To bring a node into service" says: OpenSSH's sshd with the shipped drop-in
// (agent/node-kit/sshd-gpurent.conf), the shipped access hook
// (agent/node-kit/gpurent-access-hook) and a real `gpurent-agent` started with the shipped
// unit's ExecStart (agent/gpurent-agent.service) under the unit's UMask=0077. What differs from
// a real node is only where things are: the node's /etc/gpurent/ssh, /var/lib/gpurent-agent and
// /usr/lib/gpurent/access-hook are folders of the test, sshd listens on a free port of
// 127.0.0.1, and the backend is the simulated one (no GPUs here).
//
// The test's folder is made under /run, which root owns and nobody else may write to, so sshd
// runs with its default StrictModes yes, as on a node. The hook makes real Unix accounts, so
// the tests that use this need root (CI runs as root); TearDown removes every login left.
// Shared by the server's SSH tests (tests/e2e/sshd_login_e2etest.cpp,
// tests/e2e/access_end_e2etest.cpp) and the CLI's (cli/tests/cli_sshd_e2etest.cpp).
#pragma once

#include "core/subprocess.h"
#include "tests/support/child_process.h"
#include "tests/support/paths.h"
#include "tests/support/rental_fleet_fixture.h"
#include "tests/support/test_keys.h"
#include "tests/support/wait_for.h"

#include <netinet/in.h>
#include <pwd.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

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

// Every occurrence of `from` in `text` replaced by `to`.
inline std::string replace_all(std::string text, const std::string& from, const std::string& to) {
  for (auto at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
  return text;
}

// The words of a systemd unit's ExecStart (continuation lines joined), "" when it has none.
inline std::vector<std::string> unit_exec_start(const std::string& unit) {
  std::istringstream in(unit);
  std::string line, command;
  bool inside = false;
  while (std::getline(in, line)) {
    if (!inside && line.rfind("ExecStart=", 0) != 0) continue;
    if (!inside) line = line.substr(std::string("ExecStart=").size());
    inside = !line.empty() && line.back() == '\\';
    if (inside) line.pop_back();
    command += line + " ";
    if (!inside) break;
  }
  std::istringstream words(command);
  std::vector<std::string> out;
  for (std::string w; words >> w;) out.push_back(w);
  return out;
}

// The uid of a login, if the account exists.
inline std::optional<uid_t> uid_of(const std::string& login) {
  passwd pw{};
  passwd* found = nullptr;
  std::vector<char> buffer(16384);
  if (getpwnam_r(login.c_str(), &pw, buffer.data(), buffer.size(), &found) != 0 || !found) {
    return std::nullopt;
  }
  return found->pw_uid;
}

// The processes running with `uid` as their real, effective or saved uid (from /proc).
inline std::vector<int> processes_of(uid_t uid) {
  std::vector<int> out;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    std::string name = entry.path().filename();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::istringstream status(read_file_text(entry.path() / "status"));
    for (std::string line; std::getline(status, line);) {
      if (line.rfind("Uid:", 0) != 0) continue;
      std::istringstream ids(line.substr(4));
      for (long id; ids >> id;) {
        if (static_cast<uid_t>(id) == uid) {
          out.push_back(std::stoi(name));
          break;
        }
      }
      break;
    }
  }
  return out;
}

class SshdNodeTest : public RentalFleetTest {
 protected:
  // A server with an agent listener and a fleet of two nodes; `name` names the folders.
  void start_fleet(const std::string& name) {
    pki_dir_ = make_temp_dir(name + "-pki");
    if (geteuid() == 0) {
      std::string pattern = "/run/" + name + "-XXXXXX";
      ASSERT_NE(mkdtemp(pattern.data()), nullptr) << "cannot make a folder under /run";
      work_ = pattern;
    } else {
      work_ = make_temp_dir(name);  // no sshd login without root anyway
    }
    // sshd reads each login's files as that login: the way there must be open to others.
    std::filesystem::permissions(work_, std::filesystem::perms(0755));
    server_ = agent_server(pki_dir_);
    seed_fleet({2});
  }

  void TearDown() override {
    agent_.reset();
    sshd_.reset();
    // Any login the hook made and no revoke removed (a test that failed half way).
    for (const auto& login : logins_) {
      if (!uid_of(login)) continue;
      run_subprocess({"pkill", "-KILL", "-U", login});
      run_subprocess({"userdel", "-r", "-f", login});
    }
    ApiTest::TearDown();
    if (!pki_dir_.empty()) std::filesystem::remove_all(pki_dir_);
    if (!work_.empty()) std::filesystem::remove_all(work_);
  }

  // One node's part of this machine: its folder (its /etc/gpurent/ssh, state, host keys,
  // sshd's files), the loopback address and the port its sshd listens on. The main node's is
  // the test's folder at 127.0.0.1; a test with a second node (a spare) gives it a folder of
  // its own and another loopback address.
  struct NodeSide {
    std::string dir;
    std::string address = "127.0.0.1";
    int port = 0;
  };
  NodeSide main_side() const { return {work_, "127.0.0.1", port_}; }

  // The node's /etc/gpurent/ssh: the agent's access root, which the drop-in names.
  std::string access_root() const { return access_root_of(work_); }
  static std::string access_root_of(const std::string& dir) { return dir + "/etc/gpurent/ssh"; }
  // The shipped node kit in the checkout.
  static std::string kit(const std::string& file) {
    return source_dir() + "/agent/node-kit/" + file;
  }

  // sshd's host key, and its configuration at a free port: a main file with what differs on
  // this machine (port, host key, pid file) that includes the shipped drop-in, whose paths
  // are moved from /etc/gpurent/ssh to the test's access root. `edit_drop_in` may change the
  // drop-in's text further (a test that breaks sshd's trust on purpose).
  void prepare_sshd(const std::function<std::string(std::string)>& edit_drop_in = nullptr) {
    port_ = free_tcp_port();
    prepare_sshd_for(main_side(), edit_drop_in);
  }
  void prepare_sshd_for(const NodeSide& side,
                        const std::function<std::string(std::string)>& edit_drop_in = nullptr) {
    namespace fs = std::filesystem;
    const std::string& dir = side.dir;
    fs::create_directories(dir + "/hostkeys");
    auto made = run_subprocess({"ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "root@node",
                                "-f", dir + "/hostkeys/ssh_host_ed25519_key"});
    ASSERT_EQ(made.exit_code, 0) << made.output;
    std::string drop_in = read_file_text(kit("sshd-gpurent.conf"));
    ASSERT_NE(drop_in.find("/etc/gpurent/ssh/"), std::string::npos) << drop_in;
    drop_in = replace_all(drop_in, "/etc/gpurent/ssh", access_root_of(dir));
    if (edit_drop_in) drop_in = edit_drop_in(drop_in);
    fs::create_directories(dir + "/sshd_config.d");
    std::ofstream(dir + "/sshd_config.d/gpurent.conf") << drop_in;
    std::ofstream(dir + "/sshd_config")
        << "Include " << dir << "/sshd_config.d/*.conf\n"
        << "Port " << side.port << "\nListenAddress " << side.address << "\n"
        << "HostKey " << dir << "/hostkeys/ssh_host_ed25519_key\n"
        << "PidFile " << dir << "/sshd.pid\n"
        << "PasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\n"
        << "LogLevel VERBOSE\n";
  }

  // sshd as a node runs it; the access hook reloads it once install_access wrote its files.
  void start_sshd() { sshd_ = start_sshd_for(main_side()); }
  std::unique_ptr<ChildProcess> start_sshd_for(const NodeSide& side) {
    std::filesystem::create_directories("/run/sshd");  // sshd's privilege separation folder
    auto sshd = std::make_unique<ChildProcess>(
        "/usr/sbin/sshd", std::vector<std::string>{"-D", "-e", "-f", side.dir + "/sshd_config"},
        side.dir + "/sshd.log");
    EXPECT_TRUE(wait_for([&] {
      return read_file_text(side.dir + "/sshd.log").find("listening") != std::string::npos;
    })) << read_file_text(side.dir + "/sshd.log");
    return sshd;
  }

  // The agent's command line: the shipped unit's ExecStart with the node's paths moved into
  // the test's folders, the simulated backend for the nvidia-smi one, heartbeats every second
  // and a provisioning of 100 ms, sshd at its port (the unit's 127.0.0.1:22). Every replacement
  // must find its word, so a change of the unit shows here rather than being tested around.
  std::vector<std::string> unit_command(const std::string& url) {
    return unit_command_for(url, main_side(), kit("gpurent-access-hook"));
  }
  std::vector<std::string> unit_command_for(const std::string& url, const NodeSide& side,
                                            const std::string& access_hook) {
    auto words = unit_exec_start(read_file_text(source_dir() + "/agent/gpurent-agent.service"));
    std::map<std::string, std::string> moved{
        {"/usr/bin/gpurent-agent", agent_path()},
        {"${GPURENT_AGENT_URL}", url},
        {"/var/lib/gpurent-agent", side.dir + "/state"},
        {"/etc/gpurent/ssh", access_root_of(side.dir)},
        {"/usr/lib/gpurent/access-hook", access_hook},
        {"nvidia-smi", "simulated"},
        {"10s", "1s"},
        {"127.0.0.1:22", side.address + ":" + std::to_string(side.port)}};
    std::set<std::string> found;
    for (auto& w : words) {
      if (auto it = moved.find(w); it != moved.end()) {
        found.insert(w);
        w = it->second;
      }
    }
    for (const auto& [from, _] : moved) {
      EXPECT_TRUE(found.count(from)) << "the unit's ExecStart has no " << from;
    }
    for (std::string extra : {"--gpus", "8", "--model", "NVIDIA H100 80GB HBM3", "--topology",
                              "nvswitch", "--provision-delay", "100ms", "--ssh-host-keys"}) {
      words.push_back(extra);
    }
    words.push_back(side.dir + "/hostkeys");
    words.insert(words.end(), extra_agent_args_.begin(), extra_agent_args_.end());
    return words;
  }

  // The node on 127.0.0.1 at sshd's port (the node's ssh_port), enrolled as README says and
  // served by the agent the unit starts, under its umask, reporting sshd's host key.
  std::string agent_node() {
    return agent_node_for(main_side(), agent_, kit("gpurent-access-hook"));
  }
  // The same for `side`, its agent kept in `agent`, its access hook `access_hook`.
  std::string agent_node_for(const NodeSide& side, std::unique_ptr<ChildProcess>& agent,
                             const std::string& access_hook) {
    auto [node_id, token] = create_enrolling_node(side.address);
    auto ported = patch("/v1/admin/nodes/" + node_id, {{"ssh_port", side.port}}, session(admin_));
    EXPECT_EQ(ported.status, 200) << ported.body;
    std::string url = "https://127.0.0.1:" + std::to_string(server_->agent_port());
    auto enrolled = run_subprocess({agent_path(), "enroll", "--url", url, "--token", token,
                                    "--ca-file", pki_dir_ + "/ca.crt", "--state-dir",
                                    side.dir + "/state", "--log-format", "text"});
    EXPECT_EQ(enrolled.exit_code, 0) << enrolled.output;
    start_agent_for(side, agent, access_hook);
    EXPECT_TRUE(wait_for([&] {
      nlohmann::json n = node_view(node_id);
      return n["state"] == "available" && n["health"] == "ok";
    })) << agent->log();
    return node_id;
  }
  // The enrolled node's agent (again), as the unit starts it. What the unit gives the agent
  // and its hooks: UMask=0077; the hook's home for logins (local scratch) and sshd's pid file
  // are where this machine has them.
  void start_agent_for(const NodeSide& side, std::unique_ptr<ChildProcess>& agent,
                       const std::string& access_hook) {
    std::string url = "https://127.0.0.1:" + std::to_string(server_->agent_port());
    std::vector<std::string> args{"GPURENT_SCRATCH=" + work_ + "/scratch",
                                  "GPURENT_SSHD_PID_FILE=" + side.dir + "/sshd.pid",
                                  "/bin/sh",
                                  "-c",
                                  "umask 0077 && exec \"$@\"",
                                  "agent"};
    auto command = unit_command_for(url, side, access_hook);
    args.insert(args.end(), command.begin(), command.end());
    agent = std::make_unique<ChildProcess>("/usr/bin/env", args, side.dir + "/agent.log");
  }

  // A copy of key pair `name` the test may use (ssh wants its private key 0600 and its own).
  std::string key_pair(const std::string& name) {
    namespace fs = std::filesystem;
    std::string source = ssh_key_pair(name, {"-t", "ed25519"});
    std::string path = work_ + "/" + name;
    fs::copy_file(source, path, fs::copy_options::overwrite_existing);
    fs::copy_file(source + ".pub", path + ".pub", fs::copy_options::overwrite_existing);
    fs::permissions(path, fs::perms::owner_read | fs::perms::owner_write);
    return path;
  }

  // A file of the test's folder with `text`: its path.
  std::string write(const std::string& name, const std::string& text) {
    std::string path = work_ + "/" + name;
    std::ofstream(path) << text;
    return path;
  }

  // `ssh … user@127.0.0.1 COMMAND` with the identity `key` (and `certificate`, if any), the
  // host checked against `known_hosts` alone, never trusted on first use.
  std::vector<std::string> ssh_argv(const std::string& user, const std::string& key,
                                    const std::string& certificate, const std::string& known_hosts,
                                    const std::string& command = "echo logged-in") {
    std::vector<std::string> argv{"-F", "/dev/null",
                                  "-o", "BatchMode=yes",
                                  "-o", "StrictHostKeyChecking=yes",
                                  "-o", "UserKnownHostsFile=" + known_hosts,
                                  "-o", "GlobalKnownHostsFile=/dev/null",
                                  "-o", "IdentitiesOnly=yes",
                                  "-o", "ConnectTimeout=10",
                                  "-i", key,
                                  "-p", std::to_string(port_)};
    if (!certificate.empty()) {
      argv.push_back("-o");
      argv.push_back("CertificateFile=" + certificate);
    }
    argv.push_back(user + "@127.0.0.1");
    argv.push_back(command);
    return argv;
  }
  SubprocessResult ssh(const std::string& user, const std::string& key,
                       const std::string& certificate, const std::string& known_hosts,
                       const std::string& command = "echo logged-in") {
    auto argv = ssh_argv(user, key, certificate, known_hosts, command);
    argv.insert(argv.begin(), "ssh");
    return run_subprocess(argv);
  }

  // The rental's login, remembered for TearDown.
  std::string login_of(const nlohmann::json& ssh_info) {
    std::string login = ssh_info.value("user", "");
    if (!login.empty()) logins_.insert(login);
    return login;
  }

  std::string pki_dir_;
  std::string work_;
  int port_ = 0;
  // Added to the agent's command line (a test's own options: where its notice file goes).
  std::vector<std::string> extra_agent_args_;
  std::set<std::string> logins_;
  std::unique_ptr<ChildProcess> sshd_;
  std::unique_ptr<ChildProcess> agent_;
};

}  // namespace gpurent::testing
