// `gpurentd admin create` on the embedded cluster: alone on a data folder nobody holds, and
// beside a gpurentd serving from that folder (`make run`), which it must leave unharmed.
#include "tests/support/http_client.h"
#include "tests/support/paths.h"
#include "tests/support/pg_harness.h"
#include "tests/support/sanitizer_report.h"
#include "tests/support/server_process.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <sys/wait.h>

#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

namespace gpurent::testing::admin_command_e2e {

using namespace std::chrono_literals;

const std::map<std::string, std::string> kJson = {{"Content-Type", "application/json"}};

struct CommandResult {
  int exit_code = -1;
  std::string out;  // stdout: what the operator reads
  std::string err;  // stderr: the log
};

// Runs `gpurentd admin create` on `data_dir` with no DATABASE_URL, whatever the test's own
// environment holds, so the embedded cluster is the only way to a database.
CommandResult admin_create(const std::string& email, const std::string& data_dir) {
  std::string err_path = make_temp_dir("gpurent-admin-cmd") + "/stderr";
  std::string cmd = "env -u DATABASE_URL -u GPURENT_DATA_DIR " + gpurentd_path() +
                    " admin create --email " + email + " --data_dir=" + data_dir +
                    " --log_format=json 2>" + err_path;
  CommandResult result;
  FILE* out = popen(cmd.c_str(), "r");
  if (!out) {
    ADD_FAILURE() << "popen failed: " << cmd;
    return result;
  }
  char buf[256];
  while (fgets(buf, sizeof buf, out)) result.out += buf;
  int status = pclose(out);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream in(err_path);
  result.err.assign(std::istreambuf_iterator<char>(in), {});
  std::filesystem::remove_all(std::filesystem::path(err_path).parent_path());
  EXPECT_EQ(find_sanitizer_report(result.err), "") << "admin create wrote a sanitizer report";
  return result;
}

// The generated password the command prints once ("password: …").
std::string password_in(const std::string& out) {
  auto at = out.find("password: ");
  if (at == std::string::npos) return "";
  at += std::string("password: ").size();
  return out.substr(at, out.find('\n', at) - at);
}

int login(int port, const std::string& email, const std::string& password, bool* admin) {
  auto r = http_request(port, "POST", "/v1/auth/login",
                        nlohmann::json{{"email", email}, {"password", password}}.dump(), kJson);
  if (r.status == 200) *admin = r.json()["user"]["is_platform_admin"] == true;
  return r.status;
}

// The postmaster's pid, from the first line of the server's own pid file; "" when stopped.
std::string postmaster_pid(const std::string& data_dir) {
  std::ifstream in(data_dir + "/postmaster.pid");
  std::string pid;
  std::getline(in, pid);
  return pid;
}

TEST(AdminCommandE2E, CreatesAdminsAloneAndBesideAServerOnTheEmbeddedCluster) {
  std::string dir = make_temp_dir("gpurent-admin-e2e");
  std::string data_dir = dir + "/pg";

  // Nobody holds the folder: the command initialises and starts the cluster, creates the
  // admin, and stops the cluster again, as it always has.
  CommandResult alone = admin_create("alone@example.com", data_dir);
  ASSERT_EQ(alone.exit_code, 0) << alone.out << alone.err;
  std::string alone_password = password_in(alone.out);
  ASSERT_GE(alone_password.size(), 20u) << alone.out;
  EXPECT_EQ(postmaster_pid(data_dir), "") << "the command stopped the cluster it started";

  {
    ServerProcess server({.flags = {"--data_dir=" + data_dir}});
    ASSERT_EQ(http_request(server.port(), "GET", "/readyz").status, 200) << server.logs();
    bool admin = false;
    EXPECT_EQ(login(server.port(), "alone@example.com", alone_password, &admin), 200);
    EXPECT_TRUE(admin);
    std::string postmaster = postmaster_pid(data_dir);
    ASSERT_NE(postmaster, "") << server.logs();

    // While the server runs and holds the folder, the command uses its PostgreSQL.
    CommandResult beside = admin_create("beside@example.com", data_dir);
    ASSERT_EQ(beside.exit_code, 0) << beside.out << beside.err << server.logs();
    EXPECT_NE(beside.err.find("using the embedded PostgreSQL of the gpurentd serving"),
              std::string::npos)
        << beside.err;
    std::string password = password_in(beside.out);
    ASSERT_GE(password.size(), 20u) << beside.out;
    admin = false;
    EXPECT_EQ(login(server.port(), "beside@example.com", password, &admin), 200);
    EXPECT_TRUE(admin) << "the new admin signs in through the running server";

    // A second admin with the same email is refused, and still nothing is disturbed.
    CommandResult again = admin_create("beside@example.com", data_dir);
    EXPECT_NE(again.exit_code, 0) << again.out;
    EXPECT_NE(again.err.find("already exists"), std::string::npos) << again.err;

    EXPECT_EQ(postmaster_pid(data_dir), postmaster) << "the same PostgreSQL, never restarted";
    EXPECT_EQ(http_request(server.port(), "GET", "/readyz").status, 200) << server.logs();
    admin = false;
    EXPECT_EQ(login(server.port(), "alone@example.com", alone_password, &admin), 200);

    server.send_signal(SIGTERM);
    EXPECT_EQ(server.wait_exit(30s), 0) << server.logs();
  }
  EXPECT_EQ(postmaster_pid(data_dir), "") << "the server stopped its PostgreSQL on the way out";
  std::filesystem::remove_all(dir);
}

}  // namespace gpurent::testing::admin_command_e2e
