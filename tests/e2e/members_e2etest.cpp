// /v1/members end to end: adding by email, roles and scopes, leaving, removal ending access
// at once, tenant isolation, the last owner, hostile input and API tokens.
#include "tests/support/http_client.h"
#include "tests/support/pg_harness.h"
#include "tests/support/server_process.h"

#include <gtest/gtest.h>

#include <pqxx/pqxx>

namespace gpurent::testing::members_e2e {

using Headers = std::map<std::string, std::string>;

struct Login {
  std::string cookie;  // "gpurent_session=…"
  std::string csrf;
  std::string user_id;
  std::string org_id;  // the org the session acts for
  std::string email;
};

class MembersE2E : public ::testing::Test {
 protected:
  void SetUp() override {
    server_ = std::make_unique<ServerProcess>(ServerOptions{.database_url = db_.url()});
  }
  int port() { return server_->port(); }

  HttpResult send(const std::string& method, const std::string& path, const std::string& body,
                  Headers headers) {
    if (!body.empty()) headers.emplace("Content-Type", "application/json");
    return http_request(port(), method, path, body, headers);
  }
  HttpResult post(const std::string& path, const nlohmann::json& body, Headers headers = {}) {
    return send("POST", path, body.dump(), std::move(headers));
  }
  static Headers session(const Login& l) {
    return {{"Cookie", l.cookie}, {"X-CSRF-Token", l.csrf}};
  }

  Login login(const std::string& email) {
    auto r = post("/v1/auth/login", {{"email", email}, {"password", "a good passphrase"}});
    EXPECT_EQ(r.status, 200) << r.body;
    std::string set_cookie = r.header("set-cookie");
    return {set_cookie.substr(0, set_cookie.find(';')), r.json().value("csrf_token", ""),
            r.json()["user"].value("id", ""), r.json().value("current_org_id", ""), email};
  }
  // Signs up (with an org of their own) and logs in.
  Login account(const std::string& email, const std::string& org = "Acme") {
    auto s = post("/v1/auth/signup",
                  {{"email", email}, {"password", "a good passphrase"}, {"org_name", org}});
    EXPECT_EQ(s.status, 201) << s.body;
    Login l = login(email);
    EXPECT_EQ(l.org_id, s.json()["org"]["id"]);
    return l;
  }
  HttpResult switch_org(Login& l, const std::string& org_id) {
    auto r = post("/v1/session/org", {{"org_id", org_id}}, session(l));
    if (r.status == 200) l.org_id = org_id;
    return r;
  }

  HttpResult list(const Login& l) {
    return http_request(port(), "GET", "/v1/members", "", {{"Cookie", l.cookie}});
  }
  HttpResult add(const Login& l, const std::string& email, const std::string& role) {
    return post("/v1/members", {{"email", email}, {"role", role}}, session(l));
  }
  HttpResult patch(const Login& l, const std::string& user_id, const nlohmann::json& body) {
    return send("PATCH", "/v1/members/" + user_id, body.dump(), session(l));
  }
  HttpResult remove(const Login& l, const std::string& user_id) {
    return send("DELETE", "/v1/members/" + user_id, "", session(l));
  }

  // A new user added to `owner`'s org by the owner with `role`, acting for that org.
  Login member_of(const Login& owner, const std::string& role, const std::string& email) {
    Login l = account(email, "Own org");
    auto r = add(owner, email, role);
    EXPECT_EQ(r.status, 201) << r.body;
    auto s = switch_org(l, owner.org_id);
    EXPECT_EQ(s.status, 200) << s.body;
    EXPECT_EQ(s.json()["role"], role);
    return l;
  }

  std::string role_in_db(const std::string& org_id, const std::string& user_id) {
    pqxx::connection c(db_.url());
    pqxx::nontransaction tx(c);
    auto rows = tx.exec_params("SELECT role FROM memberships WHERE org_id = $1 AND user_id = $2",
                               org_id, user_id);
    return rows.empty() ? "" : rows[0][0].as<std::string>();
  }

  TestDatabase db_;
  std::unique_ptr<ServerProcess> server_;
};

TEST_F(MembersE2E, OwnerAddsAViewerWhoSeesTheListCannotChangeItAndCanLeave) {
  Login owner = account("owner@example.com", "Acme");
  account("viewer@example.com", "Viewer Co");

  auto added = add(owner, "  VIEWER@Example.com ", "viewer");
  ASSERT_EQ(added.status, 201) << added.body;
  auto m = added.json();
  EXPECT_EQ(m["email"], "viewer@example.com");
  EXPECT_EQ(m["role"], "viewer");
  EXPECT_EQ(m["user_id"].get<std::string>().rfind("usr_", 0), 0u);
  EXPECT_EQ(m["joined_at"].get<std::string>().size(), 20u);
  EXPECT_EQ(m.size(), 4u) << m;

  Login viewer = login("viewer@example.com");
  auto sw = switch_org(viewer, owner.org_id);
  ASSERT_EQ(sw.status, 200) << sw.body;
  EXPECT_EQ(sw.json()["role"], "viewer");

  auto l = list(viewer);
  ASSERT_EQ(l.status, 200) << l.body;
  ASSERT_EQ(l.json()["items"].size(), 2u);
  EXPECT_TRUE(l.json()["next_cursor"].is_null());
  EXPECT_EQ(l.json()["items"][0]["user_id"], owner.user_id);
  EXPECT_EQ(l.json()["items"][0]["role"], "owner");
  EXPECT_EQ(l.json()["items"][1]["user_id"], viewer.user_id);

  account("third@example.com", "Third");
  EXPECT_EQ(add(viewer, "third@example.com", "viewer").status, 403);
  EXPECT_EQ(patch(viewer, owner.user_id, {{"role", "viewer"}}).status, 403);
  EXPECT_EQ(patch(viewer, viewer.user_id, {{"role", "owner"}}).status, 403);
  auto forbidden = remove(viewer, owner.user_id);
  EXPECT_EQ(forbidden.status, 403);
  EXPECT_EQ(forbidden.json()["error"]["code"], "forbidden");
  EXPECT_EQ(role_in_db(owner.org_id, owner.user_id), "owner");

  // Leaving needs no permission.
  auto left = remove(viewer, viewer.user_id);
  EXPECT_EQ(left.status, 204) << left.body;
  EXPECT_EQ(list(viewer).status, 403);
  EXPECT_EQ(list(owner).json()["items"].size(), 1u);
}

TEST_F(MembersE2E, APersonSeesTheirOrgsAndWhichOneTheSessionActsFor) {
  Login owner = account("owner@example.com", "Acme");
  Login viewer = member_of(owner, "viewer", "viewer@example.com");  // acts for Acme now
  auto orgs = [&](const Login& l) {
    return http_request(port(), "GET", "/v1/me/orgs", "", {{"Cookie", l.cookie}});
  };
  auto r = orgs(viewer);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.header("cache-control"), "no-store");
  auto items = r.json()["items"];
  ASSERT_EQ(items.size(), 2u) << items;
  EXPECT_TRUE(r.json()["next_cursor"].is_null());
  std::map<std::string, nlohmann::json> by_name;
  for (const auto& o : items) by_name[o["name"]] = o;
  EXPECT_EQ(by_name["Own org"]["role"], "owner");
  EXPECT_EQ(by_name["Own org"]["current"], false);
  EXPECT_EQ(by_name["Acme"]["id"], owner.org_id);
  EXPECT_EQ(by_name["Acme"]["role"], "viewer");
  EXPECT_EQ(by_name["Acme"]["current"], true);

  // Switching moves `current`; the owner, in one org, sees only that one.
  ASSERT_EQ(switch_org(viewer, by_name["Own org"]["id"]).status, 200);
  auto after = orgs(viewer).json();
  for (const auto& o : after["items"]) EXPECT_EQ(o["current"], o["name"] == "Own org");
  ASSERT_EQ(orgs(owner).json()["items"].size(), 1u);

  // An API token acts for one org: a person's other orgs are not its business.
  auto token =
      post("/v1/api-tokens", {{"name", "ci"}, {"scopes", {"rentals:read"}}}, session(owner));
  ASSERT_EQ(token.status, 201) << token.body;
  auto refused =
      http_request(port(), "GET", "/v1/me/orgs", "",
                   {{"Authorization", "Bearer " + token.json()["token"].get<std::string>()}});
  EXPECT_EQ(refused.status, 403) << refused.body;
  EXPECT_EQ(http_request(port(), "GET", "/v1/me/orgs").status, 401);
}

TEST_F(MembersE2E, RoleEndpointMatrix) {
  Login owner = account("owner@example.com");
  struct Expect {
    std::string role;
    bool manages;  // members:write
  };
  int n = 0;
  for (const Expect& e : {Expect{"owner", true}, Expect{"admin", true}, Expect{"member", false},
                          Expect{"billing", false}, Expect{"viewer", false}}) {
    SCOPED_TRACE(e.role);
    auto tag = e.role + std::to_string(n++);
    Login actor = member_of(owner, e.role, "actor-" + tag + "@example.com");
    Login target = member_of(owner, "member", "target-" + tag + "@example.com");
    account("new-" + tag + "@example.com", "New");

    EXPECT_EQ(list(actor).status, 200);
    EXPECT_EQ(add(actor, "new-" + tag + "@example.com", "viewer").status, e.manages ? 201 : 403);
    EXPECT_EQ(patch(actor, target.user_id, {{"role", "billing"}}).status, e.manages ? 200 : 403);
    EXPECT_EQ(role_in_db(owner.org_id, target.user_id), e.manages ? "billing" : "member");
    EXPECT_EQ(remove(actor, target.user_id).status, e.manages ? 204 : 403);
    EXPECT_EQ(role_in_db(owner.org_id, target.user_id), e.manages ? "" : "member");
  }

  // Admins manage everyone but owners; only an owner grants or touches "owner".
  Login admin = member_of(owner, "admin", "admin@example.com");
  Login other = member_of(owner, "member", "other@example.com");
  account("fresh@example.com", "Fresh");
  EXPECT_EQ(add(admin, "fresh@example.com", "owner").status, 403);
  EXPECT_EQ(patch(admin, other.user_id, {{"role", "owner"}}).status, 403);
  EXPECT_EQ(patch(admin, owner.user_id, {{"role", "admin"}}).status, 403);
  EXPECT_EQ(remove(admin, owner.user_id).status, 403);
  EXPECT_EQ(role_in_db(owner.org_id, owner.user_id), "owner");
  EXPECT_EQ(role_in_db(owner.org_id, other.user_id), "member");
  EXPECT_EQ(role_in_db(owner.org_id, "fresh"), "");

  auto promoted = patch(owner, other.user_id, {{"role", "owner"}});
  EXPECT_EQ(promoted.status, 200) << promoted.body;
  EXPECT_EQ(promoted.json()["role"], "owner");
  EXPECT_EQ(add(owner, "fresh@example.com", "owner").status, 201);
}

TEST_F(MembersE2E, LastOwnerCanBeNeitherRemovedNorDemoted) {
  Login owner = account("owner@example.com");
  auto r = remove(owner, owner.user_id);
  EXPECT_EQ(r.status, 409) << r.body;
  EXPECT_EQ(r.json()["error"]["code"], "conflict");
  EXPECT_EQ(r.json()["error"]["details"]["reason"], "last_owner");
  auto p = patch(owner, owner.user_id, {{"role", "admin"}});
  EXPECT_EQ(p.status, 409) << p.body;
  EXPECT_EQ(p.json()["error"]["details"]["reason"], "last_owner");
  EXPECT_EQ(role_in_db(owner.org_id, owner.user_id), "owner");

  // With a second owner, the first may step down.
  Login second = member_of(owner, "owner", "second@example.com");
  EXPECT_EQ(patch(owner, owner.user_id, {{"role", "admin"}}).status, 200);
  EXPECT_EQ(remove(second, second.user_id).status, 409);
}

TEST_F(MembersE2E, RemovalEndsAccessAtOnce) {
  Login owner = account("owner@example.com");
  Login member = member_of(owner, "member", "member@example.com");
  EXPECT_EQ(list(member).status, 200);
  EXPECT_EQ(remove(owner, member.user_id).status, 204);
  auto after = list(member);
  EXPECT_EQ(after.status, 403) << after.body;
  EXPECT_EQ(switch_org(member, owner.org_id).status, 404);
  EXPECT_EQ(remove(owner, member.user_id).status, 404) << "already gone";
}

TEST_F(MembersE2E, AnotherOrgsOwnerGets404AndChangesNothing) {
  Login owner = account("owner@example.com", "One");
  Login member = member_of(owner, "member", "member@example.com");
  Login stranger = account("stranger@example.com", "Two");
  for (const auto& id : {owner.user_id, member.user_id}) {
    auto p = patch(stranger, id, {{"role", "viewer"}});
    EXPECT_EQ(p.status, 404) << p.body;
    EXPECT_EQ(p.json()["error"]["code"], "not_found");
    EXPECT_EQ(remove(stranger, id).status, 404);
  }
  for (std::string bad : {"usr_nope", "key_0123456789012345678901", "%27%3B--", "x"}) {
    EXPECT_EQ(remove(stranger, bad).status, 404) << bad;
    EXPECT_EQ(patch(stranger, bad, {{"role", "viewer"}}).status, 404) << bad;
  }
  EXPECT_EQ(role_in_db(owner.org_id, owner.user_id), "owner");
  EXPECT_EQ(role_in_db(owner.org_id, member.user_id), "member");
  auto theirs = list(stranger).json()["items"];
  ASSERT_EQ(theirs.size(), 1u);
  EXPECT_EQ(theirs[0]["user_id"], stranger.user_id);
}

TEST_F(MembersE2E, UnknownEmailIs404AndExistingMemberIs409) {
  Login owner = account("owner@example.com");
  auto r = add(owner, "nobody@example.com", "member");
  EXPECT_EQ(r.status, 404) << r.body;
  EXPECT_EQ(r.json()["error"]["code"], "not_found");
  EXPECT_EQ(add(owner, "OWNER@example.com", "member").status, 409);
}

TEST_F(MembersE2E, HostileInputIs400NamingTheField) {
  Login owner = account("owner@example.com");
  Login target = member_of(owner, "member", "target@example.com");
  std::string huge(100000, 'a');
  struct Case {
    nlohmann::json body;
    std::string field;
  };
  std::vector<Case> post_cases = {
      {nlohmann::json::object(), "email"},
      {{{"role", "viewer"}}, "email"},
      {{{"email", "target@example.com"}}, "role"},
      {{{"email", 5}, {"role", "viewer"}}, "email"},
      {{{"email", nullptr}, {"role", "viewer"}}, "email"},
      {{{"email", {"a@b.co"}}, {"role", "viewer"}}, "email"},
      {{{"email", "target@example.com"}, {"role", 1}}, "role"},
      {{{"email", "target@example.com"}, {"role", true}}, "role"},
      {{{"email", "target@example.com"}, {"role", {{"x", 1}}}}, "role"},
      {{{"email", "target@example.com"}, {"role", "Owner"}}, "role"},
      {{{"email", "target@example.com"}, {"role", "ownér"}}, "role"},
      {{{"email", "target@example.com"}, {"role", "owner' OR '1'='1"}}, "role"},
      {{{"email", "target@example.com"}, {"role", huge}}, "role"},
      {{{"email", huge + "@example.com"}, {"role", "viewer"}}, "email"},
      {{{"email", "'; DROP TABLE users; --"}, {"role", "viewer"}}, "email"},
      {{{"email", "no-at-sign"}, {"role", "viewer"}}, "email"},
      {{{"email", "target@example.com"}, {"role", "viewer"}, {"admin", true}}, "admin"},
  };
  for (const auto& c : post_cases) {
    auto r = post("/v1/members", c.body, session(owner));
    EXPECT_EQ(r.status, 400) << c.body.dump().substr(0, 200) << " " << r.body.substr(0, 300);
    EXPECT_EQ(r.json()["error"]["code"], "invalid_request") << r.body.substr(0, 300);
    EXPECT_EQ(r.json()["error"]["details"]["field"], c.field) << c.body.dump().substr(0, 200);
  }
  std::vector<Case> patch_cases = {
      {nlohmann::json::object(), "role"},
      {{{"role", 3}}, "role"},
      {{{"role", nullptr}}, "role"},
      {{{"role", "root"}}, "role"},
      {{{"role", "виewer"}}, "role"},
      {{{"role", huge}}, "role"},
      {{{"role", "viewer"}, {"email", "x@y.z"}}, "email"},
  };
  for (const auto& c : patch_cases) {
    auto r = patch(owner, target.user_id, c.body);
    EXPECT_EQ(r.status, 400) << c.body.dump().substr(0, 200) << " " << r.body.substr(0, 300);
    EXPECT_EQ(r.json()["error"]["details"]["field"], c.field) << c.body.dump().substr(0, 200);
  }
  // Not JSON objects at all, or emails that are well-formed but belong to nobody: 4xx, never 5xx.
  for (const std::string& raw : {std::string("[]"), std::string("\"x\""), std::string("{"),
                                 std::string("null"), std::string("{\"email\":")}) {
    auto r = send("POST", "/v1/members", raw, session(owner));
    EXPECT_EQ(r.status, 400) << raw << " " << r.body;
    EXPECT_EQ(send("PATCH", "/v1/members/" + target.user_id, raw, session(owner)).status, 400);
  }
  for (std::string email : {"ünï@exämple.com", "o'hara@example.com", "x%@example.com",
                            "\xF0\x9F\x98\x80@example.com"}) {
    auto r = add(owner, email, "viewer");
    EXPECT_EQ(r.status / 100, 4) << email << " " << r.body;
  }
  EXPECT_EQ(role_in_db(owner.org_id, target.user_id), "member");
  EXPECT_EQ(list(owner).json()["items"].size(), 2u);
}

TEST_F(MembersE2E, ApiTokensNeedMembersWrite) {
  Login owner = account("owner@example.com");
  account("a@example.com", "A");
  account("b@example.com", "B");
  auto token = [&](const std::vector<std::string>& scopes) {
    auto r = post("/v1/api-tokens", {{"name", "ci"}, {"scopes", scopes}}, session(owner));
    EXPECT_EQ(r.status, 201) << r.body;
    return Headers{{"Authorization", "Bearer " + r.json().value("token", "")}};
  };
  auto with = token({"members:write"});
  auto without = token({"rentals:read"});
  auto ok = post("/v1/members", {{"email", "a@example.com"}, {"role", "member"}}, with);
  EXPECT_EQ(ok.status, 201) << ok.body;
  auto no = post("/v1/members", {{"email", "b@example.com"}, {"role", "member"}}, without);
  EXPECT_EQ(no.status, 403) << no.body;
  EXPECT_EQ(http_request(port(), "GET", "/v1/members", "", without).status, 200);
  EXPECT_EQ(list(owner).json()["items"].size(), 2u);
}

}  // namespace gpurent::testing::members_e2e
