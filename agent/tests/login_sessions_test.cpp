// The end of a login's processes: uids read from /proc/<pid>/status text (a fake proc folder
// of fixtures), zombies and malformed entries left out; and, as root, real processes of an
// unused uid killed with what they started while another uid's are left alone.
#include "agent/login_sessions.h"

#include "tests/support/wait_for.h"

#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace gpurent::agent::login_sessions_test {

namespace fs = std::filesystem;

std::string status(const std::string& state, const std::string& uid_line) {
  return "Name:\tsleep\nUmask:\t0022\nState:\t" + state + "\nTgid:\t7\nPid:\t7\nPPid:\t1\n" +
         uid_line + "\nGid:\t0\t0\t0\t0\nThreads:\t1\n";
}

TEST(LoginSessions, UidsComeFromTheStatusUidLine) {
  auto uids = status_uids(status("S (sleeping)", "Uid:\t1000\t1001\t1002\t1003"));
  ASSERT_TRUE(uids);
  EXPECT_EQ(uids->real, 1000u);
  EXPECT_EQ(uids->effective, 1001u);
  EXPECT_EQ(uids->saved, 1002u);
  EXPECT_EQ(status_uids(status("S (sleeping)", "Uid:\t4294967295\t0\t0\t0"))->real, 4294967295u);
  for (const char* bad : {"Uid:\t1000\t1000", "Uid:\tx\t1\t1\t1", "Uid:\t-1\t1\t1\t1",
                          "Uid:\t4294967296\t1\t1\t1", "Gid:\t1\t1\t1\t1", "Uidx:\t1\t1\t1\t1"}) {
    EXPECT_FALSE(status_uids(status("S (sleeping)", bad))) << bad;
  }
  EXPECT_TRUE(status_is_zombie(status("Z (zombie)", "Uid:\t1\t1\t1\t1")));
  EXPECT_FALSE(status_is_zombie(status("R (running)", "Uid:\t1\t1\t1\t1")));
}

TEST(LoginSessions, AProcessIsTheLoginsByItsRealEffectiveOrSavedUid) {
  std::string pattern = (fs::temp_directory_path() / "gpurent-proc-XXXXXX").string();
  fs::path proc = mkdtemp(pattern.data());
  auto entry = [&](const std::string& name, const std::string& text) {
    fs::create_directories(proc / name);
    if (!text.empty()) std::ofstream(proc / name / "status") << text;
  };
  entry("101", status("S (sleeping)", "Uid:\t48213\t48213\t48213\t48213"));
  entry("102", status("S (sleeping)", "Uid:\t0\t48213\t0\t0"));  // a setuid helper
  entry("103", status("S (sleeping)", "Uid:\t0\t0\t48213\t0"));  // could switch back
  entry("104", status("S (sleeping)", "Uid:\t48214\t48214\t48214\t48214"));
  entry("105", status("Z (zombie)", "Uid:\t48213\t48213\t48213\t48213"));
  entry("106", "");  // ended between the listing and the read
  entry("107", status("S (sleeping)", "Uid:\t48213"));
  entry("20", status("S (sleeping)", "Uid:\t1\t1\t1\t48213"));  // only its file system uid
  entry("self", status("S (sleeping)", "Uid:\t48213\t48213\t48213\t48213"));
  entry("sys", "");
  entry(std::to_string(getpid()), status("S (sleeping)", "Uid:\t48213\t48213\t48213\t48213"));
  EXPECT_EQ(processes_of(48213, proc), (std::vector<pid_t>{101, 102, 103}));
  EXPECT_EQ(processes_of(48214, proc), (std::vector<pid_t>{104}));
  EXPECT_TRUE(processes_of(48215, proc).empty());
  EXPECT_TRUE(processes_of(48213, proc / "never-made").empty());
  fs::remove_all(proc);
}

TEST(LoginSessions, LoginsAreLookedUpByName) {
  EXPECT_EQ(login_uid("root"), 0u);
  EXPECT_EQ(login_uid("gpurent-no-such-login"), std::nullopt);
  EXPECT_THROW(kill_processes_of(0), std::invalid_argument);
}

// A process that drops to `uid` and runs `command` with /bin/sh.
pid_t spawn_as(uid_t uid, const char* command) {
  pid_t pid = fork();
  if (pid == 0) {
    if (setgid(uid) != 0 || setuid(uid) != 0) _exit(126);
    execl("/bin/sh", "sh", "-c", command, static_cast<char*>(nullptr));
    _exit(127);
  }
  return pid;
}

TEST(LoginSessions, EveryProcessOfTheUidIsKilledAndNoOther) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to run processes as another uid";
  constexpr uid_t kLogin = 48213, kOther = 48214;
  // A session and what it started in the background: both run as the login.
  pid_t session = spawn_as(kLogin, "sleep 30 & exec sleep 30");
  pid_t other = spawn_as(kOther, "exec sleep 30");
  ASSERT_GT(session, 0);
  ASSERT_GT(other, 0);
  ASSERT_TRUE(testing::wait_for(
      [&] { return processes_of(kLogin).size() == 2 && processes_of(kOther).size() == 1; }));

  auto report = kill_processes_of(kLogin);
  EXPECT_EQ(report.killed, 2);
  EXPECT_TRUE(report.left.empty());
  EXPECT_TRUE(processes_of(kLogin).empty());
  int st = 0;
  ASSERT_EQ(waitpid(session, &st, 0), session);
  EXPECT_TRUE(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
  // Another uid's process runs on.
  EXPECT_EQ(processes_of(kOther), std::vector<pid_t>{other});
  EXPECT_EQ(waitpid(other, &st, WNOHANG), 0);
  EXPECT_EQ(kill_processes_of(kLogin).killed, 0) << "nothing left: nothing to kill";

  kill(other, SIGKILL);
  waitpid(other, &st, 0);
}

}  // namespace gpurent::agent::login_sessions_test
