// The actor of the audit rows the identity routes write, against a real PostgreSQL: a change
// made with an API token names the token beside its user; one made in a session names only
// the user (actor_of, which the handlers hand to the stores).
#include "api/auth.h"
#include "api/handlers/token_handlers.h"
#include "api/router.h"
#include "api/tests/map_headers.h"
#include "core/clock.h"
#include "core/db_pool.h"
#include "identity/identity_store.h"
#include "identity/token_store.h"
#include "tests/support/pg_harness.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <pqxx/pqxx>

#include <string>

namespace gpurent::http {
namespace audit_actor_pgtest {

class AuditActorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    add_token_routes(router_, routes_);
    auto [user, org] = pool_.transact("identity_signup", [&](Tx& tx) {
      return identity_.create_user_with_org(tx, "owner@example.com", "hash", "Org", {});
    });
    session_.user = user;
    session_.org_id = org.id;
    session_.role = "owner";
    session_.scopes = session_scopes(user, "owner");
    session_.session_id_hash = std::string(64, 'a');
  }

  // The response of the route for (method, path), called as the pipeline calls it once
  // `caller` is authenticated.
  Response call(Method method, const std::string& path, const std::string& body,
                const Principal& caller) {
    RouteMatch m = router_.match(method, path);
    EXPECT_EQ(m.kind, RouteMatch::Kind::kFound) << path;
    Request req;
    req.method = method;
    req.target = path;
    req.path = path;
    req.body = body;
    req.remote_ip = "198.51.100.7";
    req.request_id = "req_actor";
    req.headers = &headers_;
    req.path_params = m.params;
    return m.route->handler(req, caller);
  }

  // A principal of the session's user acting with the API token `token_id`.
  Principal with_token(const std::string& token_id) const {
    Principal p = session_;
    p.session_id_hash.clear();
    p.token_id = token_id;
    return p;
  }

  // actor_user_id and actor_token_id ("-" for NULL) of the one row of `action` on `target`.
  std::pair<std::string, std::string> actor_of_row(const std::string& action,
                                                   const std::string& target) {
    pqxx::connection c(db_.url());
    pqxx::nontransaction tx(c);
    auto row = tx.exec_params1(
        "SELECT coalesce(actor_user_id, '-'), coalesce(actor_token_id, '-'), ip, request_id"
        " FROM audit_log WHERE action = $1 AND target = $2",
        action, target);
    EXPECT_EQ(row[2].as<std::string>(), "198.51.100.7");
    EXPECT_EQ(row[3].as<std::string>(), "req_actor");
    return {row[0].as<std::string>(), row[1].as<std::string>()};
  }

  std::string create_token(const Principal& caller) {
    Response r = call(Method::kPost, "/v1/api-tokens",
                      R"({"name": "ci", "scopes": ["rentals:read"]})", caller);
    EXPECT_EQ(r.status, 201) << r.body;
    return nlohmann::json::parse(r.body).at("id").get<std::string>();
  }

  testing::TestDatabase db_;
  PgPool pool_{{.url = db_.url(), .size = 2}};
  TestClock clock_;
  identity::IdentityStore identity_{clock_};
  identity::TokenStore tokens_{clock_};
  TokenRoutesState routes_{.pool = &pool_, .store = &tokens_};
  Router router_;
  MapHeaders headers_{{{"Content-Type", "application/json"}}};
  Principal session_;
};

TEST_F(AuditActorTest, ATokensChangesNameTheTokenAndASessionsOnlyTheUser) {
  const std::string& user = session_.user.id;
  std::string by_session = create_token(session_);
  EXPECT_EQ(actor_of_row("token.create", by_session), std::make_pair(user, std::string("-")));

  // The token made in the session makes and revokes another.
  std::string by_token = create_token(with_token(by_session));
  EXPECT_EQ(actor_of_row("token.create", by_token), std::make_pair(user, by_session));
  EXPECT_EQ(call(Method::kDelete, "/v1/api-tokens/" + by_token, "", with_token(by_session)).status,
            204);
  EXPECT_EQ(actor_of_row("token.revoke", by_token), std::make_pair(user, by_session));

  EXPECT_EQ(call(Method::kDelete, "/v1/api-tokens/" + by_session, "", session_).status, 204);
  EXPECT_EQ(actor_of_row("token.revoke", by_session), std::make_pair(user, std::string("-")));
}

}  // namespace audit_actor_pgtest
}  // namespace gpurent::http
