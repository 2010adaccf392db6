// Tests the edge check on path parameters, query strings and data headers, alone and
// through invoke(), which runs it before every handler.
#include "api/request_input.h"
#include "api/tests/map_headers.h"

#include "api/dispatch.h"
#include "core/error.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace gpurent::http {
namespace request_input_test {

struct EncodedCase {
  std::string raw;
  TextProblem problem;
};

TEST(EncodedTextProblem, Table) {
  std::vector<EncodedCase> cases = {
      {"", TextProblem::kNone},
      {"key_0123456789012345678901", TextProblem::kNone},
      {"a%20b%2Fc", TextProblem::kNone},
      {"%D0%B6", TextProblem::kNone},                  // ж
      {"%F0%9F%9A%80", TextProblem::kNone},            // U+1F680
      {"\xD0\xB6", TextProblem::kNone},                // raw UTF-8 in the target
      {"%27%3B--", TextProblem::kNone},                // ';--
      {"..", TextProblem::kNone},                      // only static files care
      {"%", TextProblem::kBadEscape},                  // cut off
      {"a%4", TextProblem::kBadEscape},                // cut off
      {"%zz", TextProblem::kBadEscape},                // not hex
      {"%g0", TextProblem::kBadEscape},                // not hex
      {"% 41", TextProblem::kBadEscape},               // a space inside
      {"%00", TextProblem::kNul},                      // NUL
      {"a%00b", TextProblem::kNul},                    // NUL inside
      {"%ED%A0%80", TextProblem::kBadUtf8},            // a surrogate, U+D800
      {"%ED%BF%BF", TextProblem::kBadUtf8},            // a surrogate, U+DFFF
      {"%C0%AF", TextProblem::kBadUtf8},               // overlong '/'
      {"%C0%80", TextProblem::kBadUtf8},               // overlong NUL
      {"%E0%80%AF", TextProblem::kBadUtf8},            // overlong '/', three bytes
      {"%F0%80%80%AF", TextProblem::kBadUtf8},         // overlong '/', four bytes
      {"%F4%90%80%80", TextProblem::kBadUtf8},         // past U+10FFFF
      {"%FF", TextProblem::kBadUtf8},                  // never in UTF-8
      {"%80", TextProblem::kBadUtf8},                  // a lone continuation
      {"%D0", TextProblem::kBadUtf8},                  // cut-off sequence
      {"%D0x", TextProblem::kBadUtf8},                 // broken by ASCII
      {"\xFF", TextProblem::kBadUtf8},                 // a raw byte in the target
      {"ok%D0%B6%ED%A0%80ok", TextProblem::kBadUtf8},  // after valid text
      {"%ED%A0%80%00", TextProblem::kBadUtf8},         // the first problem wins
  };
  for (const auto& c : cases) {
    EXPECT_EQ(encoded_text_problem(c.raw, false), c.problem) << c.raw;
    EXPECT_EQ(encoded_text_problem(c.raw, true), c.problem) << c.raw;
  }
}

TEST(EncodedTextProblem, PlusIsASpaceOnlyInQueries) {
  EXPECT_EQ(encoded_text_problem("a+b", true), TextProblem::kNone);
  EXPECT_EQ(encoded_text_problem("a+b", false), TextProblem::kNone);
}

TEST(TextProblem, HeaderValues) {
  EXPECT_EQ(text_problem(""), TextProblem::kNone);
  EXPECT_EQ(text_problem("Bearer gpr_abc"), TextProblem::kNone);
  EXPECT_EQ(text_problem("caf\xC3\xA9"), TextProblem::kNone);
  EXPECT_EQ(text_problem("%ED%A0%80"), TextProblem::kNone);  // not decoded: it is text
  EXPECT_EQ(text_problem("\xED\xA0\x80"), TextProblem::kBadUtf8);
  EXPECT_EQ(text_problem("key\xFF"), TextProblem::kBadUtf8);
  EXPECT_EQ(text_problem(std::string("a\0b", 3)), TextProblem::kNul);
}

TEST(ProblemReason, NamesEachProblem) {
  EXPECT_EQ(problem_reason(TextProblem::kBadEscape), "is not correctly percent-encoded");
  EXPECT_EQ(problem_reason(TextProblem::kNul), "must not contain a NUL byte");
  EXPECT_EQ(problem_reason(TextProblem::kBadUtf8), "must be valid UTF-8");
}

class CheckRequestInputTest : public testing::Test {
 protected:
  // The field a refusal names; nullopt when the request passes.
  std::optional<std::string> refused_field(const std::string& pattern, const std::string& target,
                                           std::map<std::string, std::string> headers = {}) {
    Route route;
    route.pattern = pattern;
    MapHeaders h(std::move(headers));
    Request r = request(target, h);
    try {
      check_request_input(route, r);
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidRequest) << target;
      EXPECT_TRUE(e.details().contains("reason")) << target;
      // Whatever was sent, the error prints as JSON.
      EXPECT_NO_THROW(e.to_json().dump()) << target;
      return e.details().value("field", "");
    }
    return std::nullopt;
  }
  static Request request(std::string_view target, const HeaderSource& headers) {
    Request r;
    r.method = Method::kGet;
    r.target = target;
    auto q = target.find('?');
    r.path = target.substr(0, q);
    r.query = q == std::string_view::npos ? std::string_view() : target.substr(q + 1);
    r.headers = &headers;
    return r;
  }
};

TEST_F(CheckRequestInputTest, PathParameters) {
  struct Row {
    std::string pattern, target;
    std::optional<std::string> field;
  };
  std::vector<Row> rows = {
      {"/v1/api-tokens/{id}", "/v1/api-tokens/tok_0123456789012345678901", std::nullopt},
      {"/v1/api-tokens/{id}", "/v1/api-tokens/%27%3B--", std::nullopt},
      {"/v1/api-tokens/{id}", "/v1/api-tokens/%D0%B6", std::nullopt},
      {"/v1/api-tokens/{id}", "/v1/api-tokens/%ED%A0%80", "id"},
      {"/v1/api-tokens/{id}", "/v1/api-tokens/%C0%AF", "id"},
      {"/v1/api-tokens/{id}", "/v1/api-tokens/%FF", "id"},
      {"/v1/api-tokens/{id}", "/v1/api-tokens/a%00", "id"},
      {"/v1/api-tokens/{id}", "/v1/api-tokens/%ZZ", "id"},
      {"/v1/api-tokens/{id}", "/v1/api-tokens/%", "id"},
      {"/v1/api-tokens/{id}", "/v1/api-tokens/\xED\xA0\x80", "id"},
      {"/v1/members/{user_id}", "/v1/members/%ED%A0%80", "user_id"},
      // The first bad parameter is named.
      {"/v1/orgs/{org_id}/members/{user_id}", "/v1/orgs/org_1/members/%FF", "user_id"},
      {"/v1/orgs/{org_id}/members/{user_id}", "/v1/orgs/%FF/members/%FE", "org_id"},
      // Literal segments are the router's business, not checked here.
      {"/v1/admin/nodes/{id}/drain", "/v1/admin/nodes/nod_1/drain", std::nullopt},
      {"/v1/me", "/v1/me", std::nullopt},
  };
  for (const auto& row : rows) {
    EXPECT_EQ(refused_field(row.pattern, row.target), row.field) << row.target;
  }
}

TEST_F(CheckRequestInputTest, QueryNamesAndValues) {
  struct Row {
    std::string query;
    std::optional<std::string> field;
  };
  std::vector<Row> rows = {
      {"", std::nullopt},
      {"limit=5&cursor=abc", std::nullopt},
      {"limit=5&limit=6", std::nullopt},  // repeats are for the list's own check
      {"unknown=%D0%B6", std::nullopt},   // unknown names are for the list's own check
      {"q=a+b&&&", std::nullopt},
      {"flag", std::nullopt},
      {"=", std::nullopt},
      {"limit=5%00", "limit"},
      {"limit=%ZZ", "limit"},
      {"limit=5%", "limit"},
      {"cursor=%ED%A0%80", "cursor"},
      {"cursor=%C0%AF", "cursor"},
      {"cursor=\xFF", "cursor"},
      {"limit=1&state=%FF", "state"},
      // A bad name is printed as decoded with its bad bytes escaped, or as sent when it
      // cannot be decoded.
      {"%ED%A0%80=1", "%ED%A0%80"},
      {"a%FF=1", "a%FF"},
      {"a%00=1", "a%00"},
      {"%ZZ=1", "%ZZ"},
      {"\xFF\xFE", "%FF%FE"},
      {"%ED%A0%80" + std::string(200, 'x') + "=1", "%ED%A0%80" + std::string(55, 'x')},
  };
  for (const auto& row : rows) {
    EXPECT_EQ(refused_field("/v1/ssh-keys", "/v1/ssh-keys?" + row.query), row.field) << row.query;
  }
}

TEST_F(CheckRequestInputTest, DataHeaders) {
  for (std::string_view name : kDataHeaders) {
    std::string header(name);
    EXPECT_EQ(refused_field("/v1/me", "/v1/me", {{header, "plain value"}}), std::nullopt);
    EXPECT_EQ(refused_field("/v1/me", "/v1/me", {{header, "caf\xC3\xA9"}}), std::nullopt);
    EXPECT_EQ(refused_field("/v1/me", "/v1/me", {{header, "\xED\xA0\x80"}}), header);
    EXPECT_EQ(refused_field("/v1/me", "/v1/me", {{header, "Bearer \xC0\xAF"}}), header);
    EXPECT_EQ(refused_field("/v1/me", "/v1/me", {{header, std::string("a\0b", 3)}}), header);
  }
  // Headers that are not read as data pass whatever they hold.
  EXPECT_EQ(refused_field("/v1/me", "/v1/me", {{"User-Agent", "\xFF"}}), std::nullopt);
}

TEST_F(CheckRequestInputTest, OnlyTheSessionCookieIsChecked) {
  const std::string session = "gpurent_session=" + std::string(64, 'a');
  struct Row {
    std::string cookie;
    std::optional<std::string> field;
  };
  std::vector<Row> rows = {
      {session, std::nullopt},
      {"theme=dark; " + session, std::nullopt},
      // Another application's cookie on the same domain, in whatever bytes it chose.
      {"legacy=caf\xE9; " + session, std::nullopt},
      {"other=\xED\xA0\x80", std::nullopt},
      {"gpurent_session=\xFF", "Cookie"},
      {"theme=dark; gpurent_session=\xED\xA0\x80", "Cookie"},
      {"gpurent_session=" + std::string(62, 'a') + "\xC3", "Cookie"},
  };
  for (const auto& row : rows) {
    EXPECT_EQ(refused_field("/v1/me", "/v1/me", {{"Cookie", row.cookie}}), row.field) << row.cookie;
  }
}

TEST_F(CheckRequestInputTest, PathIsCheckedBeforeQueryAndHeaders) {
  EXPECT_EQ(refused_field("/v1/ssh-keys/{id}", "/v1/ssh-keys/%FF?limit=%FF",
                          {{"Idempotency-Key", "\xFF"}}),
            "id");
  EXPECT_EQ(refused_field("/v1/ssh-keys/{id}", "/v1/ssh-keys/key_1?limit=%FF",
                          {{"Idempotency-Key", "\xFF"}}),
            "limit");
}

// invoke() runs the check before the handler, for every route, and answers in the
// contract's format.
TEST(InvokeChecksInput, RefusedBeforeTheHandlerRuns) {
  int calls = 0;
  Route route;
  route.method = Method::kDelete;
  route.pattern = "/v1/api-tokens/{id}";
  route.handler = [&calls](const Request&, const Principal&) {
    ++calls;
    return Response{};
  };
  MapHeaders headers({});
  for (std::string target :
       {"/v1/api-tokens/%ED%A0%80", "/v1/api-tokens/tok_1?x=%C0%80", "/v1/api-tokens/%00"}) {
    Request r;
    r.method = Method::kDelete;
    r.target = target;
    auto q = r.target.find('?');
    r.path = r.target.substr(0, q);
    r.query = q == std::string_view::npos ? std::string_view() : r.target.substr(q + 1);
    r.headers = &headers;
    Response resp = invoke(route, r);
    EXPECT_EQ(resp.status, 400) << target;
    auto body = nlohmann::json::parse(resp.body);
    EXPECT_EQ(body["error"]["code"], "invalid_request") << target;
    EXPECT_TRUE(body["error"]["details"]["field"].is_string()) << target;
    EXPECT_TRUE(body["error"]["message"].is_string()) << target;
  }
  EXPECT_EQ(calls, 0);
  Request ok;
  ok.method = Method::kDelete;
  ok.target = ok.path = "/v1/api-tokens/tok_1";
  ok.headers = &headers;
  EXPECT_EQ(invoke(route, ok).status, 200);
  EXPECT_EQ(calls, 1);
}

// A handler's error that echoes bytes which are not UTF-8 still prints (replacement
// characters), never an exception from the JSON writer.
TEST(InvokeChecksInput, ErrorsWithBadBytesStillPrint) {
  Route route;
  route.pattern = "/v1/x";
  route.handler = [](const Request&, const Principal&) -> Response {
    throw Error::invalid_field("bad \xFF name", "is not known");
  };
  Request r;
  r.target = r.path = "/v1/x";
  Response resp = invoke(route, r);
  EXPECT_EQ(resp.status, 400);
  EXPECT_NO_THROW(nlohmann::json::parse(resp.body));
}

}  // namespace request_input_test
}  // namespace gpurent::http
