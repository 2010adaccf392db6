// Tests the strict RFC 3339 parser and the query-string reader of list routes (audit log,
// admin org list): what they accept, and that every refusal names the parameter.
#include "api/handlers/query_params.h"

#include "core/error.h"

#include <gtest/gtest.h>

#include <functional>

namespace gpurent::http {
namespace query_params_test {

using std::chrono::microseconds;
using std::chrono::seconds;

long long micros_of(std::string_view text) {
  auto t = parse_rfc3339(text);
  EXPECT_TRUE(t) << text;
  return t ? t->time_since_epoch().count() : -1;
}

TEST(AuditQueryRfc3339, AcceptsTheFormsOfTheRfc) {
  EXPECT_EQ(micros_of("1970-01-01T00:00:00Z"), 0);
  EXPECT_EQ(micros_of("2026-12-01T00:00:00Z"), 1796083200LL * 1000000);
  EXPECT_EQ(micros_of("2026-12-01t00:00:00z"), 1796083200LL * 1000000);
  EXPECT_EQ(micros_of("2026-12-01T03:00:00+03:00"), 1796083200LL * 1000000);
  EXPECT_EQ(micros_of("2026-11-30T23:30:00-00:30"), 1796083200LL * 1000000);
  EXPECT_EQ(micros_of("1970-01-01T00:00:00.5Z"), 500000);
  EXPECT_EQ(micros_of("1970-01-01T00:00:00.000001Z"), 1);
  EXPECT_EQ(micros_of("1970-01-01T00:00:00.123456789Z"), 123456) << "finer than µs is dropped";
  EXPECT_EQ(micros_of("2024-02-29T00:00:00Z"), 1709164800LL * 1000000) << "a leap day";
  EXPECT_EQ(micros_of("2000-02-29T00:00:00Z"), 951782400LL * 1000000);
  EXPECT_LT(micros_of("1969-12-31T23:59:59Z"), 0);
  EXPECT_TRUE(parse_rfc3339("0001-01-01T00:00:00Z"));
  EXPECT_TRUE(parse_rfc3339("9999-12-31T23:59:59.999999Z"));
}

TEST(AuditQueryRfc3339, RefusesEverythingElse) {
  for (std::string_view bad : {"",
                               "2026",
                               "2026-12-01",
                               "2026-12-01T00:00",
                               "2026-12-01T00:00:00",
                               "2026-12-01 00:00:00Z",
                               "2026-12-01T00:00:00 03:00",
                               "2026-12-01T00:00:00+0300",
                               "2026-12-01T00:00:00+03",
                               "2026-12-01T00:00:00+24:00",
                               "2026-12-01T00:00:00+03:60",
                               "2026-12-01T00:00:00.Z",
                               "2026-12-01T00:00:00.1234567890Z",
                               "2026-12-01T00:00:00ZZ",
                               "2026-12-01T00:00:00Z ",
                               " 2026-12-01T00:00:00Z",
                               "0000-01-01T00:00:00Z",
                               "2026-00-01T00:00:00Z",
                               "2026-13-01T00:00:00Z",
                               "2026-12-00T00:00:00Z",
                               "2026-12-32T00:00:00Z",
                               "2026-02-29T00:00:00Z",
                               "1900-02-29T00:00:00Z",
                               "2026-04-31T00:00:00Z",
                               "2026-12-01T24:00:00Z",
                               "2026-12-01T00:60:00Z",
                               "2026-12-01T00:00:60Z",
                               "+2026-12-01T00:00:00Z",
                               "2026-1-01T00:00:00Z",
                               "２０２６-12-01T00:00:00Z",
                               "yesterday"}) {
    EXPECT_FALSE(parse_rfc3339(bad)) << bad;
  }
}

Request with_query(std::string_view query) {
  Request r;
  r.query = query;
  return r;
}

std::string field_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidRequest);
    EXPECT_NO_THROW(e.to_json().dump());
    return e.details().value("field", "");
  }
  return "<accepted>";
}

TEST(AuditQueryParams, ReadsKnownParametersDecoded) {
  Request r = with_query("action=user.login&since=2026-01-01T00%3A00%3A00%2B03%3A00&limit=7&&");
  QueryParams q(r, {"action", "since", "limit", "cursor"});
  EXPECT_EQ(q.text("action"), "user.login");
  EXPECT_EQ(q.limit(), 7);
  EXPECT_FALSE(q.cursor());
  ASSERT_TRUE(q.timestamp("since"));
  EXPECT_EQ(q.timestamp("since")->time_since_epoch(), microseconds(seconds(1767225600 - 3 * 3600)));
  Request empty = with_query("");
  EXPECT_EQ(QueryParams(empty, {"limit"}).limit(), kDefaultPageLimit);
}

TEST(AuditQueryParams, TimesOutsideTheStoredRangeAreClamped) {
  Request r = with_query("since=0001-01-01T00:00:00Z");
  QueryParams q(r, {"since"});
  EXPECT_EQ(q.timestamp("since")->time_since_epoch().count(), 0);
  Request late = with_query("until=9999-12-31T23:59:59-01:00");
  auto until = QueryParams(late, {"until"}).timestamp("until");
  ASSERT_TRUE(until);
  EXPECT_EQ(*until, *parse_rfc3339("9999-12-31T23:59:59.999999Z"));
}

TEST(AuditQueryParams, RefusalsNameTheParameter) {
  auto construct = [](std::string_view query) {
    return [query] {
      Request r = with_query(query);
      QueryParams q(r, {"limit", "cursor", "since", "org_id"});
    };
  };
  EXPECT_EQ(field_of(construct("nope=1")), "nope");
  EXPECT_EQ(field_of(construct("limit=1&limit=2")), "limit");
  EXPECT_EQ(field_of(construct("since=%zz")), "since");
  EXPECT_EQ(field_of(construct("%zz=1")), "%zz");
  EXPECT_EQ(field_of(construct(std::string(1000, 'k').append("=1"))), std::string(64, 'k'));
  // An echoed name is cut on a character boundary and shows bytes that are not UTF-8 as %XX,
  // so the error still prints as JSON.
  EXPECT_EQ(field_of(construct(std::string(63, 'k').append("%D0%B6=1"))), std::string(63, 'k'));
  EXPECT_EQ(field_of(construct("%FF=1")), "%FF");
  EXPECT_EQ(field_of(construct("a%ED%A0%80=1")), "a%ED%A0%80");

  auto read = [](std::string_view query, auto fn) {
    return [query, fn] {
      Request r = with_query(query);
      QueryParams q(r, {"limit", "cursor", "since", "org_id"});
      fn(q);
    };
  };
  auto limit = [](const QueryParams& q) { q.limit(); };
  for (std::string_view bad : {"limit=", "limit=0", "limit=501", "limit=-1", "limit=+5", "limit=5x",
                               "limit=%205", "limit=99999999999999999999"}) {
    EXPECT_EQ(field_of(read(bad, limit)), "limit") << bad;
  }
  EXPECT_EQ(field_of(read("limit=500", limit)), "<accepted>");
  EXPECT_EQ(field_of(read("limit=1", limit)), "<accepted>");
  auto since = [](const QueryParams& q) { q.timestamp("since"); };
  EXPECT_EQ(field_of(read("since=2026-01-01T00:00:00+03:00", since)), "since") << "'+' is a space";
  EXPECT_EQ(field_of(read("since=", since)), "since");
  auto org = [](const QueryParams& q) { q.id("org_id", "org"); };
  EXPECT_EQ(field_of(read("org_id=usr_0123456789012345678901", org)), "org_id");
  EXPECT_EQ(field_of(read("org_id=org_0123456789012345678901", org)), "<accepted>");
  auto cursor = [](const QueryParams& q) { q.cursor(); };
  EXPECT_EQ(field_of(read("cursor=", cursor)), "cursor");
}

TEST(PathIds, AnIdOfTheRightKindIsReturnedAndAnythingElseIsNotFound) {
  Request r;
  r.path_params = {{"id", "rnt_0123456789abcdefghijkl"}, {"user_id", "org_0123456789abcdefghijkl"}};
  EXPECT_EQ(path_id(r, "id", "rnt", "No such rental."), "rnt_0123456789abcdefghijkl");
  for (auto [param, prefix] : {std::pair{"user_id", "usr"}, std::pair{"id", "org"}}) {
    try {
      path_id(r, param, prefix, "No such thing.");
      ADD_FAILURE() << param << " read as " << prefix;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kNotFound);
      EXPECT_STREQ(e.what(), "No such thing.");
    }
  }
  r.path_params = {{"id", "rnt_short"}};
  EXPECT_THROW(path_id(r, "id", "rnt", "No such rental."), Error);
}

}  // namespace query_params_test
}  // namespace gpurent::http
