// SSH access end to end against a real gpurentd: certificates for a rental, read by the real
// ssh-keygen, with the rental's principal and exactly its period; the rental's ssh object
// once active; the user CA's key in the install_access task; and refusals — hostile keys
// are 400, another org's rental 404, an ended one 409, never a 5xx.
#include "core/subprocess.h"
#include "tests/support/rental_fleet_fixture.h"
#include "tests/support/test_keys.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <ctime>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <sstream>

namespace gpurent::testing::ssh_access_e2e {

using nlohmann::json;
using ::testing::HasSubstr;
namespace fs = std::filesystem;

// "2026-12-01T05:00:00Z" or with a fraction, as the API writes times: microseconds since
// the epoch.
long long micros_of(const json& time) {
  std::string t = time;
  std::tm tm{};
  std::istringstream in(t.substr(0, 19));
  in >> std::get_time(&tm, "%Y-%m-%dT%H:%M:%S");
  long long micros = static_cast<long long>(timegm(&tm)) * 1'000'000;
  if (t.size() > 20 && t[19] == '.') {
    std::string fraction = t.substr(20, t.size() - 21);
    fraction.resize(6, '0');
    micros += std::stoll(fraction);
  }
  return micros;
}

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

class SshAccessE2E : public RentalFleetTest {
 protected:
  void SetUp() override {
    server_ = std::make_unique<ServerProcess>(
        ServerOptions{.database_url = db_.url(),
                      .flags = {"--rate_limit_per_credential=0", "--rate_limit_per_ip=0",
                                "--lifecycle_interval=60s"}});
    seed_fleet({2});
    node_id_ = add_node("gpu-1.example.net");
    work_ = make_temp_dir("gpurent-ssh-access");
  }
  void TearDown() override {
    ApiTest::TearDown();
    fs::remove_all(work_);
  }

  // Booked now and walked to active by the test's own lifecycle runs.
  std::string active_rental(const Login& owner) {
    auto booked = book_now(owner, 2);
    EXPECT_EQ(booked.status, 201) << booked.body;
    std::string id = booked.json()["id"];
    advance(1);
    run_lifecycle();
    complete_queued(id);
    advance(61);
    run_lifecycle();
    EXPECT_EQ(get("/v1/rentals/" + id, session(owner)).json()["state"], "active");
    return id;
  }
  HttpResult certificate(const std::string& rental, const json& body, const Headers& who) {
    return post("/v1/rentals/" + rental + "/ssh-certificate", body, who);
  }
  // What `ssh-keygen -L` prints of a certificate line, in UTC.
  std::string listing(const std::string& cert) {
    std::string path = work_ + "/c" + std::to_string(++n_) + "-cert.pub";
    std::ofstream(path) << cert << "\n";
    auto r = run_subprocess({"env", "TZ=UTC", "ssh-keygen", "-L", "-f", path});
    EXPECT_EQ(r.exit_code, 0) << r.output;
    return r.output;
  }
  static std::string public_key(const std::string& name, const std::vector<std::string>& args) {
    std::string text = read_text(ssh_key_pair(name, args) + ".pub");
    while (!text.empty() && text.back() == '\n') text.pop_back();
    return text;
  }
  // "2026-12-01T05:00:00Z" as ssh-keygen prints it in UTC.
  static std::string as_listed(const json& time) {
    std::string t = time;
    return t.substr(0, 19);
  }

  std::string node_id_;
  std::string work_;
  int n_ = 0;
};

TEST_F(SshAccessE2E, ACertificateForTheRentalCarriesItsPrincipalAndExactlyItsPeriod) {
  Login owner = account("owner@example.com", "Acme");
  auto booked = book_now(owner, 2);
  ASSERT_EQ(booked.status, 201) << booked.body;
  std::string id = booked.json()["id"];
  json period = booked.json()["period"];
  EXPECT_TRUE(booked.json()["ssh"].is_null()) << "no access before the rental is active";

  // Already for a scheduled rental: an engineer gets ready before the start.
  std::string key = public_key("ssh-access-ed25519", {"-t", "ed25519", "-C", "dev@laptop"});
  auto issued = certificate(id, {{"public_key", key}}, session(owner));
  ASSERT_EQ(issued.status, 200) << issued.body;
  json cert = issued.json();
  EXPECT_EQ(cert["principals"], json::array({id}));
  EXPECT_EQ(cert["key_id"], "rental=" + id + " user=" + owner.user_id);
  EXPECT_EQ(cert["user"].get<std::string>().rfind("gpu-", 0), 0u);
  // Whole seconds within the period, at most a second inside it.
  EXPECT_GE(micros_of(cert["valid_after"]), micros_of(period["start"]));
  // (The API shows times in whole seconds, cut: a start at .4 s reads as the second before.)
  EXPECT_LE(micros_of(cert["valid_after"]) - micros_of(period["start"]), 1'000'000);
  EXPECT_LE(micros_of(cert["valid_before"]), micros_of(period["end"]));
  EXPECT_LT(micros_of(period["end"]) - micros_of(cert["valid_before"]), 1'000'000);
  EXPECT_EQ(micros_of(cert["valid_after"]) % 1'000'000, 0);

  std::string shown = listing(cert["certificate"]);
  EXPECT_THAT(shown, HasSubstr("Type: ssh-ed25519-cert-v01@openssh.com user certificate"));
  EXPECT_THAT(shown, HasSubstr("Key ID: \"rental=" + id + " user=" + owner.user_id + "\""));
  EXPECT_THAT(shown, HasSubstr("Serial: " + cert["serial"].get<std::string>()));
  EXPECT_THAT(shown, HasSubstr("Valid: from " + as_listed(cert["valid_after"]) + " to " +
                               as_listed(cert["valid_before"])));
  EXPECT_THAT(shown, HasSubstr("Principals: \n                " + id + "\n"));
  EXPECT_THAT(shown, HasSubstr("permit-pty"));

  // Each certificate has a serial of its own; a token's names the token too.
  auto [token_id, token] = this->token(session(owner), {"rentals:write"});
  auto again = certificate(id, {{"public_key", key}}, bearer(token));
  ASSERT_EQ(again.status, 200) << again.body;
  EXPECT_NE(again.json()["serial"], cert["serial"]);
  EXPECT_EQ(again.json()["key_id"],
            "rental=" + id + " user=" + owner.user_id + " token=" + token_id);

  // The node is told to trust the CA that signed it: the install_access task (made once the
  // provision has succeeded) carries the user CA's key, whose fingerprint is the
  // certificate's signing CA.
  advance(1);
  run_lifecycle();
  for (const auto& t : tasks_of(id)) {
    if (t["kind"] != "provision") continue;
    auto done = post("/v1/test/tasks/" + t["id"].get<std::string>() + "/complete",
                     {{"ok", true}, {"message", "done"}});
    ASSERT_EQ(done.status, 200) << done.body;
  }
  json install;
  for (const auto& t : tasks_of(id)) {
    if (t["kind"] == "install_access") install = t;
  }
  ASSERT_TRUE(install.is_object());
  ASSERT_EQ(install["payload"]["user_ca_keys"].size(), 1u) << install;
  std::string ca_line = install["payload"]["user_ca_keys"][0];
  std::string ca_file = work_ + "/user_ca.pub";
  std::ofstream(ca_file) << ca_line << "\n";
  auto fingerprint = run_subprocess({"ssh-keygen", "-l", "-f", ca_file});
  ASSERT_EQ(fingerprint.exit_code, 0) << fingerprint.output;
  std::istringstream words(fingerprint.output);
  std::string bits, ca_fingerprint;
  words >> bits >> ca_fingerprint;
  EXPECT_THAT(shown, HasSubstr("Signing CA: ED25519 " + ca_fingerprint));
  EXPECT_EQ(install["payload"]["user"], cert["user"]);
}

TEST_F(SshAccessE2E, AnActiveRentalShowsHowToReachItsNode) {
  Login owner = account("owner@example.com", "Acme");
  std::string id = active_rental(owner);
  json ssh = get("/v1/rentals/" + id, session(owner)).json()["ssh"];
  ASSERT_TRUE(ssh.is_object()) << ssh;
  EXPECT_EQ(ssh["host"], "gpu-1.example.net");
  EXPECT_EQ(ssh["port"], 22);
  std::string user = ssh["user"];
  EXPECT_EQ(user.rfind("gpu-", 0), 0u);
  EXPECT_EQ(ssh["command"], "ssh " + user + "@gpu-1.example.net");
  ASSERT_FALSE(ssh["known_hosts"].empty());
  EXPECT_EQ(ssh["known_hosts"].back().get<std::string>().rfind(
                "@cert-authority gpu-1.example.net ssh-ed25519 ", 0),
            0u)
      << ssh["known_hosts"];
  // The list and the long-poll show the same.
  auto listed = get("/v1/rentals?state=active", session(owner)).json()["items"];
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_EQ(listed[0]["ssh"], ssh);
  EXPECT_EQ(
      get("/v1/rentals/" + id + "/wait?state=active&timeout_s=0", session(owner)).json()["ssh"],
      ssh);

  // A node on another port says so in the command and the known_hosts pattern.
  auto patched = patch("/v1/admin/nodes/" + node_id_, {{"ssh_port", 2222}}, session(admin_));
  ASSERT_EQ(patched.status, 200) << patched.body;
  ssh = get("/v1/rentals/" + id, session(owner)).json()["ssh"];
  EXPECT_EQ(ssh["port"], 2222);
  EXPECT_EQ(ssh["command"], "ssh -p 2222 " + user + "@gpu-1.example.net");
  EXPECT_EQ(ssh["known_hosts"].back().get<std::string>().rfind(
                "@cert-authority [gpu-1.example.net]:2222 ", 0),
            0u);
}

TEST_F(SshAccessE2E, HostileKeysAreRefusedWith400AndOtherRentalsAreNotFound) {
  Login owner = account("owner@example.com", "Acme");
  auto booked = book_now(owner, 2);
  ASSERT_EQ(booked.status, 201) << booked.body;
  std::string id = booked.json()["id"];
  std::string good = public_key("ssh-access-ed25519", {"-t", "ed25519"});
  std::string rsa_small = public_key("ssh-access-rsa-1024", {"-t", "rsa", "-b", "1024"});
  std::string private_key = read_text(ssh_key_pair("ssh-access-ed25519", {"-t", "ed25519"}));
  std::string truncated = good.substr(0, good.size() / 2);
  std::string b64 = good.substr(good.find(' ') + 1);
  std::vector<std::pair<std::string, json>> hostile = {
      {"no key", json::object()},
      {"not a string", {{"public_key", 42}}},
      {"empty", {{"public_key", ""}}},
      {"truncated", {{"public_key", truncated}}},
      {"wrong type name", {{"public_key", "ssh-dss " + b64}}},
      {"type and blob disagree", {{"public_key", "ecdsa-sha2-nistp256 " + b64}}},
      {"RSA below 3072 bits", {{"public_key", rsa_small}}},
      {"a private key", {{"public_key", private_key}}},
      {"giant", {{"public_key", "ssh-ed25519 " + std::string(20000, 'A')}}},
      {"a certificate", {{"public_key", "ssh-ed25519-cert-v01@openssh.com " + b64}}},
      {"two keys", {{"public_key", good + "\n" + good}}},
      {"an unknown field", {{"public_key", good}, {"validity", "forever"}}},
  };
  for (const auto& [why, body] : hostile) {
    auto r = certificate(id, body, session(owner));
    EXPECT_EQ(r.status, 400) << why << ": " << r.body;
    EXPECT_EQ(r.json()["error"]["code"], "invalid_request") << why << ": " << r.body;
  }
  auto not_json =
      send("POST", "/v1/rentals/" + id + "/ssh-certificate", "{\"public_key\": ", session(owner));
  EXPECT_EQ(not_json.status, 400) << not_json.body;

  // Another org's rental, and one that does not exist, are not found.
  Login stranger = account("stranger@example.com", "Other");
  EXPECT_EQ(certificate(id, {{"public_key", good}}, session(stranger)).status, 404);
  EXPECT_EQ(
      certificate("rnt_" + std::string(22, 'x'), {{"public_key", good}}, session(owner)).status,
      404);
  // A token that may only read rentals may not get access to them.
  auto [reader_id, reader] = this->token(session(owner), {"rentals:read"});
  EXPECT_EQ(certificate(id, {{"public_key", good}}, bearer(reader)).status, 403);
  // A rental that is over gives no more access.
  ASSERT_EQ(post("/v1/rentals/" + id + "/terminate", json::object(), session(owner)).status, 200);
  auto late = certificate(id, {{"public_key", good}}, session(owner));
  EXPECT_EQ(late.status, 409) << late.body;
  EXPECT_EQ(late.json()["error"]["code"], "invalid_state");
}

}  // namespace gpurent::testing::ssh_access_e2e
