// The tenant boundary on a real node (tests/support/sshd_node_fixture.h: sshd with the shipped
// drop-in, the shipped access hook, the agent started by the shipped unit's ExecStart under
// umask 0077):
// - a session opened during the rental is gone, and the login refused, within 10 s of the
//   customer's terminate and of the period's natural end (the test clock), the account removed;
// - a rental whose login sshd refuses never turns active: the agent's own login probe fails,
//   the lifecycle retries and then fails the rental, and its hold is released.
// As root only (the hook makes real accounts); CI runs as root.
#include "tests/support/sshd_node_fixture.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <chrono>
#include <thread>

namespace gpurent::testing::access_end_e2e {

using nlohmann::json;
using std::chrono::seconds;

std::string first_line(const std::string& text) {
  return text.substr(0, text.find('\n'));
}

class AccessEndE2E : public SshdNodeTest {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "the shipped access hook's useradd needs root";
    start_fleet("gpurent-access-end");
  }

  // The node with sshd running, and a rental of `owner` booked with a registered key and
  // driven to `active`: its id; the key's path in `key`.
  std::string active_rental(const Login& owner, std::string& key) {
    agent_node();
    key = key_pair("access-end-key");
    std::string rental = book_with_key(owner, first_line(read_file_text(key + ".pub")));
    EXPECT_FALSE(rental.empty());
    EXPECT_TRUE(drive_until(owner, rental, "active")) << agent_->log();
    return rental;
  }

  // The rental's login and a known_hosts file with the lines the API serves for it.
  std::pair<std::string, std::string> login_and_known_hosts(const Login& owner,
                                                            const std::string& rental) {
    json info = get("/v1/rentals/" + rental, session(owner)).json()["ssh"];
    EXPECT_TRUE(info.is_object()) << info;
    std::string known_hosts;
    for (const auto& line : info["known_hosts"]) known_hosts += line.get<std::string>() + "\n";
    return {login_of(info), write("known_hosts", known_hosts)};
  }

  // An interactive-like session that stays: `ssh … 'echo started; exec sleep 600'`, once it
  // has started on the node.
  std::unique_ptr<ChildProcess> open_session(const std::string& login, const std::string& key,
                                             const std::string& known_hosts) {
    auto argv = ssh_argv(login, key, "", known_hosts, "echo started; exec sleep 600");
    auto client = std::make_unique<ChildProcess>("/usr/bin/ssh", argv, work_ + "/session.log");
    EXPECT_TRUE(wait_for(
        [&] { return read_file_text(work_ + "/session.log").find("started") != std::string::npos; },
        seconds(20)))
        << read_file_text(work_ + "/session.log") << read_file_text(work_ + "/sshd.log");
    return client;
  }

  // Within 10 s: the session's client has seen its connection end, no process runs as the
  // login's uid, the account is gone, and a new login is refused.
  void expect_access_ended_within_10s(ChildProcess& client, uid_t uid, const std::string& login,
                                      const std::string& key, const std::string& known_hosts) {
    auto from = std::chrono::steady_clock::now();
    bool ended =
        wait_for([&] { return client.exited() && processes_of(uid).empty() && !uid_of(login); },
                 seconds(10), std::chrono::milliseconds(100));
    auto took = std::chrono::duration_cast<std::chrono::milliseconds>(
        std::chrono::steady_clock::now() - from);
    EXPECT_TRUE(ended) << "after " << took.count() << " ms: session "
                       << (client.exited() ? "ended" : "still open") << ", "
                       << processes_of(uid).size() << " process(es) of uid " << uid << ", account "
                       << (uid_of(login) ? "still there" : "removed") << "\n"
                       << agent_->log();
    auto again = ssh(login, key, "", known_hosts);
    EXPECT_NE(again.exit_code, 0) << again.output;
    EXPECT_EQ(again.output.find("logged-in"), std::string::npos) << again.output;
  }
};

TEST_F(AccessEndE2E, ASessionEndsAndTheLoginIsRefusedWithin10sOfTermination) {
  prepare_sshd();
  start_sshd();
  Login owner = account("owner@example.com", "Acme");
  std::string key;
  std::string rental = active_rental(owner, key);
  auto [login, known_hosts] = login_and_known_hosts(owner, rental);
  ASSERT_FALSE(login.empty());
  auto uid = uid_of(login);
  ASSERT_TRUE(uid) << "the shipped hook made no account " << login;
  auto live = open_session(login, key, known_hosts);
  ASSERT_FALSE(processes_of(*uid).empty());

  auto ended = post("/v1/rentals/" + rental + "/terminate", json::object(), session(owner));
  ASSERT_EQ(ended.status, 200) << ended.body;
  // No lifecycle run is needed: the terminate queues revoke_access in its own transaction.
  expect_access_ended_within_10s(*live, *uid, login, key, known_hosts);
}

TEST_F(AccessEndE2E, ASessionEndsAndTheLoginIsRefusedWithin10sOfThePeriodsEnd) {
  prepare_sshd();
  start_sshd();
  Login owner = account("owner@example.com", "Acme");
  std::string key;
  std::string rental = active_rental(owner, key);
  auto [login, known_hosts] = login_and_known_hosts(owner, rental);
  auto uid = uid_of(login);
  ASSERT_TRUE(uid);
  auto live = open_session(login, key, known_hosts);

  // The day is over on the test clock: the next lifecycle run releases the rental. (An API
  // token reads it afterwards: a panel session does not outlive a day of silence.)
  std::string reader = token(session(owner), {"rentals:read"}).second;
  // In two steps, with a heartbeat between: one jump of a day would make the agent look
  // silent for longer than the server's agent_silence_limit (a day), which interrupts the
  // rental instead of ending it.
  advance(23 * 3600);
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  advance(3600 + 120);
  run_lifecycle();
  json r = get("/v1/rentals/" + rental, bearer(reader)).json();
  ASSERT_TRUE(r["state"] == "releasing" || r["state"] == "ended") << r["state"];
  expect_access_ended_within_10s(*live, *uid, login, key, known_hosts);
}

TEST_F(AccessEndE2E, ARentalWhoseLoginSshdRefusesFailsAndItsHoldIsReleased) {
  // sshd trusts another user CA than the platform's: every file the agent writes is right,
  // the login exists, sshd answers its banner — and nobody can log in. The agent's probe is
  // the only thing that can tell.
  std::string other_ca = work_ + "/other_user_ca";
  auto made = run_subprocess({"ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", other_ca});
  ASSERT_EQ(made.exit_code, 0) << made.output;
  prepare_sshd([&](std::string drop_in) {
    std::string from = access_root() + "/trusted_user_ca_keys";
    EXPECT_NE(drop_in.find(from), std::string::npos) << drop_in;
    return replace_all(drop_in, from, other_ca + ".pub");
  });
  start_sshd();
  Login owner = account("owner@example.com", "Acme");
  json before = get("/v1/billing/balance", session(owner)).json();
  agent_node();
  std::string key = key_pair("access-end-refused");
  std::string rental = book_with_key(owner, first_line(read_file_text(key + ".pub")));
  ASSERT_FALSE(rental.empty());
  json held = get("/v1/billing/balance", session(owner)).json();
  EXPECT_NE(held["held"], before["held"]) << held;

  bool saw_active = false;
  bool failed = wait_for(
      [&] {
        advance(61);
        run_lifecycle();
        std::string state = get("/v1/rentals/" + rental, session(owner)).json()["state"];
        saw_active = saw_active || state == "active";
        return state == "failed";
      },
      seconds(90), std::chrono::milliseconds(300));
  EXPECT_TRUE(failed) << get("/v1/rentals/" + rental, session(owner)).body << agent_->log();
  EXPECT_FALSE(saw_active) << "active while sshd refused the login";
  // Every attempt's install_access failed with sshd's answer to the probe.
  int refused = 0;
  for (const auto& t : tasks_of(rental)) {
    if (t["kind"] != "install_access") continue;
    EXPECT_EQ(t["state"], "failed") << t;
    if (t.dump().find("Permission denied") != std::string::npos) ++refused;
  }
  EXPECT_GE(refused, 1) << tasks_of(rental);
  // Never started, so never charged: the hold is gone and the balance is what it was.
  json after = get("/v1/billing/balance", session(owner)).json();
  EXPECT_EQ(after["held"], before["held"]) << after;
  EXPECT_EQ(after["available"], before["available"]) << after;
}

}  // namespace gpurent::testing::access_end_e2e
