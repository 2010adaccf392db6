// Tests the plain HTTP types: method names, percent-decoding and query/path parameters.
#include "api/http_types.h"
#include "api/tests/map_headers.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <map>

namespace gpurent::http {
namespace http_types_test {

Request with_query(std::string_view query) {
  Request r;
  r.query = query;
  return r;
}

TEST(ParseMethod, KnownMethods) {
  EXPECT_EQ(parse_method("GET"), Method::kGet);
  EXPECT_EQ(parse_method("HEAD"), Method::kHead);
  EXPECT_EQ(parse_method("POST"), Method::kPost);
  EXPECT_EQ(parse_method("PUT"), Method::kPut);
  EXPECT_EQ(parse_method("PATCH"), Method::kPatch);
  EXPECT_EQ(parse_method("DELETE"), Method::kDelete);
  EXPECT_EQ(parse_method("OPTIONS"), Method::kOptions);
}

TEST(ParseMethod, MethodsAreCaseSensitive) {
  // RFC 9110: method names are case-sensitive.
  for (std::string_view other : {"get", "Get", "post", "TRACE", "CONNECT", "", "GET ", "GETX"}) {
    EXPECT_EQ(parse_method(other), Method::kOther) << other;
  }
}

TEST(ForwardedProto, OnlyTheLastHopsHttpsCounts) {
  EXPECT_TRUE(forwarded_proto_is_https("https"));
  EXPECT_TRUE(forwarded_proto_is_https(" HTTPS "));
  EXPECT_TRUE(forwarded_proto_is_https("http, https"));
  EXPECT_FALSE(forwarded_proto_is_https("https, http")) << "the proxy itself was reached by http";
  EXPECT_FALSE(forwarded_proto_is_https("http"));
  EXPECT_FALSE(forwarded_proto_is_https(""));
  EXPECT_FALSE(forwarded_proto_is_https("httpss"));
  EXPECT_FALSE(forwarded_proto_is_https("wss"));
}

TEST(MethodName, RoundTripsWithParseMethod) {
  for (auto m : {Method::kGet, Method::kHead, Method::kPost, Method::kPut, Method::kPatch,
                 Method::kDelete, Method::kOptions}) {
    EXPECT_EQ(parse_method(method_name(m)), m) << method_name(m);
  }
  EXPECT_EQ(method_name(Method::kOther), "OTHER");
}

TEST(PercentDecode, DecodesEscapes) {
  EXPECT_EQ(percent_decode("", false), "");
  EXPECT_EQ(percent_decode("plain", false), "plain");
  EXPECT_EQ(percent_decode("a%20b", false), "a b");
  EXPECT_EQ(percent_decode("%41%42c", false), "ABc");
  EXPECT_EQ(percent_decode("%2f%2F", false), "//");
  EXPECT_EQ(percent_decode("%D0%B6", false), "\xD0\xB6");
  EXPECT_EQ(percent_decode("%25", false), "%");
  EXPECT_EQ(percent_decode("%2525", false), "%25");  // decoded once only
  EXPECT_EQ(percent_decode("%ff", false), "\xff");
}

TEST(PercentDecode, PlusAsSpaceOnlyWhenAsked) {
  EXPECT_EQ(percent_decode("a+b", true), "a b");
  EXPECT_EQ(percent_decode("a+b", false), "a+b");
  EXPECT_EQ(percent_decode("a%2Bb", true), "a+b");
}

TEST(PercentDecode, RejectsMalformedEscapes) {
  for (std::string_view bad :
       {"%", "%2", "a%", "a%4", "%zz", "%g0", "%0g", "%%41", "% 41", "abc%2"}) {
    EXPECT_EQ(percent_decode(bad, false), std::nullopt) << bad;
    EXPECT_EQ(percent_decode(bad, true), std::nullopt) << bad;
  }
}

TEST(PercentDecode, RejectsNul) {
  EXPECT_EQ(percent_decode("a%00b", false), std::nullopt);
  EXPECT_EQ(percent_decode(std::string_view("a\0b", 3), false), std::nullopt);
}

TEST(PercentDecode, EscapeAtTheVeryEnd) {
  EXPECT_EQ(percent_decode("ab%41", false), "abA");
  EXPECT_EQ(percent_decode("%41", false), "A");
}

TEST(QueryParam, FindsDecodedValues) {
  Request r = with_query("limit=50&gpu_model=H100-SXM5-80GB&q=two%20words&p=a+b");
  EXPECT_EQ(r.query_param("limit"), "50");
  EXPECT_EQ(r.query_param("gpu_model"), "H100-SXM5-80GB");
  EXPECT_EQ(r.query_param("q"), "two words");
  EXPECT_EQ(r.query_param("p"), "a b");
}

TEST(QueryParam, AbsentIsNullopt) {
  EXPECT_EQ(with_query("a=1").query_param("b"), std::nullopt);
  EXPECT_EQ(with_query("").query_param("a"), std::nullopt);
  EXPECT_EQ(with_query("ab=1").query_param("a"), std::nullopt);
  EXPECT_EQ(with_query("a=1").query_param("ab"), std::nullopt);
}

TEST(QueryParam, FirstValueWins) {
  EXPECT_EQ(with_query("a=1&a=2").query_param("a"), "1");
}

TEST(QueryParam, KeyWithoutValueIsEmpty) {
  EXPECT_EQ(with_query("flag&x=1").query_param("flag"), "");
  EXPECT_EQ(with_query("x=1&flag=").query_param("flag"), "");
}

TEST(QueryParam, KeysAreDecodedToo) {
  EXPECT_EQ(with_query("my%20key=v").query_param("my key"), "v");
  EXPECT_EQ(with_query("my+key=v").query_param("my key"), "v");
}

TEST(QueryParam, ValueMayContainEquals) {
  EXPECT_EQ(with_query("cursor=abc==").query_param("cursor"), "abc==");
}

TEST(QueryParam, EmptyPairsAreSkipped) {
  EXPECT_EQ(with_query("&&a=1&").query_param("a"), "1");
}

TEST(QueryParam, MalformedValueIsNullopt) {
  EXPECT_EQ(with_query("a=%zz").query_param("a"), std::nullopt);
  EXPECT_EQ(with_query("a=%00").query_param("a"), std::nullopt);
}

TEST(PathParam, LooksUpCapturedParameters) {
  Request r;
  r.path_params = {{"org_id", "org_1"}, {"user_id", "usr_2"}};
  EXPECT_EQ(r.path_param("org_id"), "org_1");
  EXPECT_EQ(r.path_param("user_id"), "usr_2");
  EXPECT_EQ(r.path_param("id"), "");
}

TEST(Request, HeaderWithoutSourceIsEmpty) {
  Request r;
  EXPECT_EQ(r.header("Content-Type"), "");
}

TEST(Request, HeaderReadsTheSource) {
  MapHeaders headers(std::map<std::string, std::string>{{"Content-Type", "application/json"}});
  Request r;
  r.headers = &headers;
  EXPECT_EQ(r.header("content-type"), "application/json");
  EXPECT_EQ(r.header("Accept"), "");
}

TEST(Response, BodyViewPrefersSharedBody) {
  Response r;
  r.body = "own";
  EXPECT_EQ(r.body_view(), "own");
  r.shared_body = std::make_shared<const std::string>("shared");
  EXPECT_EQ(r.body_view(), "shared");
}

TEST(Response, Defaults) {
  Response r;
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.content_type, "application/json");
  EXPECT_FALSE(r.close);
  r.set_header("X-A", "1");
  ASSERT_EQ(r.headers.size(), 1u);
  EXPECT_EQ(r.headers[0].first, "X-A");
  EXPECT_EQ(r.headers[0].second, "1");
}

TEST(ReasonPhrase, StandardPhrases) {
  EXPECT_EQ(reason_phrase(200), "OK");
  EXPECT_EQ(reason_phrase(201), "Created");
  EXPECT_EQ(reason_phrase(204), "No Content");
  EXPECT_EQ(reason_phrase(304), "Not Modified");
  EXPECT_EQ(reason_phrase(400), "Bad Request");
  EXPECT_EQ(reason_phrase(404), "Not Found");
  EXPECT_EQ(reason_phrase(405), "Method Not Allowed");
  EXPECT_EQ(reason_phrase(413), "Payload Too Large");
  EXPECT_EQ(reason_phrase(429), "Too Many Requests");
  EXPECT_EQ(reason_phrase(503), "Service Unavailable");
  EXPECT_EQ(reason_phrase(299), "Unknown");
  EXPECT_EQ(reason_phrase(0), "Unknown");
}

}  // namespace http_types_test
}  // namespace gpurent::http
