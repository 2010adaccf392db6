// Tests build_openapi: the document lists exactly the router's documented routes.
#include "api/openapi.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <functional>
#include <set>

namespace gpurent::http {
namespace openapi_test {

using nlohmann::json;

Route route(Method method, std::string pattern, std::string summary, bool documented = true) {
  Route r;
  r.method = method;
  r.pattern = std::move(pattern);
  r.summary = std::move(summary);
  r.tag = "rentals";
  r.documented = documented;
  r.handler = [](const Request&, const Principal&) { return Response{}; };
  return r;
}

class OpenApiTest : public testing::Test {
 protected:
  void SetUp() override {
    router_.add(route(Method::kGet, "/v1/rentals", "List rentals"));
    router_.add(route(Method::kPost, "/v1/rentals", "Create a rental"));
    router_.add(route(Method::kGet, "/v1/rentals/{id}", "Get a rental"));
    router_.add(route(Method::kDelete, "/v1/orgs/{org_id}/members/{user_id}", "Remove a member"));
    router_.add(route(Method::kPatch, "/v1/rentals/{id}", "Rename a rental"));
    router_.add(route(Method::kGet, "/v1/test/sleep", "Sleeps", /*documented=*/false));
    router_.add(route(Method::kPost, "/v1/rentals/{id}", "Test-only poke", /*documented=*/false));
    doc_ = build_openapi(router_, "1.2.3");
  }

  Router router_;
  json doc_;
};

TEST_F(OpenApiTest, Header) {
  EXPECT_EQ(doc_["openapi"], "3.1.0");
  EXPECT_EQ(doc_["info"]["version"], "1.2.3");
  EXPECT_TRUE(doc_["info"]["title"].is_string());
}

TEST_F(OpenApiTest, EveryDocumentedRouteIsPresentWithLowercaseMethod) {
  for (const auto& r : router_.routes()) {
    if (!r.documented) continue;
    std::string method(method_name(r.method));
    for (auto& c : method) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    ASSERT_TRUE(doc_["paths"].contains(r.pattern)) << r.pattern;
    ASSERT_TRUE(doc_["paths"][r.pattern].contains(method)) << method << " " << r.pattern;
    const auto& op = doc_["paths"][r.pattern][method];
    EXPECT_EQ(op["summary"], r.summary);
    EXPECT_EQ(op["tags"], json::array({"rentals"}));
  }
  EXPECT_EQ(doc_["paths"]["/v1/rentals"].size(), 2u);
  EXPECT_TRUE(doc_["paths"]["/v1/rentals"].contains("get"));
  EXPECT_TRUE(doc_["paths"]["/v1/rentals"].contains("post"));
  EXPECT_TRUE(doc_["paths"]["/v1/rentals/{id}"].contains("patch"));
  EXPECT_TRUE(doc_["paths"]["/v1/orgs/{org_id}/members/{user_id}"].contains("delete"));
}

TEST_F(OpenApiTest, UndocumentedRoutesAreAbsent) {
  EXPECT_FALSE(doc_["paths"].contains("/v1/test/sleep"));
  EXPECT_FALSE(doc_["paths"]["/v1/rentals/{id}"].contains("post"));
  EXPECT_EQ(doc_["paths"]["/v1/rentals/{id}"].size(), 2u);  // get, patch
  EXPECT_EQ(doc_["paths"].size(), 3u);
}

TEST_F(OpenApiTest, PathParametersAreListedInOrder) {
  const auto& params = doc_["paths"]["/v1/orgs/{org_id}/members/{user_id}"]["delete"]["parameters"];
  ASSERT_EQ(params.size(), 2u);
  EXPECT_EQ(params[0]["name"], "org_id");
  EXPECT_EQ(params[1]["name"], "user_id");
  for (const auto& p : params) {
    EXPECT_EQ(p["in"], "path");
    EXPECT_EQ(p["required"], true);
    EXPECT_EQ(p["schema"]["type"], "string");
  }
  const auto& one = doc_["paths"]["/v1/rentals/{id}"]["get"]["parameters"];
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0]["name"], "id");
}

TEST_F(OpenApiTest, PostRoutesDocumentTheIdempotencyKeyHeader) {
  const auto& params = doc_["paths"]["/v1/rentals"]["post"]["parameters"];
  ASSERT_EQ(params.size(), 1u);
  EXPECT_EQ(params[0]["name"], "Idempotency-Key");
  EXPECT_EQ(params[0]["in"], "header");
  EXPECT_EQ(params[0]["required"], false);

  Router router;
  Route login = route(Method::kPost, "/v1/auth/login", "Sign in");
  login.idempotency_key = false;
  router.add(login);
  auto doc = build_openapi(router, "1");
  EXPECT_FALSE(doc["paths"]["/v1/auth/login"]["post"].contains("parameters"));
}

TEST_F(OpenApiTest, RoutesWithoutParametersListNone) {
  EXPECT_FALSE(doc_["paths"]["/v1/rentals"]["get"].contains("parameters"));
}

TEST_F(OpenApiTest, OperationIdsAreUnique) {
  std::set<std::string> ids;
  for (const auto& [path, ops] : doc_["paths"].items()) {
    for (const auto& [method, op] : ops.items()) {
      ASSERT_TRUE(op["operationId"].is_string()) << method << " " << path;
      EXPECT_TRUE(ids.insert(op["operationId"].get<std::string>()).second) << op["operationId"];
    }
  }
  EXPECT_EQ(ids.size(), 5u);
  EXPECT_EQ(doc_["paths"]["/v1/rentals/{id}"]["get"]["operationId"], "get_v1_rentals_id");
}

TEST_F(OpenApiTest, ErrorsReferenceTheSharedSchema) {
  const auto& schemas = doc_["components"]["schemas"];
  ASSERT_TRUE(schemas.contains("Error"));
  EXPECT_EQ(schemas["Error"]["required"], json::array({"error"}));
  const auto& inner = schemas["Error"]["properties"]["error"];
  EXPECT_TRUE(inner["properties"].contains("code"));
  EXPECT_TRUE(inner["properties"].contains("message"));
  EXPECT_TRUE(inner["properties"].contains("details"));
  ASSERT_TRUE(schemas.contains("Money"));
  EXPECT_EQ(schemas["Money"]["properties"]["amount_minor"]["type"], "integer");
  for (const auto& [path, ops] : doc_["paths"].items()) {
    for (const auto& [method, op] : ops.items()) {
      EXPECT_EQ(op["responses"]["default"]["content"]["application/json"]["schema"]["$ref"],
                "#/components/schemas/Error")
          << method << " " << path;
    }
  }
}

TEST(BuildOpenApi, EmptyRouterHasNoPaths) {
  Router router;
  json doc = build_openapi(router, "0");
  EXPECT_TRUE(doc["paths"].is_object());
  EXPECT_TRUE(doc["paths"].empty());
  EXPECT_TRUE(doc["components"]["schemas"].contains("Error"));
}

TEST(OpenApiSecurity, EveryOperationPrintsTheAccessItsRouteDeclares) {
  Router router;
  Route anyone = route(Method::kPost, "/v1/auth/login", "Sign in");
  anyone.access = Access::kAnyone;
  Route signed_in = route(Method::kGet, "/v1/ssh-keys", "Keys");
  signed_in.needs_org = true;
  signed_in.scope = "ssh-keys:write";
  Route session = route(Method::kPost, "/v1/session/org", "Switch");
  session.access = Access::kSessionOnly;
  Route admin = route(Method::kGet, "/v1/admin/orgs", "Orgs");
  admin.platform_admin = true;
  for (auto* r : {&anyone, &signed_in, &session, &admin}) router.add(*r);
  json doc = build_openapi(router, "1");
  json bearer = {{"bearer", json::array()}};
  json session_scheme = {{"session", json::array()}};
  const json both = json::array({bearer, session_scheme});
  EXPECT_EQ(doc["paths"]["/v1/auth/login"]["post"]["security"], json::array());
  EXPECT_EQ(doc["paths"]["/v1/ssh-keys"]["get"]["security"], both);
  EXPECT_EQ(doc["paths"]["/v1/ssh-keys"]["get"]["x-gpurent-needs-org"], true);
  EXPECT_EQ(doc["paths"]["/v1/ssh-keys"]["get"]["x-gpurent-scope"], "ssh-keys:write");
  EXPECT_EQ(doc["paths"]["/v1/session/org"]["post"]["security"], json::array({session_scheme}));
  EXPECT_EQ(doc["paths"]["/v1/admin/orgs"]["get"]["security"], both);
  EXPECT_EQ(doc["paths"]["/v1/admin/orgs"]["get"]["x-gpurent-platform-admin"], true);
  // Both schemes the operations name are defined.
  EXPECT_TRUE(doc["components"]["securitySchemes"].contains("bearer"));
  EXPECT_TRUE(doc["components"]["securitySchemes"].contains("session"));
}

}  // namespace openapi_test
}  // namespace gpurent::http

namespace gpurent::http {
namespace openapi_fragments_test {

using nlohmann::json;

Route route(Method method, std::string pattern) {
  Route r;
  r.method = method;
  r.pattern = std::move(pattern);
  r.summary = "s";
  r.tag = "rentals";
  r.handler = [](const Request&, const Principal&) { return Response{}; };
  return r;
}

json ok_response() {
  return {{"200",
           {{"description", "ok"},
            {"content",
             {{"application/json", {{"schema", {{"$ref", "#/components/schemas/Thing"}}}}}}}}}};
}

class OpenApiFragmentsTest : public testing::Test {
 protected:
  void SetUp() override {
    router_.add(route(Method::kGet, "/v1/things/{id}"));
    router_.add(route(Method::kPost, "/v1/things"));
    Route hidden = route(Method::kGet, "/v1/test/x");
    hidden.documented = false;
    router_.add(hidden);
    fragments_ = {
        {"things.json",
         {{"schemas", {{"Thing", {{"type", "object"}}}}},
          {"paths",
           {{"/v1/things/{id}",
             {{"get",
               {{"parameters", json::array({{{"name", "expand"}, {"in", "query"}}})},
                {"responses", ok_response()}}}}},
            {"/v1/things",
             {{"post",
               {{"requestBody", {{"required", true}}}, {"responses", ok_response()}}}}}}}}}};
  }
  std::vector<std::string> problems() { return openapi_disagreements(router_, fragments_); }
  bool said(const std::string& text) {
    for (const auto& p : problems()) {
      if (p.find(text) != std::string::npos) return true;
    }
    return false;
  }

  Router router_;
  std::vector<OpenApiFragment> fragments_;
};

TEST_F(OpenApiFragmentsTest, AgreeingFragmentsAreMergedIntoTheirOperations) {
  EXPECT_EQ(problems(), std::vector<std::string>{});
  json doc = build_openapi(router_, "1", fragments_);
  const auto& get = doc["paths"]["/v1/things/{id}"]["get"];
  ASSERT_EQ(get["parameters"].size(), 2u);  // the generated path parameter, then the query one
  EXPECT_EQ(get["parameters"][0]["in"], "path");
  EXPECT_EQ(get["parameters"][1]["name"], "expand");
  EXPECT_EQ(get["responses"]["200"]["content"]["application/json"]["schema"]["$ref"],
            "#/components/schemas/Thing");
  EXPECT_FALSE(get["responses"].contains("2XX"));
  EXPECT_EQ(get["responses"]["4XX"]["content"]["application/json"]["schema"]["$ref"],
            "#/components/schemas/Error");
  EXPECT_EQ(doc["paths"]["/v1/things"]["post"]["requestBody"]["required"], true);
  EXPECT_TRUE(doc["components"]["schemas"].contains("Thing"));
  EXPECT_TRUE(doc["components"]["schemas"].contains("Error"));
  EXPECT_FALSE(doc["paths"].contains("/v1/test/x"));
}

TEST_F(OpenApiFragmentsTest, ARouteNoFragmentDescribesIsADisagreement) {
  router_.add(route(Method::kDelete, "/v1/things/{id}"));
  EXPECT_TRUE(said("delete /v1/things/{id} is described by no file"));
}

TEST_F(OpenApiFragmentsTest, AFragmentOperationNoRouteServesIsADisagreement) {
  fragments_[0].content["paths"]["/v1/things/{id}"]["put"] = {{"responses", ok_response()}};
  EXPECT_TRUE(said("put /v1/things/{id} is served by no documented route"));
  fragments_[0].content["paths"]["/v1/test/x"]["get"] = {{"responses", ok_response()}};
  EXPECT_TRUE(said("get /v1/test/x is served by no documented route"));
}

TEST_F(OpenApiFragmentsTest, MistakesInsideFragmentsAreDisagreements) {
  auto with = [&](const std::function<void(json&)>& change, const std::string& text) {
    auto saved = fragments_;
    change(fragments_[0].content);
    EXPECT_TRUE(said(text)) << text;
    fragments_ = saved;
  };
  with(
      [](json& c) {
        c["paths"]["/v1/things"]["post"]["responses"] = {{"400", {}}};
      },
      "lists no success");
  with([](json& c) { c["paths"]["/v1/things"]["post"]["respones"] = json::object(); },
       "unknown key \"respones\"");
  with([](json& c) { c["schemaz"] = json::object(); }, "unknown key \"schemaz\"");
  with([](json& c) { c["schemas"]["Error"] = json::object(); }, "schema Error is also defined");
  with(
      [](json& c) {
        c["schemas"]["Other"] = {{"$ref", "#/components/schemas/Nope"}};
      },
      "$ref #/components/schemas/Nope names no schema");
  with(
      [](json& c) {
        c["paths"]["/v1/things/{id}"]["get"]["parameters"].push_back(
            {{"name", "id"}, {"in", "path"}});
      },
      "path parameter id is generated");
  fragments_.push_back(
      {"again.json", {{"paths", {{"/v1/things", fragments_[0].content["paths"]["/v1/things"]}}}}});
  EXPECT_TRUE(said("post /v1/things is also described by api/openapi/things.json"));
}

TEST(EmbeddedOpenApiFragments, EveryFileParses) {
  for (const auto& f : embedded_openapi_fragments()) {
    EXPECT_TRUE(f.content.is_object()) << f.name;
  }
}

}  // namespace openapi_fragments_test
}  // namespace gpurent::http
