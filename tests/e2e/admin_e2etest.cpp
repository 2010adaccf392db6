// Platform administration and audit end to end: the admin gate (sessions, `admin`-scoped
// tokens, demotion), the cross-tenant and per-org audit logs with every filter and paging,
// org guardrails set and cleared, and hostile input answered with 400 naming the field.
#include "tests/support/api_fixture.h"

#include <gtest/gtest.h>

#include <pqxx/pqxx>

#include <set>

namespace gpurent::testing::admin_e2e {

using nlohmann::json;

class AdminE2E : public ApiTest {
 protected:
  HttpResult patch_org(const Headers& h, const std::string& org_id, const json& body) {
    return send("PATCH", "/v1/admin/orgs/" + org_id, body.dump(), h);
  }
  std::string clock_now() { return get("/v1/admin/test-clock", {}).json()["now"]; }
  void advance_clock(int seconds) {
    auto r = post("/v1/admin/test-clock", {{"advance_seconds", seconds}});
    ASSERT_EQ(r.status, 200) << r.body;
  }

  static std::vector<long long> ids(const json& items) {
    std::vector<long long> out;
    for (const auto& i : items) out.push_back(i["id"].get<long long>());
    return out;
  }
  static std::set<std::string> values(const json& items, const std::string& key) {
    std::set<std::string> out;
    for (const auto& i : items) out.insert(i[key].is_null() ? "<null>" : i[key].get<std::string>());
    return out;
  }
};

TEST_F(AdminE2E, AdminReadsTheCrossTenantAuditLogWithEachFilter) {
  Login admin = platform_admin();
  Login alice = account("alice@example.com", "Alpha");
  Login bob = account("bob@example.com", "Beta");
  auto made = post("/v1/api-tokens", {{"name", "a1"}, {"scopes", {"rentals:read"}}}, [&] {
    Headers h = session(alice);
    h["X-Request-Id"] = "audit-trace-1";
    return h;
  }());
  ASSERT_EQ(made.status, 201) << made.body;
  token(session(bob), {"rentals:read"});
  advance_clock(3600);
  std::string t1 = clock_now();
  token(session(alice), {"rentals:read"});
  Headers h = session(admin);

  auto all = get("/v1/admin/audit", h);
  ASSERT_EQ(all.status, 200) << all.body;
  auto items = all.json()["items"];
  EXPECT_TRUE(all.json()["next_cursor"].is_null());
  auto all_ids = ids(items);
  EXPECT_TRUE(std::is_sorted(all_ids.rbegin(), all_ids.rend())) << "newest first";
  EXPECT_TRUE(values(items, "org_id").count(alice.org_id));
  EXPECT_TRUE(values(items, "org_id").count(bob.org_id));
  EXPECT_TRUE(values(items, "org_id").count(admin.org_id));
  // Every field of a row, with the request id of the request that wrote it.
  json traced;
  for (const auto& i : items) {
    if (i["request_id"] == "audit-trace-1") traced = i;
  }
  ASSERT_FALSE(traced.is_null()) << items;
  EXPECT_EQ(traced["action"], "token.create");
  EXPECT_EQ(traced["org_id"], alice.org_id);
  EXPECT_EQ(traced["actor_user_id"], alice.user_id);
  EXPECT_TRUE(traced["actor_token_id"].is_null());
  EXPECT_EQ(traced["target"], made.json()["id"]);
  EXPECT_EQ(traced["ip"], "127.0.0.1");
  EXPECT_EQ(traced["details"]["name"], "a1");
  EXPECT_EQ(traced["at"].get<std::string>().size(), 20u);
  EXPECT_EQ(traced.size(), 10u) << traced;

  auto by_org = get("/v1/admin/audit?org_id=" + alice.org_id, h).json()["items"];
  EXPECT_EQ(values(by_org, "org_id"), std::set<std::string>{alice.org_id});
  EXPECT_EQ(by_org.size(), 4u) << by_org;  // signup, login, two tokens

  auto by_action = get("/v1/admin/audit?action=token.create", h).json()["items"];
  EXPECT_EQ(values(by_action, "action"), std::set<std::string>{"token.create"});
  EXPECT_EQ(by_action.size(), 3u);

  auto by_actor = get("/v1/admin/audit?actor_user_id=" + bob.user_id, h).json()["items"];
  EXPECT_EQ(values(by_actor, "actor_user_id"), std::set<std::string>{bob.user_id});
  EXPECT_EQ(values(by_actor, "action"),
            (std::set<std::string>{"user.signup", "user.login", "token.create"}));

  auto since = get("/v1/admin/audit?since=" + t1, h).json()["items"];
  ASSERT_EQ(since.size(), 1u) << since;
  EXPECT_EQ(since[0]["org_id"], alice.org_id);
  EXPECT_GE(since[0]["at"].get<std::string>(), t1);
  auto until = get("/v1/admin/audit?until=" + t1, h).json()["items"];
  EXPECT_EQ(until.size(), items.size() - 1);
  for (const auto& i : until) EXPECT_LT(i["at"].get<std::string>(), t1);

  auto combined = get("/v1/admin/audit?org_id=" + alice.org_id +
                          "&action=token.create&actor_user_id=" + alice.user_id + "&until=" + t1,
                      h);
  ASSERT_EQ(combined.status, 200) << combined.body;
  ASSERT_EQ(combined.json()["items"].size(), 1u);
  EXPECT_EQ(combined.json()["items"][0]["request_id"], "audit-trace-1");
  EXPECT_TRUE(get("/v1/admin/audit?org_id=org_0123456789012345678901", h).json()["items"].empty());

  // Paging: the same rows, each once, whatever the page size; filters hold on every page.
  for (int limit : {1, 2, 3, 500}) {
    SCOPED_TRACE(limit);
    EXPECT_EQ(ids(walk("/v1/admin/audit", h, limit)), all_ids);
  }
  EXPECT_EQ(ids(walk("/v1/admin/audit?org_id=" + alice.org_id, h, 1)), ids(by_org));
}

TEST_F(AdminE2E, EveryAdminRouteIs403ForNonAdminsAnd401ForStrangers) {
  Login owner = account("owner@example.com", "Alpha");
  auto [tok_id, owner_token] =
      token(session(owner), {"rentals:read", "rentals:write", "billing:read", "ssh-keys:write",
                             "members:write", "tokens:write"});
  struct Call {
    std::string method, path, body;
  };
  std::vector<Call> calls = {
      {"GET", "/v1/admin/orgs", ""},
      {"GET", "/v1/admin/orgs/" + owner.org_id, ""},
      {"PATCH", "/v1/admin/orgs/" + owner.org_id, R"({"max_days": 1})"},
      {"GET", "/v1/admin/audit", ""},
      {"GET", "/v1/admin/audit?org_id=" + owner.org_id, ""},
      // Authorisation comes before validation: bad input does not reveal anything either.
      {"GET", "/v1/admin/audit?limit=nope", ""},
      {"PATCH", "/v1/admin/orgs/org_0123456789012345678901", R"({"max_days": -1})"},
  };
  for (const auto& c : calls) {
    SCOPED_TRACE(c.method + " " + c.path);
    auto as_owner = send(c.method, c.path, c.body, session(owner));
    EXPECT_EQ(as_owner.status, 403) << as_owner.body;
    EXPECT_EQ(as_owner.json()["error"]["code"], "forbidden");
    EXPECT_EQ(send(c.method, c.path, c.body, bearer(owner_token)).status, 403);
    auto stranger = send(c.method, c.path, c.body, {});
    EXPECT_EQ(stranger.status, 401) << stranger.body;
    EXPECT_EQ(stranger.json()["error"]["code"], "unauthenticated");
    EXPECT_EQ(send(c.method, c.path, c.body, bearer("gpr_" + std::string(64, 'a'))).status, 401);
    EXPECT_EQ(
        send(c.method, c.path, c.body, {{"Cookie", "gpurent_session=" + std::string(64, 'b')}})
            .status,
        401);
  }
  pqxx::connection c(db_.url());
  pqxx::nontransaction tx(c);
  EXPECT_EQ(tx.exec("SELECT count(*) FROM orgs WHERE max_days IS NOT NULL")[0][0].as<int>(), 0);
  EXPECT_EQ(
      tx.exec("SELECT count(*) FROM audit_log WHERE action = 'org.guardrails_set'")[0][0].as<int>(),
      0);
}

TEST_F(AdminE2E, OrgAuditIsForItsOwnersAndAdminsAndShowsOnlyThatOrg) {
  Login owner = account("owner@example.com", "Alpha");
  Login other = account("other@example.com", "Beta");
  token(session(other), {"rentals:read"});
  Login admin = member_of(owner, "admin", "admin@example.com");
  std::map<std::string, Login> others;
  for (std::string role : {"member", "billing", "viewer"}) {
    others[role] = member_of(owner, role, role + "@example.com");
  }
  token(session(owner), {"rentals:read"});

  for (const Login* reader : {&owner, &admin}) {
    auto r = get("/v1/audit", session(*reader));
    ASSERT_EQ(r.status, 200) << r.body;
    auto items = r.json()["items"];
    EXPECT_EQ(values(items, "org_id"), std::set<std::string>{owner.org_id});
    auto actions = values(items, "action");
    EXPECT_TRUE(actions.count("member.add"));
    EXPECT_TRUE(actions.count("token.create"));
    EXPECT_FALSE(values(items, "actor_user_id").count(other.user_id));
    auto page_ids = ids(items);
    EXPECT_TRUE(std::is_sorted(page_ids.rbegin(), page_ids.rend()));
    EXPECT_EQ(ids(walk("/v1/audit", session(*reader), 2)), page_ids);
  }
  auto mine = get("/v1/audit?action=member.add&actor_user_id=" + owner.user_id, session(owner));
  ASSERT_EQ(mine.status, 200) << mine.body;
  EXPECT_EQ(mine.json()["items"].size(), 4u);
  EXPECT_TRUE(
      get("/v1/audit?actor_user_id=" + other.user_id, session(owner)).json()["items"].empty());
  // Naming another org is not a filter here, whatever the org.
  auto foreign = get("/v1/audit?org_id=" + other.org_id, session(owner));
  EXPECT_EQ(foreign.status, 400);
  EXPECT_EQ(foreign.json()["error"]["details"]["field"], "org_id");

  for (const auto& [role, l] : others) {
    auto r = get("/v1/audit", session(l));
    EXPECT_EQ(r.status, 403) << role << " " << r.body;
    EXPECT_EQ(r.json()["error"]["code"], "forbidden");
  }
  EXPECT_EQ(get("/v1/audit", {}).status, 401);

  // The other org sees its own rows only.
  auto theirs = get("/v1/audit", session(other)).json()["items"];
  EXPECT_EQ(values(theirs, "org_id"), std::set<std::string>{other.org_id});

  // API tokens: the owner's role allows it, and the token needs members:write.
  auto [id_w, with] = token(session(owner), {"members:write"});
  auto [id_r, without] = token(session(owner), {"rentals:read"});
  auto ok = get("/v1/audit", bearer(with));
  EXPECT_EQ(ok.status, 200) << ok.body;
  EXPECT_EQ(values(ok.json()["items"], "org_id"), std::set<std::string>{owner.org_id});
  EXPECT_EQ(get("/v1/audit", bearer(without)).status, 403);
  auto [id_m, member_token] = token(session(others["member"]), {"rentals:read"});
  EXPECT_EQ(get("/v1/audit", bearer(member_token)).status, 403);
}

TEST_F(AdminE2E, AdminSetsAndClearsGuardrailsVisibleInGetAndInTheAuditLog) {
  Login admin = platform_admin();
  Login owner = account("owner@example.com", "Alpha");
  member_of(owner, "viewer", "viewer@example.com");
  Headers h = session(admin);

  auto before = get("/v1/admin/orgs/" + owner.org_id, h);
  ASSERT_EQ(before.status, 200) << before.body;
  EXPECT_EQ(before.json(), json({{"id", owner.org_id},
                                 {"name", "Alpha"},
                                 {"created_at", before.json()["created_at"]},
                                 {"max_concurrent_gpus", nullptr},
                                 {"max_days", nullptr},
                                 {"spend_limit_minor", nullptr},
                                 {"member_count", 2}}));

  auto set = patch_org(h, owner.org_id,
                       {{"max_concurrent_gpus", 16},
                        {"max_days", 30},
                        {"spend_limit", {{"amount_minor", 5000000}, {"currency", "RUB"}}}});
  ASSERT_EQ(set.status, 200) << set.body;
  EXPECT_EQ(set.json()["max_concurrent_gpus"], 16);
  EXPECT_EQ(set.json()["max_days"], 30);
  EXPECT_EQ(set.json()["spend_limit_minor"], 5000000);
  EXPECT_EQ(get("/v1/admin/orgs/" + owner.org_id, h).json(), set.json());
  bool listed = false;
  fund(owner.org_id, 123400);
  for (auto o : walk("/v1/admin/orgs", h, 1)) {
    if (o["id"] == owner.org_id) {
      // The list also carries each org's balances, as GET …/balance shows them.
      auto balance = get("/v1/admin/orgs/" + owner.org_id + "/balance", h);
      ASSERT_EQ(balance.status, 200) << balance.body;
      EXPECT_EQ(o["balance"], balance.json());
      EXPECT_EQ(o["balance"]["available"]["amount_minor"], 123400);
      o.erase("balance");
      EXPECT_EQ(o, set.json());
      listed = true;
    } else {
      EXPECT_EQ(o["balance"]["balance"]["amount_minor"], 0) << "an org that never had money";
    }
  }
  EXPECT_TRUE(listed);

  auto cleared = patch_org(h, owner.org_id, {{"max_days", nullptr}});
  ASSERT_EQ(cleared.status, 200) << cleared.body;
  EXPECT_TRUE(cleared.json()["max_days"].is_null());
  EXPECT_EQ(cleared.json()["max_concurrent_gpus"], 16) << "absent fields are left";
  EXPECT_EQ(cleared.json()["spend_limit_minor"], 5000000);
  auto noop = patch_org(h, owner.org_id, json::object());
  ASSERT_EQ(noop.status, 200) << noop.body;
  EXPECT_EQ(noop.json(), cleared.json());
  auto all_cleared =
      patch_org(h, owner.org_id, {{"max_concurrent_gpus", nullptr}, {"spend_limit", nullptr}});
  ASSERT_EQ(all_cleared.status, 200);
  EXPECT_EQ(all_cleared.json(), before.json());

  auto log = get("/v1/admin/audit?action=org.guardrails_set&org_id=" + owner.org_id, h);
  ASSERT_EQ(log.status, 200) << log.body;
  auto rows = log.json()["items"];
  ASSERT_EQ(rows.size(), 3u) << "the empty PATCH changed nothing and wrote nothing";
  EXPECT_EQ(rows[2]["actor_user_id"], admin.user_id);
  EXPECT_EQ(rows[2]["target"], owner.org_id);
  EXPECT_TRUE(rows[2]["details"]["before"]["max_days"].is_null());
  EXPECT_EQ(rows[2]["details"]["after"]["max_days"], 30);
  EXPECT_EQ(rows[1]["details"]["before"]["max_days"], 30);
  EXPECT_TRUE(rows[1]["details"]["after"]["max_days"].is_null());
  EXPECT_EQ(rows[1]["details"]["after"]["max_concurrent_gpus"], 16);
  EXPECT_TRUE(rows[0]["details"]["after"]["spend_limit_minor"].is_null());
  // The org's owner sees that an administrator changed its limits.
  auto theirs = get("/v1/audit?action=org.guardrails_set", session(owner));
  ASSERT_EQ(theirs.status, 200) << theirs.body;
  EXPECT_EQ(ids(theirs.json()["items"]), ids(rows));

  // Unknown and malformed ids are 404; a PATCH without the CSRF token is refused.
  for (std::string bad :
       {"org_0123456789012345678901", "org_nope", "usr_0123456789012345678901", "%27%3B--", "x"}) {
    EXPECT_EQ(get("/v1/admin/orgs/" + bad, h).status, 404) << bad;
    EXPECT_EQ(patch_org(h, bad, {{"max_days", 3}}).status, 404) << bad;
  }
  auto no_csrf = send("PATCH", "/v1/admin/orgs/" + owner.org_id, R"({"max_days": 3})",
                      {{"Cookie", admin.cookie}});
  EXPECT_EQ(no_csrf.status, 403);
  EXPECT_TRUE(get("/v1/admin/orgs/" + owner.org_id, h).json()["max_days"].is_null());
}

TEST_F(AdminE2E, HostileInputIs400NamingTheFieldNever5xx) {
  Login admin = platform_admin();
  Login owner = account("owner@example.com", "Alpha");
  Headers h = session(admin);
  std::string huge(5000, 'a');
  struct Case {
    json body;
    std::string field;
  };
  std::vector<Case> patch_cases = {
      {{{"max_concurrent_gpus", "8"}}, "max_concurrent_gpus"},
      {{{"max_concurrent_gpus", -1}}, "max_concurrent_gpus"},
      {{{"max_concurrent_gpus", 1.5}}, "max_concurrent_gpus"},
      {{{"max_concurrent_gpus", 100001}}, "max_concurrent_gpus"},
      {{{"max_concurrent_gpus", true}}, "max_concurrent_gpus"},
      {{{"max_concurrent_gpus", json::array({1})}}, "max_concurrent_gpus"},
      {{{"max_concurrent_gpus", json::parse("18446744073709551615")}}, "max_concurrent_gpus"},
      {{{"max_concurrent_gpus", json::parse("1e300")}}, "max_concurrent_gpus"},
      {{{"max_days", 0}}, "max_days"},
      {{{"max_days", -30}}, "max_days"},
      {{{"max_days", "30"}}, "max_days"},
      {{{"max_days", 3651}}, "max_days"},
      {{{"max_days", json::parse("99999999999999999999999")}}, "max_days"},
      {{{"spend_limit", 100}}, "spend_limit"},
      {{{"spend_limit", "100 RUB"}}, "spend_limit"},
      {{{"spend_limit", {{"amount_minor", -1}, {"currency", "RUB"}}}}, "spend_limit.amount_minor"},
      {{{"spend_limit", {{"amount_minor", "5"}, {"currency", "RUB"}}}}, "spend_limit.amount_minor"},
      {{{"spend_limit", {{"amount_minor", 1.5}, {"currency", "RUB"}}}}, "spend_limit.amount_minor"},
      {{{"spend_limit",
         {{"amount_minor", json::parse("9223372036854775808")}, {"currency", "RUB"}}}},
       "spend_limit.amount_minor"},
      {{{"spend_limit", {{"amount_minor", 5}}}}, "spend_limit.currency"},
      {{{"spend_limit", {{"amount_minor", 5}, {"currency", "rub"}}}}, "spend_limit.currency"},
      {{{"spend_limit", {{"amount_minor", 5}, {"currency", "RUB"}, {"x", 1}}}}, "spend_limit.x"},
      {{{"name", "renamed"}}, "name"},
      {{{"max_days", 3}, {"admin", true}}, "admin"},
      {{{"max_days", 3}, {huge, 1}}, huge},
  };
  for (const auto& c : patch_cases) {
    auto r = patch_org(h, owner.org_id, c.body);
    EXPECT_EQ(r.status, 400) << c.body.dump().substr(0, 200) << " " << r.body.substr(0, 300);
    EXPECT_EQ(r.json()["error"]["code"], "invalid_request") << r.body.substr(0, 300);
    EXPECT_EQ(r.json()["error"]["details"]["field"], c.field) << c.body.dump().substr(0, 200);
  }
  for (std::string raw : {"[]", "null", "{", "\"x\"", "3", "{\"max_days\":"}) {
    auto r = send("PATCH", "/v1/admin/orgs/" + owner.org_id, raw, h);
    EXPECT_EQ(r.status, 400) << raw << " " << r.body;
  }
  Headers text = h;
  text["Content-Type"] = "text/plain";
  EXPECT_EQ(
      http_request(port(), "PATCH", "/v1/admin/orgs/" + owner.org_id, R"({"max_days":3})", text)
          .status,
      400);
  EXPECT_EQ(send("PATCH", "/v1/admin/orgs/" + owner.org_id, "", h).status, 400);
  auto unchanged = get("/v1/admin/orgs/" + owner.org_id, h).json();
  EXPECT_TRUE(unchanged["max_days"].is_null());
  EXPECT_TRUE(unchanged["max_concurrent_gpus"].is_null());
  EXPECT_TRUE(unchanged["spend_limit_minor"].is_null());

  struct QueryCase {
    std::string query, field;
  };
  std::vector<QueryCase> audit_cases = {
      {"limit=0", "limit"},
      {"limit=501", "limit"},
      {"limit=-1", "limit"},
      {"limit=abc", "limit"},
      {"limit=1e2", "limit"},
      {"limit=", "limit"},
      {"limit=99999999999999999999", "limit"},
      {"limit=5%00", "limit"},
      {"cursor=1%00", "cursor"},
      {"cursor=abc", "cursor"},
      {"cursor=-1", "cursor"},
      {"cursor=0", "cursor"},
      {"cursor=", "cursor"},
      {"cursor=1", "cursor"},  // a row id alone: the audit cursor is "<micros>.<id>"
      {"cursor=1.0", "cursor"},
      {"cursor=1.x", "cursor"},
      {"cursor=%27%20OR%201%3D1", "cursor"},
      {"since=yesterday", "since"},
      {"since=2026-13-01T00:00:00Z", "since"},
      {"since=2026-02-29T00:00:00Z", "since"},
      {"since=2026-01-01", "since"},
      {"since=2026-01-01T00:00:00", "since"},
      {"since=2026-01-01T24:00:00Z", "since"},
      {"since=2026-01-01T00:00:60Z", "since"},
      {"since=2026-01-01T00:00:00+03:00", "since"},  // an unescaped '+' is a space
      {"since=2026-01-01T00:00:00.Z", "since"},
      {"since=%zz", "since"},
      {"until=" + huge, "until"},
      {"since=2026-02-01T00:00:00Z&until=2026-01-01T00:00:00Z", "until"},
      {"org_id=nope", "org_id"},
      {"org_id=usr_0123456789012345678901", "org_id"},
      {"org_id=%27%3B--", "org_id"},
      {"actor_user_id=org_0123456789012345678901", "actor_user_id"},
      {"action=%27%3B%20DROP%20TABLE%20audit_log%3B--", "action"},
      {"action=" + huge, "action"},
      {"action=", "action"},
      {"org_id=" + owner.org_id + "&org_id=" + admin.org_id, "org_id"},
      {"actor=x", "actor"},
      {"LIMIT=5", "LIMIT"},
  };
  for (const auto& c : audit_cases) {
    auto r = get("/v1/admin/audit?" + c.query, h);
    EXPECT_EQ(r.status, 400) << c.query.substr(0, 200) << " " << r.body.substr(0, 300);
    EXPECT_EQ(r.json()["error"]["code"], "invalid_request") << r.body.substr(0, 300);
    EXPECT_EQ(r.json()["error"]["details"]["field"], c.field.substr(0, 64))
        << c.query.substr(0, 200);
    if (c.field != "org_id") {
      auto o = get("/v1/audit?" + c.query, session(owner));
      EXPECT_EQ(o.status, 400) << c.query.substr(0, 200) << " " << o.body.substr(0, 300);
      EXPECT_EQ(o.json()["error"]["details"]["field"], c.field.substr(0, 64));
    }
  }
  for (std::string ok :
       {"since=2026-01-01T03:00:00%2B03:00", "since=2026-01-01t00:00:00.123456789z",
        "since=0001-01-01T00:00:00Z", "until=9999-12-31T23:59:59Z",
        "since=2024-02-29T23:59:59.5-12:00&until=2024-02-29T23:59:59.5-12:00", "limit=500",
        "limit=1&cursor=1.1", "cursor=999999999999.999999999999", "action=user.signup"}) {
    auto r = get("/v1/admin/audit?" + ok, h);
    EXPECT_EQ(r.status, 200) << ok << " " << r.body.substr(0, 300);
  }
  for (const auto& [query, field] :
       std::vector<std::pair<std::string, std::string>>{{"limit=0", "limit"},
                                                        {"cursor=nope", "cursor"},
                                                        {"cursor=1.org_x", "cursor"},
                                                        {"org_id=x", "org_id"}}) {
    auto r = get("/v1/admin/orgs?" + query, h);
    EXPECT_EQ(r.status, 400) << query << " " << r.body;
    EXPECT_EQ(r.json()["error"]["details"]["field"], field) << query;
  }
  auto audit_ok = get("/v1/admin/audit", h);
  EXPECT_EQ(audit_ok.status, 200);
  EXPECT_EQ(server_->running(), true);
}

TEST_F(AdminE2E, AdminScopedTokensWorkAndOnlyPlatformAdminsCanGrantThem) {
  Login admin = platform_admin();
  Login owner = account("owner@example.com", "Alpha");

  auto me = get("/v1/me", session(admin)).json();
  auto scopes = me["scopes"];
  EXPECT_NE(std::find(scopes.begin(), scopes.end(), "admin"), scopes.end()) << me;
  auto owner_scopes = get("/v1/me", session(owner)).json()["scopes"];
  EXPECT_EQ(std::find(owner_scopes.begin(), owner_scopes.end(), "admin"), owner_scopes.end());

  auto [admin_token_id, admin_token] = token(session(admin), {"admin"});
  auto listed = get("/v1/admin/orgs", bearer(admin_token));
  EXPECT_EQ(listed.status, 200) << listed.body;
  EXPECT_EQ(get("/v1/me", bearer(admin_token)).json()["scopes"], json::array({"admin"}));
  auto set = patch_org(bearer(admin_token), owner.org_id, {{"max_days", 7}});
  ASSERT_EQ(set.status, 200) << set.body;
  auto log = get("/v1/admin/audit?action=org.guardrails_set", bearer(admin_token));
  ASSERT_EQ(log.status, 200) << log.body;
  ASSERT_EQ(log.json()["items"].size(), 1u);
  EXPECT_EQ(log.json()["items"][0]["actor_token_id"], admin_token_id);
  EXPECT_EQ(log.json()["items"][0]["actor_user_id"], admin.user_id);

  // A platform admin's token without the scope is not an admin token.
  auto [plain_id, plain] = token(session(admin), {"rentals:read"});
  EXPECT_EQ(get("/v1/admin/orgs", bearer(plain)).status, 403);
  // Nobody else can grant `admin`, alone or among scopes they have.
  for (const auto& scopes : std::vector<std::vector<std::string>>{
           {"admin"}, {"rentals:read", "admin"}, {"admin", "tokens:write"}}) {
    auto r = post("/v1/api-tokens", {{"name", "sneaky"}, {"scopes", scopes}}, session(owner));
    EXPECT_EQ(r.status, 403) << r.body;
    EXPECT_EQ(r.json()["error"]["code"], "forbidden");
    EXPECT_EQ(r.json()["error"]["details"]["scope"], "admin");
  }
  pqxx::connection c(db_.url());
  pqxx::nontransaction tx(c);
  EXPECT_EQ(tx.exec("SELECT count(*) FROM api_tokens WHERE 'admin' = ANY(scopes)")[0][0].as<int>(),
            1);
}

TEST_F(AdminE2E, ADemotedAdminLosesAdminAccessOnTheNextRequest) {
  Login admin = platform_admin();
  auto [token_id, admin_token] = token(session(admin), {"admin", "rentals:read"});
  EXPECT_EQ(get("/v1/admin/orgs", session(admin)).status, 200);
  EXPECT_EQ(get("/v1/admin/audit", bearer(admin_token)).status, 200);

  set_platform_admin(admin.user_id, false);
  for (const auto& path : {"/v1/admin/orgs", "/v1/admin/audit"}) {
    auto s = get(path, session(admin));
    EXPECT_EQ(s.status, 403) << path << " " << s.body;
    EXPECT_EQ(get(path, bearer(admin_token)).status, 403) << path;
  }
  EXPECT_EQ(patch_org(session(admin), admin.org_id, {{"max_days", 1}}).status, 403);
  EXPECT_EQ(get("/v1/me", bearer(admin_token)).json()["scopes"], json::array({"rentals:read"}));
  auto me = get("/v1/me", session(admin)).json()["scopes"];
  EXPECT_EQ(std::find(me.begin(), me.end(), "admin"), me.end());
  // The demoted user can no longer grant `admin` either.
  auto r = post("/v1/api-tokens", {{"name", "again"}, {"scopes", {"admin"}}}, session(admin));
  EXPECT_EQ(r.status, 403) << r.body;

  // The flag is read on every request, in both directions.
  set_platform_admin(admin.user_id, true);
  EXPECT_EQ(get("/v1/admin/orgs", session(admin)).status, 200);
  EXPECT_EQ(get("/v1/admin/orgs", bearer(admin_token)).status, 200);
}

TEST_F(AdminE2E, APlatformAdminOutsideAnyOrgStillAdministers) {
  Login admin = platform_admin();
  {
    pqxx::connection c(db_.url());
    pqxx::work tx(c);
    tx.exec_params("DELETE FROM memberships WHERE user_id = $1", admin.user_id);
    tx.commit();
  }
  auto me = get("/v1/me", session(admin));
  ASSERT_EQ(me.status, 200) << me.body;
  EXPECT_EQ(me.json()["scopes"], json::array({"admin"}));
  EXPECT_EQ(get("/v1/admin/orgs", session(admin)).status, 200);
  EXPECT_EQ(get("/v1/admin/audit", session(admin)).status, 200);
  // The org's own audit log needs an org.
  EXPECT_EQ(get("/v1/audit", session(admin)).status, 403);
}

}  // namespace gpurent::testing::admin_e2e
