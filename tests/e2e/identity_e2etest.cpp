// Sign-up, login, sessions, CSRF and /v1/me end to end, including what never reaches the logs.
#include "tests/support/access_log.h"
#include "tests/support/http_client.h"
#include "tests/support/paths.h"
#include "tests/support/pg_harness.h"
#include "tests/support/server_process.h"
#include "tests/support/wait_for.h"

#include <gtest/gtest.h>

#include <pqxx/pqxx>

#include <algorithm>
#include <cstdio>
#include <sstream>
#include <vector>

namespace gpurent::testing::identity_e2e {

const std::map<std::string, std::string> kJson = {{"Content-Type", "application/json"}};

long long count_rows(const std::string& url, const std::string& sql) {
  pqxx::connection c(url);
  pqxx::nontransaction tx(c);
  return tx.exec(sql)[0][0].as<long long>();
}

struct Login {
  std::string cookie;  // "gpurent_session=…"
  std::string csrf;
  nlohmann::json body;
};

class IdentityE2E : public ::testing::Test {
 protected:
  void SetUp() override {
    server_ = std::make_unique<ServerProcess>(ServerOptions{.database_url = db_.url()});
  }
  int port() { return server_->port(); }

  HttpResult post(const std::string& path, const nlohmann::json& body,
                  std::map<std::string, std::string> headers = kJson) {
    headers.emplace("Content-Type", "application/json");
    return http_request(port(), "POST", path, body.dump(), headers);
  }
  void signup(const std::string& email, const std::string& org = "Acme") {
    auto r = post("/v1/auth/signup",
                  {{"email", email}, {"password", "a good passphrase"}, {"org_name", org}});
    ASSERT_EQ(r.status, 201) << r.body;
  }
  Login login(const std::string& email, const std::string& password = "a good passphrase") {
    auto r = post("/v1/auth/login", {{"email", email}, {"password", password}});
    EXPECT_EQ(r.status, 200) << r.body;
    std::string set_cookie = r.header("set-cookie");
    return {set_cookie.substr(0, set_cookie.find(';')), r.json().value("csrf_token", ""), r.json()};
  }

  TestDatabase db_;
  std::unique_ptr<ServerProcess> server_;
};

TEST_F(IdentityE2E, SignupThenLoginGivesAHardenedSessionCookie) {
  auto r = post("/v1/auth/signup", {{"email", "ada@example.com"},
                                    {"password", "a good passphrase"},
                                    {"org_name", "Analytical"}});
  ASSERT_EQ(r.status, 201) << r.body;
  EXPECT_EQ(r.json()["user"]["email"], "ada@example.com");
  EXPECT_EQ(r.json()["org"]["name"], "Analytical");
  EXPECT_FALSE(r.json()["user"].contains("password_hash"));

  auto login_r =
      post("/v1/auth/login", {{"email", "ADA@example.com"}, {"password", "a good passphrase"}});
  ASSERT_EQ(login_r.status, 200) << login_r.body;
  std::string cookie = login_r.header("set-cookie");
  EXPECT_EQ(cookie.rfind("gpurent_session=", 0), 0u);
  EXPECT_NE(cookie.find("HttpOnly"), std::string::npos);
  EXPECT_NE(cookie.find("SameSite=Lax"), std::string::npos);
  EXPECT_NE(cookie.find("Path=/"), std::string::npos);
  EXPECT_EQ(cookie.find("Secure"), std::string::npos) << "plain HTTP: no Secure flag";
  EXPECT_EQ(login_r.json()["orgs"][0]["role"], "owner");
  EXPECT_EQ(login_r.json()["current_org_id"], r.json()["org"]["id"]);
  EXPECT_EQ(login_r.json()["csrf_token"].get<std::string>().size(), 64u);
}

TEST_F(IdentityE2E, CookieIsSecureBehindATrustedTlsProxyOnly) {
  signup("tls@example.com");
  auto cookie_with = [&](const std::string& proto) {
    auto r =
        post("/v1/auth/login", {{"email", "tls@example.com"}, {"password", "a good passphrase"}},
             {{"X-Forwarded-Proto", proto}});
    EXPECT_EQ(r.status, 200) << r.body;
    return r.header("set-cookie");
  };
  auto restart = [&](const std::string& proxies) {
    server_.reset();
    server_ = std::make_unique<ServerProcess>(
        ServerOptions{.database_url = db_.url(), .flags = {"--trusted_proxies=" + proxies}});
  };
  // The connection is plain HTTP; a client saying otherwise is not believed.
  EXPECT_EQ(cookie_with("https").find("Secure"), std::string::npos)
      << "no trusted proxies: the peer's X-Forwarded-Proto is ignored";
  restart("192.0.2.10");
  EXPECT_EQ(cookie_with("https").find("Secure"), std::string::npos)
      << "a peer that is not the trusted proxy is not believed";
  restart("127.0.0.1");
  EXPECT_NE(cookie_with("https").find("; Secure"), std::string::npos)
      << "the trusted proxy reached over TLS";
  EXPECT_NE(cookie_with("HTTPS").find("; Secure"), std::string::npos);
  EXPECT_EQ(cookie_with("http").find("Secure"), std::string::npos)
      << "the trusted proxy reached over plain HTTP";
  // HSTS goes with it: only to a client that came over TLS (RFC 6797 8.1).
  auto hsts = [&](const std::string& proto) {
    return post("/v1/auth/login", {{"email", "tls@example.com"}, {"password", "a good passphrase"}},
                {{"X-Forwarded-Proto", proto}})
        .header("strict-transport-security");
  };
  EXPECT_EQ(hsts("https"), "max-age=31536000");
  EXPECT_EQ(hsts("http"), "");
}

TEST_F(IdentityE2E, MeShowsUserOrgRoleAndScopes) {
  signup("me@example.com");
  auto l = login("me@example.com");
  auto me = http_request(port(), "GET", "/v1/me", "", {{"Cookie", l.cookie}});
  ASSERT_EQ(me.status, 200) << me.body;
  EXPECT_EQ(me.json()["user"]["email"], "me@example.com");
  EXPECT_EQ(me.json()["role"], "owner");
  EXPECT_EQ(me.json()["current_org_id"], l.body["current_org_id"]);
  auto scopes = me.json()["scopes"];
  EXPECT_NE(std::find(scopes.begin(), scopes.end(), "tokens:write"), scopes.end());
  EXPECT_EQ(me.header("cache-control"), "no-store");
}

TEST_F(IdentityE2E, NoOrBadCredentialsAre401) {
  EXPECT_EQ(http_request(port(), "GET", "/v1/me").status, 401);
  EXPECT_EQ(http_request(port(), "GET", "/v1/me", "",
                         {{"Cookie", "gpurent_session=" + std::string(64, 'f')}})
                .status,
            401);
  EXPECT_EQ(http_request(port(), "GET", "/v1/me", "", {{"Cookie", "gpurent_session=short"}}).status,
            401);
  auto r = http_request(port(), "GET", "/v1/me");
  EXPECT_EQ(r.json()["error"]["code"], "unauthenticated");
}

TEST_F(IdentityE2E, WrongPasswordAndUnknownEmailLookAlike) {
  signup("who@example.com");
  auto wrong =
      post("/v1/auth/login", {{"email", "who@example.com"}, {"password", "not the passphrase"}});
  auto unknown =
      post("/v1/auth/login", {{"email", "nobody@example.com"}, {"password", "not the passphrase"}});
  EXPECT_EQ(wrong.status, 401);
  EXPECT_EQ(unknown.status, 401);
  EXPECT_EQ(wrong.json()["error"]["message"], unknown.json()["error"]["message"]);
  EXPECT_TRUE(wrong.header("set-cookie").empty());
}

TEST_F(IdentityE2E, UnsafeCookieRequestsNeedTheCsrfToken) {
  signup("csrf@example.com");
  auto l = login("csrf@example.com");
  auto without = http_request(port(), "POST", "/v1/auth/logout", "", {{"Cookie", l.cookie}});
  EXPECT_EQ(without.status, 403);
  EXPECT_EQ(without.json()["error"]["code"], "forbidden");
  auto wrong = http_request(port(), "POST", "/v1/auth/logout", "",
                            {{"Cookie", l.cookie}, {"X-CSRF-Token", std::string(64, '0')}});
  EXPECT_EQ(wrong.status, 403);
  // The session is still alive after refused attempts.
  EXPECT_EQ(http_request(port(), "GET", "/v1/me", "", {{"Cookie", l.cookie}}).status, 200);
}

// The panel, reloaded, has only its cookie: GET /v1/me gives the session's CSRF token back,
// and only to the session (an API token has none to give).
TEST_F(IdentityE2E, AReloadedPanelReadsItsCsrfTokenFromMe) {
  signup("reload@example.com");
  auto l = login("reload@example.com");
  auto me = http_request(port(), "GET", "/v1/me", "", {{"Cookie", l.cookie}});
  ASSERT_EQ(me.status, 200);
  ASSERT_EQ(me.json().value("csrf_token", ""), l.csrf);
  auto out = http_request(port(), "POST", "/v1/auth/logout", "",
                          {{"Cookie", l.cookie}, {"X-CSRF-Token", me.json()["csrf_token"]}});
  EXPECT_EQ(out.status, 204);
  auto other = login("reload@example.com");
  EXPECT_NE(other.csrf, l.csrf);  // each session its own
}

TEST_F(IdentityE2E, LogoutEndsTheSessionAtOnce) {
  signup("bye@example.com");
  auto l = login("bye@example.com");
  auto out = http_request(port(), "POST", "/v1/auth/logout", "",
                          {{"Cookie", l.cookie}, {"X-CSRF-Token", l.csrf}});
  EXPECT_EQ(out.status, 204);
  EXPECT_NE(out.header("set-cookie").find("Max-Age=0"), std::string::npos);
  EXPECT_EQ(http_request(port(), "GET", "/v1/me", "", {{"Cookie", l.cookie}}).status, 401);
}

TEST_F(IdentityE2E, SwitchingToAnotherTenantsOrgIs404) {
  signup("one@example.com", "One");
  signup("two@example.com", "Two");
  auto one = login("one@example.com");
  auto two = login("two@example.com");
  auto r = post("/v1/session/org", {{"org_id", two.body["current_org_id"]}},
                {{"Cookie", one.cookie}, {"X-CSRF-Token", one.csrf}});
  EXPECT_EQ(r.status, 404);
  EXPECT_EQ(r.json()["error"]["code"], "not_found");
  auto own = post("/v1/session/org", {{"org_id", one.body["current_org_id"]}},
                  {{"Cookie", one.cookie}, {"X-CSRF-Token", one.csrf}});
  EXPECT_EQ(own.status, 200) << own.body;
  auto me = http_request(port(), "GET", "/v1/me", "", {{"Cookie", one.cookie}});
  EXPECT_EQ(me.json()["current_org_id"], one.body["current_org_id"]);
}

TEST_F(IdentityE2E, HostileSignupInputIs400NamingTheField) {
  struct Case {
    nlohmann::json body;
    std::string field;
  };
  std::vector<Case> cases = {
      {{{"password", "a good passphrase"}, {"org_name", "X"}}, "email"},
      {{{"email", 42}, {"password", "a good passphrase"}, {"org_name", "X"}}, "email"},
      {{{"email", "not-an-email"}, {"password", "a good passphrase"}, {"org_name", "X"}}, "email"},
      {{{"email", "x@y.io' OR 1=1 --"}, {"password", "a good passphrase"}, {"org_name", "X"}},
       "email"},
      {{{"email", std::string(300, 'a') + "@x.io"},
        {"password", "a good passphrase"},
        {"org_name", "X"}},
       "email"},
      {{{"email", "a@b.io"}, {"password", "short"}, {"org_name", "X"}}, "password"},
      {{{"email", "a@b.io"}, {"password", nullptr}, {"org_name", "X"}}, "password"},
      {{{"email", "a@b.io"}, {"password", "a good passphrase"}, {"org_name", ""}}, "org_name"},
      {{{"email", "a@b.io"}, {"password", "a good passphrase"}, {"org_name", "bad\nname"}},
       "org_name"},
      {{{"email", "a@b.io"},
        {"password", "a good passphrase"},
        {"org_name", std::string(5000, 'x')}},
       "org_name"},
      {{{"email", "a@b.io"}, {"password", "a good passphrase"}, {"org_name", {1, 2}}}, "org_name"},
      {{{"email", "a@b.io"},
        {"password", "a good passphrase"},
        {"org_name", "X"},
        {"is_platform_admin", true}},
       "is_platform_admin"},
  };
  for (const auto& c : cases) {
    auto r = post("/v1/auth/signup", c.body);
    EXPECT_EQ(r.status, 400) << c.body.dump() << " → " << r.body;
    EXPECT_EQ(r.json()["error"]["details"]["field"], c.field) << c.body.dump();
  }
  // Unicode is fine where text is allowed.
  auto ok = post("/v1/auth/signup", {{"email", "uni@example.com"},
                                     {"password", "пароль-достаточно-длинный"},
                                     {"org_name", "Лаборатория ГПУ 🚀"}});
  EXPECT_EQ(ok.status, 201) << ok.body;
  EXPECT_EQ(ok.json()["org"]["name"], "Лаборатория ГПУ 🚀");
}

TEST_F(IdentityE2E, NoSecretEverReachesTheLogs) {
  auto signed_up = post(
      "/v1/auth/signup",
      {{"email", "secret@example.com"}, {"password", "a good passphrase"}, {"org_name", "Acme"}});
  ASSERT_EQ(signed_up.status, 201) << signed_up.body;
  auto logged_in =
      post("/v1/auth/login", {{"email", "secret@example.com"}, {"password", "a good passphrase"}});
  ASSERT_EQ(logged_in.status, 200) << logged_in.body;
  std::string set_cookie = logged_in.header("set-cookie");
  Login l{set_cookie.substr(0, set_cookie.find(';')), logged_in.json().value("csrf_token", ""),
          logged_in.json()};
  auto me = http_request(port(), "GET", "/v1/me", "", {{"Cookie", l.cookie}});
  EXPECT_EQ(me.status, 200);
  auto wrong = post("/v1/auth/login",
                    {{"email", "secret@example.com"}, {"password", "wrong-password-marker"}});
  EXPECT_EQ(wrong.status, 401);
  auto logout = http_request(port(), "POST", "/v1/auth/logout", "",
                             {{"Cookie", l.cookie}, {"X-CSRF-Token", l.csrf}});
  EXPECT_EQ(logout.status, 204);
  // Scanned only once the log holds the access line of every request that carried a secret,
  // so an empty or cut-short log cannot pass.
  std::vector<Sent> sent = {{"POST", "/v1/auth/signup", signed_up},
                            {"POST", "/v1/auth/login", logged_in},
                            {"GET", "/v1/me", me},
                            {"POST", "/v1/auth/login", wrong},
                            {"POST", "/v1/auth/logout", logout}};
  ASSERT_TRUE(wait_for([&] { return access_lines_logged(server_->logs(), sent); }))
      << server_->logs();
  std::string logs = server_->logs();
  std::string session_value = l.cookie.substr(l.cookie.find('=') + 1);
  ASSERT_FALSE(session_value.empty());
  ASSERT_FALSE(l.csrf.empty());
  EXPECT_EQ(logs.find("a good passphrase"), std::string::npos);
  EXPECT_EQ(logs.find("wrong-password-marker"), std::string::npos);
  EXPECT_EQ(logs.find(session_value), std::string::npos);
  EXPECT_EQ(logs.find(l.csrf), std::string::npos);
  EXPECT_EQ(logs.find("scrypt$"), std::string::npos);
}

TEST(IdentitySignupSwitch, DisabledSignupIs403AndWritesNothing) {
  TestDatabase db;
  ServerProcess server({.database_url = db.url(), .flags = {"--signup_enabled=false"}});
  auto r = http_request(
      server.port(), "POST", "/v1/auth/signup",
      R"({"email":"x@example.com","password":"a good passphrase","org_name":"X"})", kJson);
  EXPECT_EQ(r.status, 403);
  EXPECT_EQ(r.json()["error"]["code"], "forbidden") << r.body;
  for (const char* table : {"users", "orgs", "memberships", "sessions"}) {
    EXPECT_EQ(count_rows(db.url(), std::string("SELECT count(*) FROM ") + table), 0) << table;
  }
}

TEST(AdminCommand, CreatesAPlatformAdminWhoCanLogIn) {
  TestDatabase db;
  std::string cmd = std::string("DATABASE_URL='") + db.url() + "' " + gpurentd_path() +
                    " admin create --email root@example.com --log_format=json 2>/dev/null";
  FILE* out = popen(cmd.c_str(), "r");
  ASSERT_NE(out, nullptr);
  std::string text;
  char buf[256];
  while (fgets(buf, sizeof buf, out)) text += buf;
  ASSERT_EQ(pclose(out), 0) << text;
  auto at = text.find("password: ");
  ASSERT_NE(at, std::string::npos) << text;
  std::string password = text.substr(at + 10, text.find('\n', at) - at - 10);
  EXPECT_GE(password.size(), 20u);

  ServerProcess server({.database_url = db.url()});
  auto r = http_request(
      server.port(), "POST", "/v1/auth/login",
      nlohmann::json{{"email", "root@example.com"}, {"password", password}}.dump(), kJson);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.json()["user"]["is_platform_admin"], true);
  // A second admin with the same email is refused.
  FILE* again = popen(cmd.c_str(), "r");
  while (fgets(buf, sizeof buf, again)) {
  }
  EXPECT_NE(pclose(again), 0);
}

}  // namespace gpurent::testing::identity_e2e
