// A rental's checkpoint command: run as the login (root switches to it; any other agent only
// runs its own user's), never as uid 0 or a login that is not there, in a clean environment
// that names the notice, killed at its time limit (SIGKILL for one that ignores SIGTERM) or
// when the agent stops, with the last of its output reported.
#include "agent/checkpoint_runner.h"

#include "core/time.h"

#include <gtest/gtest.h>

#include <pwd.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

namespace gpurent::agent::checkpoint_runner_test {

namespace fs = std::filesystem;
using std::chrono::milliseconds;
using std::chrono::seconds;
using std::chrono::steady_clock;

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string own_login() {
  passwd* pw = ::getpwuid(::geteuid());
  return pw ? pw->pw_name : "";
}

// Who a command can run as here: nobody when the tests are root (root itself is refused), the
// tests' own user otherwise.
std::string runnable_login() {
  return ::geteuid() == 0 ? "nobody" : own_login();
}

class CheckpointRunnerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "gpurent-checkpoint-XXXXXX").string();
    dir_ = mkdtemp(pattern.data());
    // Writable by whichever user the command runs as.
    fs::permissions(dir_, fs::perms::all);
  }
  void TearDown() override { fs::remove_all(dir_); }

  CheckpointRun checkpoint(const std::string& login, const std::string& command,
                           milliseconds timeout = seconds(20)) const {
    return {.login = login,
            .command = command,
            .timeout = timeout,
            .notice = notice_from({{"id", "ntc_0000000000000000000007"},
                                   {"kind", "maintenance"},
                                   {"message", "BIOS update"},
                                   {"starts_at", "2027-01-10T08:00:00Z"},
                                   {"ends_at", nullptr},
                                   {"respond_by", nullptr}}),
            .notice_file = "/run/gpurent/notice.json"};
  }

  fs::path dir_;
  std::stop_source stop_;
};

TEST_F(CheckpointRunnerTest, RunsAsTheAgentsOwnUserWhenTheLoginIsIt) {
  if (::geteuid() == 0) GTEST_SKIP() << "the tests' own user is root, whose login is refused";
  auto out = (dir_ / "who").string();
  auto r = run_checkpoint(checkpoint(own_login(), "id -un > " + out), stop_.get_token());
  EXPECT_TRUE(r.ran) << r.describe();
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(slurp(out), own_login() + "\n");
}

TEST_F(CheckpointRunnerTest, RootSwitchesToTheLoginItsGroupsAndItsHome) {
  if (::geteuid() != 0) GTEST_SKIP() << "only root can switch users";
  auto out = (dir_ / "who").string();
  auto r = run_checkpoint(
      checkpoint("nobody", "id -un > " + out + "; id -u >> " + out + "; id -G >> " + out +
                               "; pwd >> " + out + "; echo \"$HOME\" >> " + out),
      stop_.get_token());
  ASSERT_TRUE(r.ran) << r.describe();
  EXPECT_EQ(r.exit_code, 0) << r.output_tail;
  passwd* nobody = ::getpwnam("nobody");
  ASSERT_NE(nobody, nullptr);
  std::istringstream lines(slurp(out));
  std::string name, uid, groups, cwd, home;
  std::getline(lines, name);
  std::getline(lines, uid);
  std::getline(lines, groups);
  std::getline(lines, cwd);
  std::getline(lines, home);
  EXPECT_EQ(name, "nobody");
  EXPECT_EQ(uid, std::to_string(nobody->pw_uid));
  std::istringstream group_list(groups);
  for (std::string g; group_list >> g;) EXPECT_NE(g, "0") << "root's groups were kept: " << groups;
  EXPECT_EQ(home, nobody->pw_dir);
  // nobody's home (/nonexistent) is not there: the command starts in / instead.
  EXPECT_EQ(cwd, fs::is_directory(nobody->pw_dir) ? std::string(nobody->pw_dir) : "/");
}

TEST_F(CheckpointRunnerTest, AnAgentThatIsNotRootRunsNoOtherUsersCommand) {
  if (::geteuid() == 0) GTEST_SKIP() << "root can switch users";
  std::string other;
  for (const char* name : {"nobody", "daemon", "bin"}) {
    passwd* pw = ::getpwnam(name);
    if (pw && pw->pw_uid != 0 && pw->pw_uid != ::geteuid()) {
      other = name;
      break;
    }
  }
  if (other.empty()) GTEST_SKIP() << "no account here other than the tests' own and root";
  auto r = run_checkpoint(checkpoint(other, "true"), stop_.get_token());
  EXPECT_FALSE(r.ran);
  ASSERT_TRUE(r.skipped);
  EXPECT_NE(r.skipped->find("not root"), std::string::npos) << *r.skipped;
}

TEST_F(CheckpointRunnerTest, AMissingLoginIsSkippedWithTheReason) {
  auto r = run_checkpoint(checkpoint("gpu-nosuchlogin", "touch " + (dir_ / "ran").string()),
                          stop_.get_token());
  EXPECT_FALSE(r.ran);
  EXPECT_EQ(r.skipped, "no login gpu-nosuchlogin on this node");
  EXPECT_EQ(r.describe(), "skipped: no login gpu-nosuchlogin on this node");
  EXPECT_FALSE(fs::exists(dir_ / "ran"));
  auto j = r.to_json();
  EXPECT_EQ(j["ran"], false);
  EXPECT_EQ(j["exit_code"], nullptr);
  EXPECT_EQ(j["timed_out"], false);
  EXPECT_EQ(j["skipped"], "no login gpu-nosuchlogin on this node");

  auto odd = run_checkpoint(checkpoint("Root;reboot", "true"), stop_.get_token());
  EXPECT_FALSE(odd.ran);
  EXPECT_EQ(odd.skipped, "'Root;reboot' is not a login name");
}

TEST_F(CheckpointRunnerTest, Uid0IsRefused) {
  auto r =
      run_checkpoint(checkpoint("root", "touch " + (dir_ / "ran").string()), stop_.get_token());
  EXPECT_FALSE(r.ran);
  ASSERT_TRUE(r.skipped);
  EXPECT_EQ(*r.skipped, "login root is uid 0: checkpoints never run as root");
  EXPECT_FALSE(fs::exists(dir_ / "ran"));
}

TEST_F(CheckpointRunnerTest, TheEnvironmentIsCleanAndNamesTheNotice) {
  ASSERT_EQ(::setenv("GPURENT_AGENT_SECRET", "leaked", 1), 0);
  auto out = (dir_ / "env").string();
  auto r = run_checkpoint(checkpoint(runnable_login(), "env > " + out), stop_.get_token());
  ::unsetenv("GPURENT_AGENT_SECRET");
  ASSERT_TRUE(r.ran) << r.describe();
  EXPECT_EQ(r.exit_code, 0) << r.output_tail;
  std::map<std::string, std::string> env;
  std::istringstream lines(slurp(out));
  for (std::string line; std::getline(lines, line);) {
    auto eq = line.find('=');
    if (eq != std::string::npos) env[line.substr(0, eq)] = line.substr(eq + 1);
  }
  passwd* pw = ::getpwnam(runnable_login().c_str());
  ASSERT_NE(pw, nullptr);
  EXPECT_EQ(env["HOME"], pw->pw_dir);
  EXPECT_EQ(env["USER"], runnable_login());
  EXPECT_EQ(env["LOGNAME"], runnable_login());
  EXPECT_EQ(env["SHELL"], "/bin/sh");
  EXPECT_EQ(env["PATH"], "/usr/local/bin:/usr/bin:/bin");
  EXPECT_EQ(env["GPURENT_NOTICE_FILE"], "/run/gpurent/notice.json");
  EXPECT_EQ(env["GPURENT_NOTICE_ID"], "ntc_0000000000000000000007");
  EXPECT_EQ(env["GPURENT_NOTICE_KIND"], "maintenance");
  EXPECT_EQ(env["GPURENT_NOTICE_STARTS_AT"], "2027-01-10T08:00:00Z");
  // What the shell adds of its own (PWD, SHLVL, `_`) is all there is besides.
  const std::set<std::string> allowed{"HOME",
                                      "USER",
                                      "LOGNAME",
                                      "SHELL",
                                      "PATH",
                                      "GPURENT_NOTICE_FILE",
                                      "GPURENT_NOTICE_ID",
                                      "GPURENT_NOTICE_KIND",
                                      "GPURENT_NOTICE_STARTS_AT",
                                      "PWD",
                                      "OLDPWD",
                                      "SHLVL",
                                      "_"};
  for (const auto& [name, value] : env) EXPECT_TRUE(allowed.contains(name)) << name << "=" << value;
  EXPECT_FALSE(env.contains("GPURENT_AGENT_SECRET"));
}

TEST_F(CheckpointRunnerTest, TheTimeLimitKillsTheCommand) {
  auto started = steady_clock::now();
  auto r = run_checkpoint(checkpoint(runnable_login(), "echo saving; sleep 100", seconds(1)),
                          stop_.get_token());
  auto took = steady_clock::now() - started;
  EXPECT_LT(took, seconds(1) + kCheckpointKillGrace + seconds(3));
  EXPECT_TRUE(r.ran);
  EXPECT_TRUE(r.timed_out);
  EXPECT_EQ(r.exit_code, std::nullopt);
  EXPECT_GE(r.seconds, 0.9);
  EXPECT_EQ(r.describe().rfind("timed out after ", 0), 0u) << r.describe();
  EXPECT_EQ(r.output_tail.rfind("saving\n", 0), 0u) << r.output_tail;
  EXPECT_EQ(r.to_json()["timed_out"], true);
}

TEST_F(CheckpointRunnerTest, ACommandThatIgnoresSigtermIsKilledAfterTheGrace) {
  auto started = steady_clock::now();
  auto r = run_checkpoint(checkpoint(runnable_login(), "trap '' TERM; sleep 100", seconds(1)),
                          stop_.get_token());
  auto took = steady_clock::now() - started;
  EXPECT_GE(took, seconds(1) + kCheckpointKillGrace - milliseconds(500));
  EXPECT_LT(took, seconds(1) + kCheckpointKillGrace + seconds(3));
  EXPECT_TRUE(r.timed_out);
}

TEST_F(CheckpointRunnerTest, StoppingTheAgentStopsTheCommand) {
  std::thread stopper([this] {
    std::this_thread::sleep_for(milliseconds(300));
    stop_.request_stop();
  });
  auto started = steady_clock::now();
  auto r = run_checkpoint(checkpoint(runnable_login(), "sleep 100"), stop_.get_token());
  stopper.join();
  EXPECT_LT(steady_clock::now() - started, seconds(5));
  EXPECT_TRUE(r.stopped);
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.describe().rfind("stopped after ", 0), 0u) << r.describe();
}

TEST_F(CheckpointRunnerTest, ItsExitStatusAndTheLastOfItsOutputAreReported) {
  auto r = run_checkpoint(
      checkpoint(runnable_login(),
                 "i=0; while [ $i -lt 300 ]; do echo \"line $i of the checkpoint's output\"; "
                 "i=$((i+1)); done; echo 'disk full' >&2; exit 3"),
      stop_.get_token());
  ASSERT_TRUE(r.ran);
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_FALSE(r.timed_out);
  EXPECT_LE(r.output_tail.size(), 4096u);
  EXPECT_GT(r.output_tail.size(), 3000u);
  EXPECT_EQ(r.output_tail.substr(r.output_tail.size() - 10), "disk full\n");
  EXPECT_EQ(r.describe().rfind("exited 3 after ", 0), 0u) << r.describe();
  EXPECT_EQ(r.to_json()["exit_code"], 3);
  EXPECT_FALSE(r.to_json().contains("skipped"));
}

}  // namespace gpurent::agent::checkpoint_runner_test
