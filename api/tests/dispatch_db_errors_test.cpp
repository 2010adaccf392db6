// Tests how invoke() answers database failures that escape a handler: constraint conflicts
// are 409 in the contract's format, lost races 503, and nothing leaks SQL or row values.
#include "api/dispatch.h"

#include "core/db_errors.h"
#include "core/error.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <pqxx/except>

#include <functional>
#include <string>
#include <tuple>
#include <vector>

namespace gpurent::http {
namespace dispatch_db_errors_test {

// invoke() on a route whose handler throws what `thrower` throws.
Response answer_when_handler_throws(const std::function<void()>& thrower) {
  Route route;
  route.method = Method::kPost;
  route.pattern = "/v1/things";
  route.handler = [thrower](const auto&...) -> Response {
    thrower();
    return Response{};
  };
  Request r;
  r.method = Method::kPost;
  r.target = r.path = "/v1/things";
  return invoke(route, r);
}

std::string header(const Response& r, const std::string& name) {
  for (const auto& [k, v] : r.headers) {
    if (k == name) return v;
  }
  return "";
}

TEST(DispatchDbErrors, UniqueViolationIsConflictNamingTheConstraint) {
  Response r = answer_when_handler_throws([] {
    throw ConstraintViolation(DbFailure::kUniqueViolation, "23505", "users_email_key",
                              "duplicate key value violates unique constraint \"users_email_key\"");
  });
  EXPECT_EQ(r.status, 409);
  auto body = nlohmann::json::parse(r.body);
  ASSERT_TRUE(body["error"].is_object()) << r.body;
  EXPECT_EQ(body["error"]["code"], "conflict");
  EXPECT_TRUE(body["error"]["message"].is_string());
  EXPECT_EQ(body["error"]["details"], (nlohmann::json{{"constraint", "users_email_key"}}));
  EXPECT_EQ(r.body.find("duplicate key"), std::string::npos) << "no SQL text for the client";
  EXPECT_EQ(body.size(), 1u) << r.body;
  EXPECT_EQ(body["error"].size(), 3u) << r.body;
}

TEST(DispatchDbErrors, RawLibpqxxViolationsAreTypedAtTheEdgeToo) {
  // A statement run outside PgPool::transact still never reaches the client as a 500.
  Response r = answer_when_handler_throws([] {
    throw pqxx::unique_violation(
        "ERROR:  duplicate key value violates unique constraint \"sites_name_key\"\n"
        "DETAIL:  Key (name)=(secret-site) already exists.\n",
        "INSERT INTO sites …", "23505");
  });
  EXPECT_EQ(r.status, 409);
  auto body = nlohmann::json::parse(r.body);
  EXPECT_EQ(body["error"]["code"], "conflict");
  EXPECT_EQ(body["error"]["details"]["constraint"], "sites_name_key");
  EXPECT_EQ(r.body.find("secret-site"), std::string::npos) << r.body;
}

TEST(DispatchDbErrors, ExclusionAndForeignKeyViolationsAreConflicts) {
  for (auto [kind, sqlstate, constraint] :
       {std::tuple{DbFailure::kExclusionViolation, "23P01", "allocations_no_overlap"},
        std::tuple{DbFailure::kForeignKeyViolation, "23503", "rentals_org_id_fkey"},
        std::tuple{DbFailure::kForeignKeyViolation, "23503", ""}}) {
    Response r = answer_when_handler_throws(
        [&] { throw ConstraintViolation(kind, sqlstate, constraint, "violates something"); });
    EXPECT_EQ(r.status, 409) << constraint;
    auto body = nlohmann::json::parse(r.body);
    EXPECT_EQ(body["error"]["code"], "conflict");
    if (std::string(constraint).empty()) {
      EXPECT_EQ(body["error"]["details"], nlohmann::json::object()) << "no name: no key";
    } else {
      EXPECT_EQ(body["error"]["details"]["constraint"], constraint);
    }
  }
}

TEST(DispatchDbErrors, CheckAndNotNullViolationsAreInternalErrors) {
  // Input the edge should have refused: a bug to fix, not the caller's conflict.
  for (DbFailure kind : {DbFailure::kCheckViolation, DbFailure::kNotNullViolation}) {
    Response r = answer_when_handler_throws([&] {
      throw ConstraintViolation(kind, "23514", "prices_amount_positive", "violates check");
    });
    EXPECT_EQ(r.status, 500) << db_failure_name(kind);
    auto body = nlohmann::json::parse(r.body);
    EXPECT_EQ(body["error"]["code"], "internal");
    EXPECT_EQ(r.body.find("prices_amount_positive"), std::string::npos) << r.body;
  }
}

TEST(DispatchDbErrors, LostRacesAreUnavailableWithRetryAfter) {
  for (const std::function<void()>& thrower : std::vector<std::function<void()>>{
           [] { throw pqxx::serialization_failure("ERROR:  could not serialize access\n"); },
           [] { throw pqxx::deadlock_detected("ERROR:  deadlock detected\n"); },
           [] {
             throw pqxx::sql_error("ERROR:  could not serialize access\n", "UPDATE", "40001");
           }}) {
    Response r = answer_when_handler_throws(thrower);
    EXPECT_EQ(r.status, 503);
    EXPECT_EQ(nlohmann::json::parse(r.body)["error"]["code"], "unavailable");
    EXPECT_EQ(header(r, "Retry-After"), "1");
  }
  // PgPool::transact gives up with this Error after its retries; it maps the same way.
  Response r = answer_when_handler_throws(
      [] { throw Error(ErrorCode::kUnavailable, "The database kept refusing the transaction."); });
  EXPECT_EQ(r.status, 503);
}

TEST(DispatchDbErrors, OtherDatabaseErrorsStayInternal) {
  Response r = answer_when_handler_throws(
      [] { throw pqxx::sql_error("ERROR:  division by zero\n", "SELECT 1/0", "22012"); });
  EXPECT_EQ(r.status, 500);
  EXPECT_EQ(nlohmann::json::parse(r.body)["error"]["code"], "internal");
  EXPECT_EQ(r.body.find("division"), std::string::npos) << r.body;
}

}  // namespace dispatch_db_errors_test
}  // namespace gpurent::http
