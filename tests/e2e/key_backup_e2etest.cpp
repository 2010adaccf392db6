// `gpurentd keys backup` and `keys restore` on a real server's CAs: the keys a server made,
// backed up, lost, restored, and the server started again on them signs with the same CAs;
// a wrong passphrase and a restore over other keys are refused with exit 2 and say why.
#include "tests/support/paths.h"
#include "tests/support/pg_harness.h"
#include "tests/support/sanitizer_report.h"
#include "tests/support/server_process.h"

#include <gtest/gtest.h>

#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <vector>

namespace gpurent::testing::key_backup_e2e {

namespace fs = std::filesystem;

struct CommandResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr
};

// `gpurentd keys ARGS` with `passphrase` on stdin.
CommandResult keys(const std::string& args, const std::string& passphrase) {
  std::string dir = make_temp_dir("gpurent-keys-cmd");
  std::ofstream(dir + "/stdin") << passphrase << "\n";
  std::string cmd = gpurentd_path() + " keys " + args + " --log_format=json <" + dir + "/stdin >" +
                    dir + "/out 2>&1";
  int status = std::system(cmd.c_str());
  CommandResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream in(dir + "/out");
  r.output.assign(std::istreambuf_iterator<char>(in), {});
  fs::remove_all(dir);
  EXPECT_EQ(find_sanitizer_report(r.output), "") << "keys " << args;
  return r;
}

std::string read(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

TEST(KeyBackupE2E, KeysLostAndRestoredAreTheOnesTheServerSignsWithAgain) {
  TestDatabase db;
  // Folders of the test's own: a ServerProcess removes its folder when it goes.
  const std::string state = make_temp_dir("gpurent-keys-state");
  const std::string pki = state + "/pki", ssh = state + "/ssh-ca";
  const std::vector<std::string> flags = {"--agent_pki_dir=" + pki, "--ssh_ca_dir=" + ssh};
  std::map<std::string, std::string> made;  // path → content, as the first server made them
  {
    ServerProcess server({.database_url = db.url(), .flags = flags});
    EXPECT_EQ(server.stop(), "");
  }
  for (const auto& dir : {pki, ssh}) {
    for (const auto& e : fs::directory_iterator(dir)) {
      if (e.path().filename() != ".lock") made[e.path().string()] = read(e.path());
    }
  }
  ASSERT_TRUE(made.count(pki + "/ca.key") && made.count(ssh + "/ssh_user_ca") &&
              made.count(ssh + "/ssh_host_ca") && made.count(ssh + "/report_signing"))
      << "the server made other files than expected";

  const std::string dirs = " --agent_pki_dir=" + pki + " --ssh_ca_dir=" + ssh;
  const std::string backup = make_temp_dir("gpurent-keys-backup") + "/keys.backup";
  auto backed = keys("backup --out " + backup + dirs, "a passphrase for the drill");
  ASSERT_EQ(backed.exit_code, 0) << backed.output;
  EXPECT_EQ(fs::status(backup).permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write);
  for (const auto& [path, content] : made) {
    EXPECT_EQ(read(backup).find(content), std::string::npos) << path << " is in the clear";
  }

  fs::remove_all(pki);
  fs::remove_all(ssh);
  auto wrong = keys("restore --in " + backup + dirs, "another passphrase, wrong");
  EXPECT_EQ(wrong.exit_code, 2);
  EXPECT_NE(wrong.output.find("wrong passphrase"), std::string::npos) << wrong.output;
  EXPECT_FALSE(fs::exists(pki + "/ca.key")) << "a refused restore wrote a key";

  auto restored = keys("restore --in " + backup + dirs, "a passphrase for the drill");
  ASSERT_EQ(restored.exit_code, 0) << restored.output;
  EXPECT_NE(restored.output.find("restored " + std::to_string(made.size()) + " of "),
            std::string::npos)
      << restored.output;

  // The server started on the restored folders keeps them: a server that found no CA would
  // have made new ones, and every node's and engineer's certificate would stop verifying.
  {
    ServerProcess server({.database_url = db.url(), .flags = flags});
    EXPECT_EQ(server.stop(), "");
  }
  for (const auto& [path, content] : made) EXPECT_EQ(read(path), content) << path;

  // A CA that has signed since is not overwritten by an older backup unless asked.
  std::ofstream(ssh + "/ssh_user_ca") << "a newer key";
  auto over = keys("restore --in " + backup + dirs, "a passphrase for the drill");
  EXPECT_EQ(over.exit_code, 2);
  EXPECT_NE(over.output.find("exists and differs"), std::string::npos) << over.output;
  auto replaced = keys("restore --replace --in " + backup + dirs, "a passphrase for the drill");
  EXPECT_EQ(replaced.exit_code, 0) << replaced.output;
  EXPECT_EQ(read(ssh + "/ssh_user_ca"), made[ssh + "/ssh_user_ca"]);
  fs::remove_all(fs::path(backup).parent_path());
  fs::remove_all(state);
}

}  // namespace gpurent::testing::key_backup_e2e
