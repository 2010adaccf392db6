// /v1/ssh-keys end to end: real ssh-keygen keys, sessions with CSRF, roles, tenant isolation
// and hostile input.
#include "core/subprocess.h"
#include "tests/support/http_client.h"
#include "tests/support/pg_harness.h"
#include "tests/support/server_process.h"
#include "tests/support/test_keys.h"

#include <gtest/gtest.h>

#include <pqxx/pqxx>

#include <fstream>
#include <set>
#include <sstream>

namespace gpurent::testing::ssh_keys_e2e {

using namespace std::chrono_literals;
const std::map<std::string, std::string> kJson = {{"Content-Type", "application/json"}};

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
  return s;
}

// Key pairs made by the real ssh-keygen, once per test run (tests/support/test_keys.h).
class KeyFolder {
 public:
  static KeyFolder& instance() {
    static KeyFolder folder;
    return folder;
  }
  // Path of the key pair's private half; the public half is path + ".pub".
  std::string path(const std::string& name, const std::vector<std::string>& args) {
    std::vector<std::string> with_comment = {"-C", name + "@e2e"};
    with_comment.insert(with_comment.end(), args.begin(), args.end());
    return ssh_key_pair(name, with_comment);
  }
  std::string public_key(const std::string& name,
                         const std::vector<std::string>& args = {"-t", "ed25519"}) {
    return trim(read_file(path(name, args) + ".pub"));
  }
  std::string private_key(const std::string& name,
                          const std::vector<std::string>& args = {"-t", "ed25519"}) {
    return read_file(path(name, args));
  }

 private:
  KeyFolder() = default;
};

// `ssh-keygen -lf`: "<bits> SHA256:<hash> <comment> (<TYPE>)".
std::pair<int, std::string> ssh_keygen_fingerprint(const std::string& pub_path) {
  auto r = run_subprocess({"ssh-keygen", "-lf", pub_path});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  std::istringstream in(r.output);
  int bits = 0;
  std::string fingerprint;
  in >> bits >> fingerprint;
  return {bits, fingerprint};
}

struct Login {
  std::string cookie;  // "gpurent_session=…"
  std::string csrf;
  std::string user_id;
  std::string org_id;
};

class SshKeysE2E : public ::testing::Test {
 protected:
  void SetUp() override {
    server_ = std::make_unique<ServerProcess>(ServerOptions{.database_url = db_.url()});
  }
  int port() { return server_->port(); }

  HttpResult post(const std::string& path, const nlohmann::json& body,
                  std::map<std::string, std::string> headers = {}) {
    headers.emplace("Content-Type", "application/json");
    return http_request(port(), "POST", path, body.dump(), headers);
  }
  // Signs up (own org) and logs in.
  Login account(const std::string& email, const std::string& org = "Acme") {
    auto s = post("/v1/auth/signup",
                  {{"email", email}, {"password", "a good passphrase"}, {"org_name", org}});
    EXPECT_EQ(s.status, 201) << s.body;
    auto r = post("/v1/auth/login", {{"email", email}, {"password", "a good passphrase"}});
    EXPECT_EQ(r.status, 200) << r.body;
    std::string set_cookie = r.header("set-cookie");
    return {set_cookie.substr(0, set_cookie.find(';')), r.json().value("csrf_token", ""),
            s.json()["user"]["id"], s.json()["org"]["id"]};
  }
  // A new user who is a member of `org_id` with `role` (the membership row is written
  // directly, keeping this test independent of the members API), acting for that org.
  Login member_of(const std::string& org_id, const std::string& role, const std::string& email) {
    Login l = account(email, "Own " + role);
    {
      pqxx::connection c(db_.url());
      pqxx::work tx(c);
      tx.exec_params(
          "INSERT INTO memberships (org_id, user_id, role, created_at)"
          " VALUES ($1, $2, $3, now())",
          org_id, l.user_id, role);
      tx.commit();
    }
    auto r = post("/v1/session/org", {{"org_id", org_id}}, session(l));
    EXPECT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(r.json()["role"], role);
    l.org_id = org_id;
    return l;
  }
  static std::map<std::string, std::string> session(const Login& l) {
    return {{"Cookie", l.cookie}, {"X-CSRF-Token", l.csrf}};
  }
  HttpResult add_key(const Login& l, const nlohmann::json& body) {
    return post("/v1/ssh-keys", body, session(l));
  }
  HttpResult get(const Login& l, const std::string& path) {
    return http_request(port(), "GET", path, "", {{"Cookie", l.cookie}});
  }
  HttpResult del(const Login& l, const std::string& path) {
    return http_request(port(), "DELETE", path, "", session(l));
  }
  int key_rows() {
    pqxx::connection c(db_.url());
    pqxx::nontransaction tx(c);
    return tx.exec("SELECT count(*) FROM ssh_keys")[0][0].as<int>();
  }

  TestDatabase db_;
  std::unique_ptr<ServerProcess> server_;
};

TEST_F(SshKeysE2E, FingerprintsMatchSshKeygenForEveryKeyType) {
  auto l = account("fp@example.com");
  struct Kind {
    std::string name;
    std::vector<std::string> args;
    std::string type;
  };
  std::vector<Kind> kinds = {
      {"ed25519", {"-t", "ed25519"}, "ssh-ed25519"},
      {"ecdsa256", {"-t", "ecdsa", "-b", "256"}, "ecdsa-sha2-nistp256"},
      {"ecdsa384", {"-t", "ecdsa", "-b", "384"}, "ecdsa-sha2-nistp384"},
      {"ecdsa521", {"-t", "ecdsa", "-b", "521"}, "ecdsa-sha2-nistp521"},
      {"rsa3072", {"-t", "rsa", "-b", "3072"}, "ssh-rsa"},
  };
  auto& keys = KeyFolder::instance();
  for (const auto& k : kinds) {
    std::string pub = keys.public_key(k.name, k.args);
    auto [bits, fingerprint] = ssh_keygen_fingerprint(keys.path(k.name, k.args) + ".pub");
    auto r = add_key(l, {{"name", k.name}, {"public_key", pub + "\n"}});
    ASSERT_EQ(r.status, 201) << k.name << ": " << r.body;
    auto j = r.json();
    EXPECT_EQ(j["fingerprint"], fingerprint) << k.name;
    EXPECT_EQ(j["bits"], bits) << k.name;
    EXPECT_EQ(j["type"], k.type);
    EXPECT_EQ(j["name"], k.name);
    EXPECT_EQ(j["public_key"], pub) << "canonical form of a .pub line is the line itself";
    EXPECT_EQ(j["id"].get<std::string>().rfind("key_", 0), 0u);
    EXPECT_EQ(j["created_at"].get<std::string>().size(), 20u) << j["created_at"];
    auto again = get(l, "/v1/ssh-keys/" + j["id"].get<std::string>());
    ASSERT_EQ(again.status, 200) << again.body;
    EXPECT_EQ(again.json(), j);
  }
}

TEST_F(SshKeysE2E, FullFlowWithSessionCookieAndCsrf) {
  auto l = account("flow@example.com");
  auto& keys = KeyFolder::instance();
  auto a = add_key(l, {{"name", "laptop"}, {"public_key", keys.public_key("flow-a")}});
  ASSERT_EQ(a.status, 201) << a.body;
  auto b = add_key(l, {{"name", "  desktop  "}, {"public_key", keys.public_key("flow-b")}});
  ASSERT_EQ(b.status, 201) << b.body;
  EXPECT_EQ(b.json()["name"], "desktop") << "names are trimmed";
  std::string a_id = a.json()["id"], b_id = b.json()["id"];

  auto list = get(l, "/v1/ssh-keys");
  ASSERT_EQ(list.status, 200) << list.body;
  ASSERT_EQ(list.json()["items"].size(), 2u);
  EXPECT_EQ(list.json()["items"][0]["id"], a_id);
  EXPECT_EQ(list.json()["items"][1]["id"], b_id);
  EXPECT_TRUE(list.json()["next_cursor"].is_null());

  // Paging through the API.
  auto p1 = get(l, "/v1/ssh-keys?limit=1");
  ASSERT_EQ(p1.status, 200) << p1.body;
  ASSERT_EQ(p1.json()["items"].size(), 1u);
  ASSERT_TRUE(p1.json()["next_cursor"].is_string());
  auto p2 = get(l, "/v1/ssh-keys?limit=1&cursor=" + p1.json()["next_cursor"].get<std::string>());
  ASSERT_EQ(p2.status, 200) << p2.body;
  ASSERT_EQ(p2.json()["items"].size(), 1u);
  EXPECT_EQ(p2.json()["items"][0]["id"], b_id);
  EXPECT_TRUE(p2.json()["next_cursor"].is_null());

  // Without the CSRF token an unsafe request is refused and changes nothing.
  auto no_csrf = http_request(port(), "DELETE", "/v1/ssh-keys/" + a_id, "", {{"Cookie", l.cookie}});
  EXPECT_EQ(no_csrf.status, 403);
  auto no_csrf_post =
      http_request(port(), "POST", "/v1/ssh-keys",
                   nlohmann::json{{"name", "x"}, {"public_key", keys.public_key("flow-c")}}.dump(),
                   {{"Cookie", l.cookie}, {"Content-Type", "application/json"}});
  EXPECT_EQ(no_csrf_post.status, 403);
  EXPECT_EQ(key_rows(), 2);

  auto d = del(l, "/v1/ssh-keys/" + a_id);
  EXPECT_EQ(d.status, 204) << d.body;
  EXPECT_TRUE(d.body.empty());
  EXPECT_EQ(get(l, "/v1/ssh-keys/" + a_id).status, 404);
  EXPECT_EQ(del(l, "/v1/ssh-keys/" + a_id).status, 404);
  auto after = get(l, "/v1/ssh-keys");
  ASSERT_EQ(after.json()["items"].size(), 1u);
  EXPECT_EQ(after.json()["items"][0]["id"], b_id);
  // Deleted keys may be registered again.
  EXPECT_EQ(add_key(l, {{"name", "back"}, {"public_key", keys.public_key("flow-a")}}).status, 201);
}

TEST_F(SshKeysE2E, ListParametersAreChecked) {
  auto l = account("params@example.com");
  for (std::string q : {"limit=0", "limit=501", "limit=abc", "limit=-1", "limit=", "limit=1.5",
                        "limit=99999999999999999999"}) {
    auto r = get(l, "/v1/ssh-keys?" + q);
    EXPECT_EQ(r.status, 400) << q;
    EXPECT_EQ(r.json()["error"]["code"], "invalid_request") << q;
    EXPECT_EQ(r.json()["error"]["details"]["field"], "limit") << q;
  }
  for (std::string q : {"cursor=", "cursor=garbage", "cursor=1.key_short",
                        "cursor=%27%3B%20DROP%20TABLE%20ssh_keys%3B--"}) {
    auto r = get(l, "/v1/ssh-keys?" + q);
    EXPECT_EQ(r.status, 400) << q;
    EXPECT_EQ(r.json()["error"]["details"]["field"], "cursor") << q;
  }
  EXPECT_EQ(get(l, "/v1/ssh-keys?limit=500").status, 200);
  EXPECT_EQ(get(l, "/v1/ssh-keys?limit=1").status, 200);
}

TEST_F(SshKeysE2E, WithoutCredentialsEverythingIs401) {
  auto l = account("owner401@example.com");
  auto made = add_key(l, {{"name", "k"}, {"public_key", KeyFolder::instance().public_key("e401")}});
  ASSERT_EQ(made.status, 201);
  std::string path = "/v1/ssh-keys/" + made.json()["id"].get<std::string>();
  std::string body =
      nlohmann::json{{"name", "k"}, {"public_key", KeyFolder::instance().public_key("e401b")}}
          .dump();
  std::vector<HttpResult> results = {
      http_request(port(), "GET", "/v1/ssh-keys"),
      http_request(port(), "POST", "/v1/ssh-keys", body, kJson),
      http_request(port(), "GET", path),
      http_request(port(), "DELETE", path),
      http_request(port(), "GET", path, "",
                   {{"Cookie", "gpurent_session=" + std::string(64, 'a')}}),
  };
  for (const auto& r : results) {
    EXPECT_EQ(r.status, 401) << r.body;
    EXPECT_EQ(r.json()["error"]["code"], "unauthenticated");
  }
  EXPECT_EQ(key_rows(), 1);
}

TEST_F(SshKeysE2E, AnotherTenantSeesNothingAndChangesNothing) {
  auto a = account("a@example.com", "A");
  auto b = account("b@example.com", "B");
  std::string pub = KeyFolder::instance().public_key("tenant");
  auto made = add_key(a, {{"name", "a's key"}, {"public_key", pub}});
  ASSERT_EQ(made.status, 201) << made.body;
  std::string path = "/v1/ssh-keys/" + made.json()["id"].get<std::string>();

  auto g = get(b, path);
  EXPECT_EQ(g.status, 404);
  EXPECT_EQ(g.json()["error"]["code"], "not_found");
  auto d = del(b, path);
  EXPECT_EQ(d.status, 404);
  EXPECT_EQ(d.json()["error"]["code"], "not_found");
  auto list = get(b, "/v1/ssh-keys");
  ASSERT_EQ(list.status, 200);
  EXPECT_TRUE(list.json()["items"].empty());
  // A cursor made from another org's keys pages over nothing of theirs.
  ASSERT_EQ(add_key(a, {{"name", "a's second"},
                        {"public_key", KeyFolder::instance().public_key("tenant-2")}})
                .status,
            201);
  auto a_page = get(a, "/v1/ssh-keys?limit=1");
  ASSERT_TRUE(a_page.json()["next_cursor"].is_string()) << a_page.body;
  auto b_page = get(b, "/v1/ssh-keys?cursor=" + a_page.json()["next_cursor"].get<std::string>());
  ASSERT_EQ(b_page.status, 200) << b_page.body;
  EXPECT_TRUE(b_page.json()["items"].empty());

  // The owner still has it, unchanged.
  auto still = get(a, path);
  ASSERT_EQ(still.status, 200);
  EXPECT_EQ(still.json(), made.json());
  // A foreign, unknown and malformed id all look the same.
  auto unknown = get(a, "/v1/ssh-keys/key_0000000000000000000000");
  auto malformed = get(a, "/v1/ssh-keys/not-a-key");
  EXPECT_EQ(unknown.status, 404);
  EXPECT_EQ(malformed.status, 404);
  EXPECT_EQ(unknown.json()["error"]["message"], g.json()["error"]["message"]);
  EXPECT_EQ(malformed.json()["error"]["message"], g.json()["error"]["message"]);

  // The other org may register the same key for itself.
  auto theirs = add_key(b, {{"name", "b's copy"}, {"public_key", pub}});
  EXPECT_EQ(theirs.status, 201) << theirs.body;
  EXPECT_EQ(theirs.json()["fingerprint"], made.json()["fingerprint"]);
  EXPECT_EQ(get(a, "/v1/ssh-keys").json()["items"].size(), 2u);
  EXPECT_EQ(get(b, "/v1/ssh-keys").json()["items"].size(), 1u);
  // And deleting its copy leaves the first org's key alone.
  EXPECT_EQ(del(b, "/v1/ssh-keys/" + theirs.json()["id"].get<std::string>()).status, 204);
  EXPECT_EQ(get(a, path).status, 200);
}

TEST_F(SshKeysE2E, ViewerAndBillingMayReadButNotWrite) {
  auto owner = account("boss@example.com", "Team");
  auto made = add_key(
      owner, {{"name", "team key"}, {"public_key", KeyFolder::instance().public_key("role")}});
  ASSERT_EQ(made.status, 201) << made.body;
  std::string path = "/v1/ssh-keys/" + made.json()["id"].get<std::string>();

  for (std::string role : {"viewer", "billing"}) {
    auto m = member_of(owner.org_id, role, role + "@example.com");
    auto list = get(m, "/v1/ssh-keys");
    EXPECT_EQ(list.status, 200) << role;
    EXPECT_EQ(list.json()["items"].size(), 1u) << role;
    EXPECT_EQ(get(m, path).status, 200) << role;
    auto p = add_key(
        m, {{"name", "mine"}, {"public_key", KeyFolder::instance().public_key("role-" + role)}});
    EXPECT_EQ(p.status, 403) << role << ": " << p.body;
    EXPECT_EQ(p.json()["error"]["code"], "forbidden");
    auto d = del(m, path);
    EXPECT_EQ(d.status, 403) << role;
    EXPECT_EQ(get(owner, path).status, 200) << "the key survives a refused delete";
  }
  EXPECT_EQ(key_rows(), 1);

  auto member = member_of(owner.org_id, "member", "member@example.com");
  auto p = add_key(member, {{"name", "member key"},
                            {"public_key", KeyFolder::instance().public_key("role-member")}});
  EXPECT_EQ(p.status, 201) << p.body;
  EXPECT_EQ(del(member, path).status, 204);
}

TEST_F(SshKeysE2E, APastedPrivateKeyIsRefusedWithoutEchoingIt) {
  auto l = account("oops@example.com");
  auto& keys = KeyFolder::instance();
  for (const auto& [name, args] : std::vector<std::pair<std::string, std::vector<std::string>>>{
           {"priv-ed25519", {"-t", "ed25519"}},
           {"priv-rsa-pem", {"-t", "rsa", "-b", "3072", "-m", "PEM"}}}) {
    std::string secret = keys.private_key(name, args);
    ASSERT_NE(secret.find("PRIVATE KEY"), std::string::npos);
    auto r = add_key(l, {{"name", "oops"}, {"public_key", secret}});
    EXPECT_EQ(r.status, 400) << r.body;
    EXPECT_EQ(r.json()["error"]["details"]["field"], "public_key");
    EXPECT_NE(r.json()["error"]["message"].get<std::string>().find("private key"),
              std::string::npos)
        << r.body;
    // No line of the key's body appears in the response or the logs.
    std::istringstream lines(secret);
    std::string line;
    std::string logs = server_->logs();
    while (std::getline(lines, line)) {
      if (line.size() < 20 || line.find("-----") != std::string::npos) continue;
      EXPECT_EQ(r.body.find(line), std::string::npos);
      EXPECT_EQ(logs.find(line), std::string::npos);
    }
  }
  EXPECT_EQ(key_rows(), 0);
}

TEST_F(SshKeysE2E, ADuplicateIsConflict) {
  auto l = account("dup@example.com");
  std::string pub = KeyFolder::instance().public_key("dup");
  auto first = add_key(l, {{"name", "first"}, {"public_key", pub}});
  ASSERT_EQ(first.status, 201) << first.body;
  // Same key material with another comment is the same key.
  std::string recommented = pub.substr(0, pub.rfind(' ')) + " another comment";
  for (const auto& text : {pub, recommented}) {
    auto r = add_key(l, {{"name", "second"}, {"public_key", text}});
    EXPECT_EQ(r.status, 409) << r.body;
    EXPECT_EQ(r.json()["error"]["code"], "conflict");
    EXPECT_EQ(r.json()["error"]["details"]["field"], "public_key");
    EXPECT_EQ(r.json()["error"]["details"]["fingerprint"], first.json()["fingerprint"]);
  }
  EXPECT_EQ(key_rows(), 1);
}

TEST_F(SshKeysE2E, HostileInputIs400NamingTheFieldAndNever5xx) {
  auto l = account("hostile@example.com");
  std::string pub = KeyFolder::instance().public_key("hostile");
  struct Case {
    nlohmann::json body;
    std::string field;
  };
  std::vector<Case> cases = {
      {{{"public_key", pub}}, "name"},
      {{{"name", "x"}}, "public_key"},
      {{{"name", 42}, {"public_key", pub}}, "name"},
      {{{"name", true}, {"public_key", pub}}, "name"},
      {{{"name", {{"a", 1}}}, {"public_key", pub}}, "name"},
      {{{"name", "x"}, {"public_key", 7}}, "public_key"},
      {{{"name", "x"}, {"public_key", {pub}}}, "public_key"},
      {{{"name", "x"}, {"public_key", nullptr}}, "public_key"},
      {{{"name", ""}, {"public_key", pub}}, "name"},
      {{{"name", "   "}, {"public_key", pub}}, "name"},
      {{{"name", "line\nbreak"}, {"public_key", pub}}, "name"},
      {{{"name", "tab\x01"}, {"public_key", pub}}, "name"},
      {{{"name", std::string(201, 'x')}, {"public_key", pub}}, "name"},
      {{{"name", std::string(5000, 'x')}, {"public_key", pub}}, "name"},
      {{{"name", "x"}, {"public_key", pub}, {"org_id", "org_0000000000000000000000"}}, "org_id"},
      {{{"name", "x"}, {"public_key", pub}, {"fingerprint", "SHA256:x"}}, "fingerprint"},
      {{{"name", "x"}, {"public_key", ""}}, "public_key"},
      {{{"name", "x"}, {"public_key", "not a key at all"}}, "public_key"},
      {{{"name", "x"}, {"public_key", "ssh-ed25519 AAAA' OR 1=1 --"}}, "public_key"},
      {{{"name", "x"}, {"public_key", "ssh-dss AAAAB3NzaC1kc3MAAACBAP"}}, "public_key"},
      {{{"name", "x"}, {"public_key", pub + "\n" + pub}}, "public_key"},
      {{{"name", "x"}, {"public_key", std::string(20000, 'A')}}, "public_key"},
      {nlohmann::json::array({1, 2}), "body"},
      {"just a string", "body"},
  };
  for (const auto& c : cases) {
    auto r = add_key(l, c.body);
    EXPECT_EQ(r.status, 400) << c.body.dump().substr(0, 200) << " → " << r.body;
    EXPECT_EQ(r.json()["error"]["code"], "invalid_request") << c.body.dump().substr(0, 200);
    EXPECT_EQ(r.json()["error"]["details"]["field"], c.field) << c.body.dump().substr(0, 200);
  }
  // Not JSON at all, or not declared as JSON.
  auto bad_json = http_request(
      port(), "POST", "/v1/ssh-keys", "{\"name\": ",
      {{"Cookie", l.cookie}, {"X-CSRF-Token", l.csrf}, {"Content-Type", "application/json"}});
  EXPECT_EQ(bad_json.status, 400);
  EXPECT_EQ(bad_json.json()["error"]["code"], "invalid_json");
  auto not_json = http_request(
      port(), "POST", "/v1/ssh-keys", "name=x",
      {{"Cookie", l.cookie}, {"X-CSRF-Token", l.csrf}, {"Content-Type", "text/plain"}});
  EXPECT_EQ(not_json.status, 400);

  // A megabyte of key: refused as too large or as a bad key, never a server error.
  auto huge = add_key(l, {{"name", "x"}, {"public_key", std::string(1 << 20, 'A')}});
  EXPECT_TRUE(huge.status == 413 || huge.status == 400) << huge.status;
  auto almost =
      add_key(l, {{"name", "x"}, {"public_key", "ssh-ed25519 " + std::string(1000000, 'A')}});
  EXPECT_TRUE(almost.status == 413 || almost.status == 400) << almost.status;
  if (almost.status == 400) {
    EXPECT_EQ(almost.json()["error"]["details"]["field"], "public_key");
  }
  EXPECT_EQ(key_rows(), 0);

  // Unicode names are fine, up to 200 characters (not bytes).
  std::string unicode = "Ключ инженера 🚀 — ноутбук";
  auto u = add_key(l, {{"name", unicode}, {"public_key", pub}});
  ASSERT_EQ(u.status, 201) << u.body;
  EXPECT_EQ(u.json()["name"], unicode);
  std::string long_unicode;
  for (int i = 0; i < 200; ++i) long_unicode += "Ж";
  auto lu = add_key(
      l, {{"name", long_unicode}, {"public_key", KeyFolder::instance().public_key("hostile-2")}});
  EXPECT_EQ(lu.status, 201) << lu.body;
  auto too_long = add_key(l, {{"name", long_unicode + "Ж"},
                              {"public_key", KeyFolder::instance().public_key("hostile-3")}});
  EXPECT_EQ(too_long.status, 400);
  EXPECT_EQ(too_long.json()["error"]["details"]["field"], "name");

  // SQL metacharacters are stored verbatim.
  std::string sql = "'); DROP TABLE ssh_keys; -- \\ \" % _ $1";
  auto s =
      add_key(l, {{"name", sql}, {"public_key", KeyFolder::instance().public_key("hostile-4")}});
  ASSERT_EQ(s.status, 201) << s.body;
  auto back = get(l, "/v1/ssh-keys/" + s.json()["id"].get<std::string>());
  EXPECT_EQ(back.json()["name"], sql);
  EXPECT_EQ(key_rows(), 3);

  // Hostile ids in the path are just keys that do not exist.
  for (std::string id :
       std::vector<std::string>{"key_%27%20OR%201%3D1", "..%2F..%2Fetc", std::string(300, 'k'),
                                "key_0000000000000000000000%00"}) {
    auto g = get(l, "/v1/ssh-keys/" + id);
    EXPECT_TRUE(g.status == 404 || g.status == 400) << id << " → " << g.status;
    auto d = del(l, "/v1/ssh-keys/" + id);
    EXPECT_TRUE(d.status == 404 || d.status == 400) << id << " → " << d.status;
  }
  EXPECT_EQ(key_rows(), 3);
}

}  // namespace gpurent::testing::ssh_keys_e2e
