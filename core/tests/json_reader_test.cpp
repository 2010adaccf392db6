// Tests JsonObjectReader: an object required, typed getters with ranges and lengths, null as
// absent, and finish() refusing every field no getter asked for, each error naming its field.
#include "core/json_reader.h"

#include "core/error.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>
#include <limits>
#include <string>
#include <vector>

namespace gpurent {
namespace json_reader_test {

using nlohmann::json;
using testing::HasSubstr;

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

TEST(JsonObjectReader, RequiresAnObject) {
  for (json value : {json::array(), json(1), json("s"), json(nullptr), json(true)}) {
    Error e = caught([&] { JsonObjectReader reader(value); });
    EXPECT_EQ(e.code(), ErrorCode::kInvalidRequest) << value;
    EXPECT_EQ(e.details().value("field", ""), "body") << value;
  }
}

TEST(JsonObjectReader, NestedNonObjectNamesThePrefix) {
  json value = json::array();
  Error e = caught([&] { JsonObjectReader reader(value, "spec."); });
  EXPECT_EQ(e.details().value("field", ""), "spec");
}

TEST(JsonObjectReader, ReadsTypedFields) {
  json value = json::parse(R"({"count": 4, "name": "job", "dry_run": true, "note": null})");
  JsonObjectReader r(value);
  EXPECT_EQ(r.required_int("count", 1, 8), 4);
  EXPECT_EQ(r.required_string("name", 10), "job");
  EXPECT_EQ(r.optional_bool("dry_run"), true);
  EXPECT_EQ(r.optional_string("note", 10), std::nullopt);  // null reads as absent
  EXPECT_EQ(r.optional_int("days", 1, 30), std::nullopt);
  EXPECT_NO_THROW(r.finish());
}

TEST(JsonObjectReader, MissingRequiredFieldIsNamed) {
  json value = json::object();
  JsonObjectReader r(value, "spec.");
  Error e = caught([&] { r.required_int("gpu_count", 1, 8); });
  EXPECT_EQ(e.code(), ErrorCode::kInvalidRequest);
  EXPECT_EQ(e.details()["field"], "spec.gpu_count");
  EXPECT_THAT(e.details()["reason"].get<std::string>(), HasSubstr("required"));
  Error s = caught([&] { r.required_string("name", 10); });
  EXPECT_EQ(s.details()["field"], "spec.name");
}

TEST(JsonObjectReader, NullRequiredFieldIsMissing) {
  json value = json::parse(R"({"name": null})");
  JsonObjectReader r(value);
  Error e = caught([&] { r.required_string("name", 10); });
  EXPECT_EQ(e.details()["field"], "name");
}

TEST(JsonObjectReader, WrongTypesAreNamed) {
  json value = json::parse(
      R"({"as_string": "5", "as_float": 5.5, "as_bool": true, "num": 1, "obj": {}, "str": "x"})");
  struct Case {
    std::string field;
    std::function<void(JsonObjectReader&)> read;
  };
  std::vector<Case> cases = {
      {"as_string", [](JsonObjectReader& r) { r.required_int("as_string", 0, 10); }},
      {"as_float", [](JsonObjectReader& r) { r.required_int("as_float", 0, 10); }},
      {"as_bool", [](JsonObjectReader& r) { r.optional_int("as_bool", 0, 10); }},
      {"num", [](JsonObjectReader& r) { r.required_string("num", 10); }},
      {"obj", [](JsonObjectReader& r) { r.optional_string("obj", 10); }},
      {"str", [](JsonObjectReader& r) { r.optional_bool("str"); }},
      {"num", [](JsonObjectReader& r) { r.optional_bool("num"); }},
  };
  for (const auto& c : cases) {
    JsonObjectReader r(value);
    Error e = caught([&] { c.read(r); });
    EXPECT_EQ(e.code(), ErrorCode::kInvalidRequest) << c.field;
    EXPECT_EQ(e.details()["field"], c.field);
    EXPECT_THAT(e.details()["reason"].get<std::string>(), HasSubstr("must be"));
  }
}

TEST(JsonObjectReader, IntegerRange) {
  json value = json::parse(R"({"low": 0, "min": 1, "max": 8, "high": 9, "neg": -3})");
  JsonObjectReader r(value);
  EXPECT_EQ(r.required_int("min", 1, 8), 1);
  EXPECT_EQ(r.required_int("max", 1, 8), 8);
  EXPECT_EQ(r.required_int("neg", -5, 5), -3);
  Error low = caught([&] { r.required_int("low", 1, 8); });
  EXPECT_EQ(low.details()["field"], "low");
  EXPECT_THAT(low.details()["reason"].get<std::string>(), HasSubstr("between 1 and 8"));
  Error high = caught([&] { r.optional_int("high", 1, 8); });
  EXPECT_EQ(high.details()["field"], "high");
}

TEST(JsonObjectReader, HugeUnsignedIsOutOfRangeNotWrapped) {
  json value = json::parse(R"({"n": 18446744073709551615, "m": 9223372036854775808})");
  JsonObjectReader r(value);
  constexpr auto kMax = std::numeric_limits<std::int64_t>::max();
  EXPECT_EQ(caught([&] { r.required_int("n", -1, kMax); }).details()["field"], "n");
  EXPECT_EQ(caught([&] { r.required_int("m", 0, kMax); }).details()["field"], "m");
  EXPECT_EQ(caught([&] { r.required_int("m", 0, 100); }).details()["field"], "m");
}

TEST(JsonObjectReader, StringMaxLengthInBytes) {
  json value = json::parse(R"({"exact": "abcd", "long": "abcde", "utf8": "жж"})");
  JsonObjectReader r(value);
  EXPECT_EQ(r.required_string("exact", 4), "abcd");
  Error e = caught([&] { r.required_string("long", 4); });
  EXPECT_EQ(e.details()["field"], "long");
  EXPECT_THAT(e.details()["reason"].get<std::string>(), HasSubstr("4"));
  EXPECT_EQ(r.required_string("utf8", 4), "жж");
  EXPECT_EQ(caught([&] { r.required_string("utf8", 3); }).details()["field"], "utf8");
}

TEST(JsonObjectReader, FinishRejectsUnreadFields) {
  json value = json::parse(R"({"name": "a", "nmae": "typo"})");
  JsonObjectReader r(value, "spec.");
  r.required_string("name", 10);
  Error e = caught([&] { r.finish(); });
  EXPECT_EQ(e.code(), ErrorCode::kInvalidRequest);
  EXPECT_EQ(e.details()["field"], "spec.nmae");
  EXPECT_THAT(e.what(), HasSubstr("spec.nmae"));
}

TEST(JsonObjectReader, FinishCountsFieldsAskedForEvenWhenNull) {
  json value = json::parse(R"({"a": null})");
  JsonObjectReader r(value);
  EXPECT_EQ(r.optional_int("a", 0, 1), std::nullopt);
  EXPECT_NO_THROW(r.finish());
}

TEST(JsonObjectReader, FinishOnEmptyObject) {
  json value = json::object();
  JsonObjectReader r(value);
  EXPECT_NO_THROW(r.finish());
}

}  // namespace json_reader_test
}  // namespace gpurent
