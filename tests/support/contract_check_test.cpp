// Tests ContractCheck: the checker every ApiTest response passes through must itself fail on
// each kind of disagreement it claims to catch.
#include "tests/support/contract_check.h"

#include <gtest/gtest.h>

#include <functional>

namespace gpurent::testing {
namespace {

using nlohmann::json;

json document() {
  json rental = {
      {"type", "object"},
      {"required", {"id", "state", "price"}},
      {"properties",
       {{"id", {{"type", "string"}, {"pattern", "^rnt_"}}},
        {"state", {{"enum", {"scheduled", "active"}}}},
        {"price", {{"$ref", "#/components/schemas/Money"}}},
        {"note", {{"type", {"string", "null"}}}},
        {"start", {{"type", "string"}, {"format", "date-time"}}},
        {"labels", {{"type", "object"}, {"additionalProperties", {{"type", "string"}}}}},
        {"gpus", {{"type", "array"}, {"items", {{"type", "integer"}, {"minimum", 0}}}}}}}};
  json money = {{"type", "object"},
                {"required", {"amount_minor", "currency"}},
                {"properties",
                 {{"amount_minor", {{"type", "integer"}}}, {"currency", {{"type", "string"}}}}}};
  json error = {{"type", "object"},
                {"required", {"error"}},
                {"properties", {{"error", {{"type", "object"}}}}}};
  auto body = [](const char* ref) {
    return json{{"description", "x"},
                {"content", {{"application/json", {{"schema", {{"$ref", ref}}}}}}}};
  };
  return {{"paths",
           {{"/v1/rentals/{id}",
             {{"get",
               {{"responses",
                 {{"200", body("#/components/schemas/Rental")},
                  {"default", body("#/components/schemas/Error")}}}}},
              {"delete", {{"responses", {{"204", {{"description", "gone"}}}}}}}}},
            {"/metrics",
             {{"get",
               {{"responses",
                 {{"200",
                   {{"description", "text"},
                    {"content", {{"text/plain", {{"schema", {{"type", "string"}}}}}}}}}}}}}}}}},
          {"components", {{"schemas", {{"Rental", rental}, {"Money", money}, {"Error", error}}}}}};
}

json good() {
  return {{"id", "rnt_1"},
          {"state", "active"},
          {"price", {{"amount_minor", 100}, {"currency", "RUB"}}},
          {"note", nullptr},
          {"start", "2026-12-01T00:00:00Z"},
          {"labels", {{"a", "b"}}},
          {"gpus", {0, 1}}};
}

std::vector<std::string> check_get(const json& body, int status = 200) {
  ContractCheck c(document());
  return c.response("GET", "/v1/rentals/rnt_1?x=1", status, "application/json; charset=utf-8",
                    body.dump());
}

TEST(ContractCheck, AResponseThatMatchesPasses) {
  EXPECT_EQ(check_get(good()), std::vector<std::string>{});
}

TEST(ContractCheck, EachKindOfDisagreementIsReported) {
  struct Case {
    const char* what;
    std::function<void(json&)> change;
    const char* expect;
  };
  const std::vector<Case> cases = {
      {"missing required", [](json& j) { j.erase("state"); }, "required property state"},
      {"unlisted field", [](json& j) { j["secret"] = 1; }, "$.secret: a property the document"},
      {"wrong type", [](json& j) { j["note"] = 5; }, "$.note: expected"},
      {"not in enum", [](json& j) { j["state"] = "gone"; }, "is not one of"},
      {"pattern", [](json& j) { j["id"] = "nod_1"; }, "does not match"},
      {"nested $ref", [](json& j) { j["price"]["amount_minor"] = "1"; }, "$.price.amount_minor"},
      {"date-time", [](json& j) { j["start"] = "yesterday"; }, "RFC 3339"},
      {"map values", [](json& j) { j["labels"]["a"] = 1; }, "$.labels.a"},
      {"array items", [](json& j) { j["gpus"][1] = -1; }, "$.gpus[1]"},
  };
  for (const auto& c : cases) {
    json body = good();
    c.change(body);
    auto problems = check_get(body);
    ASSERT_EQ(problems.size(), 1u) << c.what;
    EXPECT_NE(problems[0].find(c.expect), std::string::npos) << c.what << ": " << problems[0];
  }
}

TEST(ContractCheck, StatusSelectsTheResponseAndErrorsUseTheirSchema) {
  EXPECT_EQ(check_get({{"error", {{"code", "not_found"}}}}, 404), std::vector<std::string>{});
  EXPECT_FALSE(check_get(good(), 404).empty());  // a rental where an error belongs
  ContractCheck c(document());
  EXPECT_EQ(c.response("DELETE", "/v1/rentals/rnt_1", 204, "", ""), std::vector<std::string>{});
  EXPECT_EQ(c.response("DELETE", "/v1/rentals/rnt_1", 200, "application/json", "{}").size(), 1u);
  EXPECT_EQ(c.response("DELETE", "/v1/rentals/rnt_1", 204, "", "{}").size(), 1u);
  EXPECT_EQ(c.response("GET", "/metrics", 200, "text/plain; version=0.0.4", "a 1"),
            std::vector<std::string>{});
  EXPECT_EQ(c.response("GET", "/metrics", 200, "application/json", "{}").size(), 1u);
  EXPECT_EQ(c.response("GET", "/v1/rentals/rnt_1", 200, "application/json", "not json").size(), 1u);
}

TEST(ContractCheck, AllOfListsTheUnionOfItsBranchesProperties) {
  ContractCheck c(document());
  nlohmann::json extended = {{"allOf",
                              {{{"$ref", "#/components/schemas/Money"}},
                               {{"type", "object"},
                                {"required", {"note"}},
                                {"properties", {{"note", {{"type", "string"}}}}}}}}};
  json ok = {{"amount_minor", 1}, {"currency", "RUB"}, {"note", "x"}};
  EXPECT_EQ(c.value(extended, ok), std::vector<std::string>{});
  json unlisted = ok;
  unlisted["secret"] = 1;
  auto problems = c.value(extended, unlisted);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0], "$.secret: a property the document does not list");
  json missing = ok;
  missing.erase("note");
  EXPECT_EQ(c.value(extended, missing).size(), 1u);
  json mistyped = ok;
  mistyped["amount_minor"] = "1";
  EXPECT_EQ(c.value(extended, mistyped).size(), 1u);
}

TEST(ContractCheck, PathsTheDocumentDoesNotListAreNotChecked) {
  ContractCheck c(document());
  EXPECT_TRUE(c.response("GET", "/v1/test/sleep", 200, "application/json", "{}").empty());
  EXPECT_TRUE(c.response("GET", "/v1/rentals", 200, "application/json", "{}").empty());
  EXPECT_TRUE(c.response("PUT", "/v1/rentals/x", 200, "application/json", "{}").empty());
}

}  // namespace
}  // namespace gpurent::testing
