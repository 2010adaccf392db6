// The built `gpurent-agent run` refusing to start, with exit status 2 and one line naming the
// path, when it is to log in through sshd and sshd could not reach the access root.
#include "core/subprocess.h"
#include "tests/support/paths.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>

namespace gpurent::agent::run_command_test {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

class RunCommand : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "gpurent-run-cmd-XXXXXX").string();
    dir_ = mkdtemp(pattern.data());
    fs::permissions(dir_, fs::perms::owner_all | fs::perms::others_exec);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // `run` of an agent never enrolled (it would stop there), with `extra`.
  SubprocessResult run(std::vector<std::string> extra) {
    std::vector<std::string> argv{
        testing::agent_path(),     "run",       "--url",     "https://127.0.0.1:9", "--state-dir",
        (dir_ / "state").string(), "--backend", "simulated", "--log-format",        "text"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return run_subprocess(argv);
  }

  fs::path dir_;
};

TEST_F(RunCommand, RefusesToStartWhenSshdCouldNotReachTheAccessRoot) {
  fs::create_directories(dir_ / "closed");
  fs::permissions(dir_ / "closed", fs::perms::owner_all);
  auto r = run({"--sshd-address", "127.0.0.1:22", "--access-root", (dir_ / "closed/ssh").string()});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_THAT(r.output, HasSubstr((dir_ / "closed").string() + " is mode 0700"));
  EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << r.output;

  // The default access root is in the state folder, which enrolment makes 0700.
  fs::create_directories(dir_ / "state");
  fs::permissions(dir_ / "state", fs::perms::owner_all);
  auto in_state = run({"--sshd-address", "127.0.0.1:22"});
  EXPECT_EQ(in_state.exit_code, 2) << in_state.output;
  EXPECT_THAT(in_state.output, HasSubstr((dir_ / "state").string() + " is mode 0700"));
}

TEST_F(RunCommand, WithoutAnSshdOrWithAReadableRootItGoesOn) {
  // Past the check, an agent never enrolled stops at its missing state (status 1).
  fs::create_directories(dir_ / "closed");
  fs::permissions(dir_ / "closed", fs::perms::owner_all);
  auto no_sshd = run({"--access-root", (dir_ / "closed/ssh").string()});
  EXPECT_EQ(no_sshd.exit_code, 1) << no_sshd.output;
  EXPECT_THAT(no_sshd.output, HasSubstr("enrol first"));
  auto open =
      run({"--sshd-address", "127.0.0.1:22", "--access-root", (dir_ / "open/ssh").string()});
  EXPECT_EQ(open.exit_code, 1) << open.output;
  EXPECT_THAT(open.output, HasSubstr("enrol first"));
}

}  // namespace gpurent::agent::run_command_test
