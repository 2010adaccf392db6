// Tests Router: exact and parameterised matches, 404 vs 405 with Allow, and pattern checks.
#include "api/router.h"

#include "api/auth.h"

#include <gtest/gtest.h>

#include <stdexcept>

namespace gpurent::http {
namespace router_test {

using Kind = RouteMatch::Kind;

Handler answer(int status) {
  return [status](const Request&, const Principal&) {
    Response r;
    r.status = status;
    return r;
  };
}

Route route(Method method, std::string pattern, int status = 200) {
  Route r;
  r.method = method;
  r.pattern = std::move(pattern);
  r.handler = answer(status);
  return r;
}

class RouterTest : public testing::Test {
 protected:
  void SetUp() override {
    router_.add(route(Method::kGet, "/healthz", 1));
    router_.add(route(Method::kGet, "/v1/rentals", 2));
    router_.add(route(Method::kPost, "/v1/rentals", 3));
    router_.add(route(Method::kGet, "/v1/rentals/{id}", 4));
    router_.add(route(Method::kDelete, "/v1/rentals/{id}", 5));
    router_.add(route(Method::kGet, "/v1/rentals/active", 6));
    router_.add(route(Method::kPost, "/v1/rentals/{id}/extend", 7));
    router_.add(route(Method::kDelete, "/v1/orgs/{org_id}/members/{user_id}", 8));
  }

  // The status the matched handler answers, which identifies the route.
  int matched(Method method, std::string_view path) const {
    RouteMatch m = router_.match(method, path);
    if (m.kind != Kind::kFound) return -1;
    return m.route->handler(Request{}, Principal{}).status;
  }

  Router router_;
};

TEST_F(RouterTest, ExactPath) {
  EXPECT_EQ(matched(Method::kGet, "/healthz"), 1);
  EXPECT_EQ(matched(Method::kGet, "/v1/rentals"), 2);
  EXPECT_EQ(matched(Method::kPost, "/v1/rentals"), 3);
}

TEST_F(RouterTest, ExactMatchHasNoParams) {
  RouteMatch m = router_.match(Method::kGet, "/v1/rentals");
  ASSERT_EQ(m.kind, Kind::kFound);
  EXPECT_TRUE(m.params.empty());
  EXPECT_EQ(m.route->pattern, "/v1/rentals");
}

TEST_F(RouterTest, ParameterIsCaptured) {
  RouteMatch m = router_.match(Method::kGet, "/v1/rentals/rnt_123");
  ASSERT_EQ(m.kind, Kind::kFound);
  EXPECT_EQ(m.route->pattern, "/v1/rentals/{id}");
  ASSERT_EQ(m.params.size(), 1u);
  EXPECT_EQ(m.params[0].first, "id");
  EXPECT_EQ(m.params[0].second, "rnt_123");
}

TEST_F(RouterTest, SeveralParametersInOrder) {
  RouteMatch m = router_.match(Method::kDelete, "/v1/orgs/org_1/members/usr_2");
  ASSERT_EQ(m.kind, Kind::kFound);
  ASSERT_EQ(m.params.size(), 2u);
  EXPECT_EQ(m.params[0], (std::pair<std::string, std::string>("org_id", "org_1")));
  EXPECT_EQ(m.params[1], (std::pair<std::string, std::string>("user_id", "usr_2")));
}

TEST_F(RouterTest, ParameterIsPercentDecoded) {
  RouteMatch m = router_.match(Method::kGet, "/v1/rentals/a%20b%2Fc");
  ASSERT_EQ(m.kind, Kind::kFound);
  EXPECT_EQ(m.params[0].second, "a b/c");
}

TEST_F(RouterTest, LiteralSegmentBeatsParameter) {
  EXPECT_EQ(matched(Method::kGet, "/v1/rentals/active"), 6);
  EXPECT_EQ(matched(Method::kGet, "/v1/rentals/other"), 4);
  // Another method on the literal path still reaches the parameterised route.
  RouteMatch m = router_.match(Method::kDelete, "/v1/rentals/active");
  ASSERT_EQ(m.kind, Kind::kFound);
  EXPECT_EQ(m.route->pattern, "/v1/rentals/{id}");
  EXPECT_EQ(m.params[0].second, "active");
}

TEST_F(RouterTest, LiteralAfterParameter) {
  EXPECT_EQ(matched(Method::kPost, "/v1/rentals/rnt_1/extend"), 7);
  EXPECT_EQ(router_.match(Method::kPost, "/v1/rentals/rnt_1/shrink").kind, Kind::kNotFound);
}

TEST_F(RouterTest, HeadIsServedByGet) {
  EXPECT_EQ(matched(Method::kHead, "/healthz"), 1);
  EXPECT_EQ(matched(Method::kHead, "/v1/rentals/rnt_1"), 4);
}

TEST_F(RouterTest, UnknownPathIsNotFound) {
  for (std::string_view path :
       {"/", "/nope", "/v1", "/v1/rentals/rnt_1/extend/more", "/v1/orgs/org_1/members", "",
        "v1/rentals", "/V1/RENTALS", "/healthz/x"}) {
    RouteMatch m = router_.match(Method::kGet, path);
    EXPECT_EQ(m.kind, Kind::kNotFound) << path;
    EXPECT_EQ(m.route, nullptr) << path;
    EXPECT_TRUE(m.allow.empty()) << path;
  }
}

TEST_F(RouterTest, TrailingSlashAndEmptySegmentsDoNotMatch) {
  EXPECT_EQ(router_.match(Method::kGet, "/healthz/").kind, Kind::kNotFound);
  EXPECT_EQ(router_.match(Method::kGet, "/v1/rentals/").kind, Kind::kNotFound);
  EXPECT_EQ(router_.match(Method::kPost, "/v1/rentals//extend").kind, Kind::kNotFound);
  EXPECT_EQ(router_.match(Method::kGet, "//v1/rentals").kind, Kind::kNotFound);
}

TEST_F(RouterTest, WrongMethodOnExactPathIs405WithAllow) {
  RouteMatch m = router_.match(Method::kPut, "/v1/rentals");
  EXPECT_EQ(m.kind, Kind::kMethodNotAllowed);
  EXPECT_EQ(m.route, nullptr);
  EXPECT_EQ(m.allow, "GET, HEAD, POST");
}

TEST_F(RouterTest, WrongMethodOnParameterisedPathIs405WithAllow) {
  RouteMatch m = router_.match(Method::kPost, "/v1/rentals/rnt_1");
  EXPECT_EQ(m.kind, Kind::kMethodNotAllowed);
  EXPECT_EQ(m.allow, "GET, HEAD, DELETE");
}

TEST_F(RouterTest, HeadOnPostOnlyRouteIs405) {
  RouteMatch m = router_.match(Method::kHead, "/v1/rentals/rnt_1/extend");
  EXPECT_EQ(m.kind, Kind::kMethodNotAllowed);
  EXPECT_EQ(m.allow, "POST");
}

TEST_F(RouterTest, OtherMethodIs405) {
  RouteMatch m = router_.match(Method::kOther, "/healthz");
  EXPECT_EQ(m.kind, Kind::kMethodNotAllowed);
  EXPECT_EQ(m.allow, "GET, HEAD");
}

TEST_F(RouterTest, RoutesKeepOrderAndIndex) {
  const auto& routes = router_.routes();
  ASSERT_EQ(routes.size(), 8u);
  for (std::size_t i = 0; i < routes.size(); ++i) EXPECT_EQ(routes[i].index, i);
  EXPECT_EQ(routes[3].pattern, "/v1/rentals/{id}");
  EXPECT_EQ(router_.match(Method::kGet, "/v1/rentals/x").route, &routes[3]);
}

TEST(Router, RouteDefaults) {
  Route r;
  EXPECT_EQ(r.execution, Execution::kWorker);
  EXPECT_TRUE(r.documented);
  EXPECT_FALSE(r.quiet);
}

TEST(Router, RejectsMalformedPatterns) {
  for (std::string bad : {"", "healthz", "v1/{id}", "/v1/{", "/v1/}{", "/v1/{}", "/v1/a{id}",
                          "/v1/{id}x", "/v1/{id", "/v1/id}/{x"}) {
    Router router;
    EXPECT_THROW(router.add(route(Method::kGet, bad)), std::invalid_argument) << bad;
    EXPECT_TRUE(router.routes().empty()) << bad;
  }
}

TEST(Router, RejectsDuplicateRoutes) {
  Router router;
  router.add(route(Method::kGet, "/v1/x/{id}"));
  EXPECT_THROW(router.add(route(Method::kGet, "/v1/x/{id}")), std::invalid_argument);
  EXPECT_NO_THROW(router.add(route(Method::kPost, "/v1/x/{id}")));
  router.add(route(Method::kGet, "/v1/y"));
  EXPECT_THROW(router.add(route(Method::kGet, "/v1/y")), std::invalid_argument);
  EXPECT_EQ(router.routes().size(), 3u);
}

TEST(Router, OnlyReadsMayBeTriedInlineAndRunAgain) {
  // A route tried on the network thread may be abandoned and started again on a worker:
  // only a GET, which has no effects, may be.
  for (Method m : {Method::kPost, Method::kPut, Method::kPatch, Method::kDelete}) {
    Router router;
    Route r = route(m, "/v1/x");
    r.execution = Execution::kInlineUnlessBlocked;
    EXPECT_THROW(router.add(r), std::invalid_argument) << method_name(m);
  }
  Router router;
  Route r = route(Method::kGet, "/v1/x");
  r.execution = Execution::kInlineUnlessBlocked;
  EXPECT_NO_THROW(router.add(r));
}

TEST(Router, RootPath) {
  Router router;
  router.add(route(Method::kGet, "/", 9));
  RouteMatch m = router.match(Method::kGet, "/");
  ASSERT_EQ(m.kind, Kind::kFound);
  EXPECT_EQ(m.route->pattern, "/");
  EXPECT_EQ(router.match(Method::kGet, "/x").kind, Kind::kNotFound);
}

TEST(Router, EmptyRouterFindsNothing) {
  Router router;
  EXPECT_EQ(router.match(Method::kGet, "/").kind, Kind::kNotFound);
}

}  // namespace router_test
}  // namespace gpurent::http
