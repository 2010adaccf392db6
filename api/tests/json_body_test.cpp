// Tests strict JSON body handling: parse_json_body (the field checks are core's
// JsonObjectReader, core/tests/json_reader_test.cpp).
#include "api/json_body.h"

#include "core/error.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cctype>
#include <functional>
#include <string>
#include <vector>

namespace gpurent::http {
namespace json_body_test {

using nlohmann::json;
using testing::HasSubstr;

class OneHeader final : public HeaderSource {
 public:
  OneHeader(std::string name, std::string value)
      : name_(std::move(name)), value_(std::move(value)) {}
  std::string_view get(std::string_view name) const override {
    if (name.size() != name_.size()) return {};
    for (std::size_t i = 0; i < name.size(); ++i) {
      if (std::tolower(static_cast<unsigned char>(name[i])) !=
          std::tolower(static_cast<unsigned char>(name_[i]))) {
        return {};
      }
    }
    return value_;
  }

 private:
  std::string name_, value_;
};

// Runs f and returns the gpurent::Error it throws; fails the test if it throws none.
Error caught(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << "expected a gpurent::Error";
  return Error(ErrorCode::kInternal, "none thrown");
}

class ParseJsonBodyTest : public testing::Test {
 protected:
  Request request(std::string_view body) {
    Request r;
    r.method = Method::kPost;
    r.body = body;
    r.headers = &headers_;
    return r;
  }
  void set_content_type(std::string value) {
    headers_ = OneHeader("Content-Type", std::move(value));
  }

  OneHeader headers_{"Content-Type", "application/json"};
};

TEST_F(ParseJsonBodyTest, ParsesAnObject) {
  json j = parse_json_body(request(R"({"gpu_count": 8, "name": "train"})"));
  EXPECT_EQ(j["gpu_count"], 8);
  EXPECT_EQ(j["name"], "train");
}

TEST_F(ParseJsonBodyTest, AcceptsContentTypeParametersAndCase) {
  for (std::string ct : {"application/json; charset=utf-8", "Application/JSON",
                         "application/json ;charset=UTF-8", "application/json;"}) {
    set_content_type(ct);
    EXPECT_NO_THROW(parse_json_body(request("{}"))) << ct;
  }
}

TEST_F(ParseJsonBodyTest, WrongContentTypeIsInvalidRequestNamingTheHeader) {
  for (std::string ct : {"text/plain", "application/x-www-form-urlencoded", "application/jsonx",
                         "application/json-patch+json", "json", "", "multipart/form-data"}) {
    SCOPED_TRACE(ct);
    set_content_type(ct);
    Error e = caught([&] { parse_json_body(request("{}")); });
    EXPECT_EQ(e.code(), ErrorCode::kInvalidRequest);
    EXPECT_EQ(e.details().value("field", ""), "Content-Type");
  }
}

TEST_F(ParseJsonBodyTest, MissingContentTypeIsInvalidRequest) {
  Request r = request("{}");
  r.headers = nullptr;
  Error e = caught([&] { parse_json_body(r); });
  EXPECT_EQ(e.code(), ErrorCode::kInvalidRequest);
  EXPECT_EQ(e.details().value("field", ""), "Content-Type");
}

TEST_F(ParseJsonBodyTest, EmptyBodyIsRejected) {
  Error e = caught([&] { parse_json_body(request("")); });
  EXPECT_EQ(e.code(), ErrorCode::kInvalidJson);
  EXPECT_THAT(e.what(), HasSubstr("empty"));
}

TEST_F(ParseJsonBodyTest, MalformedJsonReportsTheOffset) {
  //                                       0123456789
  Error e = caught([&] { parse_json_body(request(R"({"a": 1,})")); });
  EXPECT_EQ(e.code(), ErrorCode::kInvalidJson);
  ASSERT_TRUE(e.details().contains("offset"));
  EXPECT_EQ(e.details()["offset"], 9);  // nlohmann counts bytes from 1: the '}'
  EXPECT_THAT(e.what(), HasSubstr("byte 9"));
}

TEST_F(ParseJsonBodyTest, OffsetMovesWithTheError) {
  Error early = caught([&] { parse_json_body(request("x")); });
  Error late = caught([&] { parse_json_body(request(R"({"name": "ok", "n": tru})")); });
  EXPECT_LT(early.details()["offset"].get<int>(), late.details()["offset"].get<int>());
}

TEST_F(ParseJsonBodyTest, RejectsMalformedInputs) {
  for (std::string bad : {"{", "{\"a\":}", "{'a': 1}", "{\"a\": 1} trailing", "[1,2,]",
                          "{\"a\": NaN}", "{\"a\": 01}", "\"\xff\"", "{\"a\": \"\xC3\"}"}) {
    SCOPED_TRACE(bad);
    Error e = caught([&] { parse_json_body(request(bad)); });
    EXPECT_EQ(e.code(), ErrorCode::kInvalidJson);
    EXPECT_TRUE(e.details().contains("offset"));
  }
}

TEST_F(ParseJsonBodyTest, AnyJsonValueParses) {
  // Whether it must be an object is JsonObjectReader's call.
  EXPECT_EQ(parse_json_body(request("[1,2]")), json::array({1, 2}));
  EXPECT_EQ(parse_json_body(request("42")), 42);
}

// Numbers no double can hold are well-formed JSON: 400 invalid_request naming the field by
// its path, with the offset, never an exception that escapes as a 500.
TEST_F(ParseJsonBodyTest, OutOfRangeNumbersNameTheirField) {
  struct Row {
    std::string body;
    std::string field;
  };
  std::vector<Row> rows = {
      {R"({"x": 1e400})", "x"},
      {R"({"x": -1e400})", "x"},
      {R"({"x": 1E+400})", "x"},
      {R"({"x": 123.0e99999})", "x"},
      {R"({"name": "ok", "days": 1e400})", "days"},
      {R"({"spend_limit": {"amount_minor": 1e400, "currency": "RUB"}})",
       "spend_limit.amount_minor"},
      {R"({"items": [{"gpu_count": 8}, {"gpu_count": -1e400}]})", "items[1].gpu_count"},
      {R"({"scopes": ["a", [], {}, 1e400]})", "scopes[3]"},
      {R"({"a": [[1, 2], [3, 1e400]]})", "a[1][1]"},
      {R"({"a": {"b": {"c": [0, 1e400]}}})", "a.b.c[1]"},
      {R"([1, 2, 1e400])", "body[2]"},
      {R"(1e400)", "body"},
      {R"(-1e400)", "body"},
  };
  for (const auto& row : rows) {
    SCOPED_TRACE(row.body);
    Error e = caught([&] { parse_json_body(request(row.body)); });
    EXPECT_EQ(e.code(), ErrorCode::kInvalidRequest);
    EXPECT_EQ(e.details().value("field", ""), row.field);
    EXPECT_THAT(e.details().value("reason", ""), HasSubstr("out of range"));
    EXPECT_GT(e.details().value("offset", 0), 0);
    EXPECT_NO_THROW(e.to_json().dump());
  }
}

TEST_F(ParseJsonBodyTest, LargeButRepresentableNumbersParse) {
  EXPECT_EQ(parse_json_body(request(R"({"x": 1e308})"))["x"], 1e308);
  EXPECT_EQ(parse_json_body(request(R"({"x": 1e-400})"))["x"], 0.0);  // underflow is zero
  EXPECT_TRUE(
      parse_json_body(request(R"({"x": 123456789012345678901234567890})"))["x"].is_number_float());
}

TEST_F(ParseJsonBodyTest, FieldNamesInErrorsArePrintable) {
  // The key is valid JSON (escaped control characters) and long: the field named is bounded
  // and prints.
  std::string key = "\\u0001" + std::string(1000, 'k');
  Error e = caught([&] { parse_json_body(request("{\"" + key + "\": 1e400}")); });
  std::string field = e.details().value("field", "");
  EXPECT_LE(field.size(), 256u);
  EXPECT_EQ(field.substr(0, 4), "%01k");
}

std::string nested(int depth, const std::string& open, const std::string& close,
                   const std::string& inner = "1") {
  std::string s;
  for (int i = 0; i < depth; ++i) s += open;
  s += inner;
  for (int i = 0; i < depth; ++i) s += close;
  return s;
}

TEST_F(ParseJsonBodyTest, NestingUpTo64LevelsParses) {
  EXPECT_NO_THROW(parse_json_body(request(nested(64, "[", "]"))));
  EXPECT_NO_THROW(parse_json_body(request(nested(64, "{\"a\":", "}"))));
  EXPECT_NO_THROW(parse_json_body(request("{\"a\":" + nested(63, "[", "]") + "}")));
  // Brackets inside strings do not count.
  EXPECT_NO_THROW(parse_json_body(request("{\"a\": \"" + std::string(1000, '[') + "\"}")));
  EXPECT_NO_THROW(parse_json_body(request(
      R"({"a": "\"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["})")));
}

TEST_F(ParseJsonBodyTest, DeeperNestingNamesTheTopLevelField) {
  struct Row {
    std::string body;
    std::string field;
  };
  std::vector<Row> rows = {
      {nested(65, "[", "]"), "body"},
      {nested(100000, "[", "]"), "body"},
      {nested(65, "{\"a\":", "}"), "a"},
      {"{\"ok\": 1, \"email\": " + nested(100000, "[", "]") + "}", "email"},
      {"{\"items\": [{\"x\": " + nested(70, "{\"y\":", "}") + "}]}", "items"},
  };
  for (const auto& row : rows) {
    SCOPED_TRACE(row.body.substr(0, 40));
    Error e = caught([&] { parse_json_body(request(row.body)); });
    EXPECT_EQ(e.code(), ErrorCode::kInvalidRequest);
    EXPECT_EQ(e.details().value("field", ""), row.field);
    EXPECT_THAT(e.details().value("reason", ""), HasSubstr("64 levels"));
  }
}

TEST_F(ParseJsonBodyTest, DeepButMalformedIsInvalidJson) {
  // Unclosed, or broken before the depth limit is reached: a syntax error, with its offset.
  for (std::string bad :
       {"{\"a\": x" + std::string(100, '['), std::string("[1,]") + std::string(100, '[')}) {
    Error e = caught([&] { parse_json_body(request(bad)); });
    EXPECT_EQ(e.code(), ErrorCode::kInvalidJson) << bad.substr(0, 20);
    EXPECT_TRUE(e.details().contains("offset"));
  }
}

}  // namespace json_body_test
}  // namespace gpurent::http
