// The node kit as shipped (read from the source tree): the unit's ExecStart names the access
// root the sshd drop-in reads and the hook the kit installs, and keeps the umask the agent
// must work under; the hook is a POSIX sh script sh can parse.
#include "core/subprocess.h"
#include "tests/support/paths.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

namespace gpurent::agent::node_kit_test {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

std::string source(const std::string& relative) {
  std::ifstream in(fs::path(testing::source_dir()) / relative);
  EXPECT_TRUE(in) << relative;
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// The unit's ExecStart with its continuation lines joined.
std::string exec_start(const std::string& unit) {
  auto at = unit.find("\nExecStart=");
  EXPECT_NE(at, std::string::npos);
  std::string out;
  std::istringstream lines(unit.substr(at + 1));
  for (std::string line; std::getline(lines, line);) {
    bool more = !line.empty() && line.back() == '\\';
    if (more) line.pop_back();
    out += line;
    if (!more) break;
  }
  return out;
}

std::string flag(const std::string& command, const std::string& name) {
  std::smatch m;
  std::regex re("--" + name + "[ =]([^ ]+)");
  return std::regex_search(command, m, re) ? m[1].str() : "";
}

TEST(NodeKit, TheUnitTheDropInAndTheHookAgree) {
  auto unit = source("agent/gpurent-agent.service");
  auto command = exec_start(unit);
  std::string root = flag(command, "access-root");
  EXPECT_EQ(root, "/etc/gpurent/ssh");
  EXPECT_EQ(flag(command, "access-hook"), "/usr/lib/gpurent/access-hook");
  EXPECT_EQ(flag(command, "sshd-address"), "127.0.0.1:22");
  EXPECT_EQ(flag(command, "backend"), "nvidia-smi");
  EXPECT_THAT(unit, HasSubstr("\nUMask=0077\n")) << "the agent works under it";

  // Every line of the drop-in reads a file under the unit's access root, as the agent names
  // them (access_files.h).
  std::vector<std::string> settings;
  std::istringstream lines(source("agent/node-kit/sshd-gpurent.conf"));
  for (std::string line; std::getline(lines, line);) {
    if (!line.empty() && line[0] != '#') settings.push_back(line);
  }
  EXPECT_EQ(settings,
            (std::vector<std::string>{
                "TrustedUserCAKeys " + root + "/trusted_user_ca_keys",
                "AuthorizedPrincipalsFile " + root + "/users/%u/principals",
                "AuthorizedKeysFile " + root + "/users/%u/authorized_keys",
                "HostCertificate " + root + "/host_certificates/ssh_host_ed25519_key-cert.pub"}));
}

TEST(NodeKit, TheAccessHookIsAPosixShellScript) {
  fs::path hook = fs::path(testing::source_dir()) / "agent/node-kit/gpurent-access-hook";
  auto text = source("agent/node-kit/gpurent-access-hook");
  EXPECT_EQ(text.rfind("#!/bin/sh\n", 0), 0u);
  EXPECT_THAT(text, HasSubstr("\nset -eu\n"));
  EXPECT_NE(fs::status(hook).permissions() & fs::perms::owner_exec, fs::perms::none);
  auto parsed = run_subprocess({"sh", "-n", hook.string()});
  EXPECT_EQ(parsed.exit_code, 0) << parsed.output;
  // It refuses any login but a rental's, whatever it is asked to do.
  auto refused = run_subprocess(
      {"env", "GPURENT_ACCESS_ACTION=revoke", "GPURENT_ACCESS_USER=root", hook.string()});
  EXPECT_EQ(refused.exit_code, 2) << refused.output;
  EXPECT_THAT(refused.output, HasSubstr("not a rental's login"));
  auto odd = run_subprocess(
      {"env", "GPURENT_ACCESS_ACTION=revoke", "GPURENT_ACCESS_USER=gpu-a;b", hook.string()});
  EXPECT_EQ(odd.exit_code, 2) << odd.output;
}

}  // namespace gpurent::agent::node_kit_test
