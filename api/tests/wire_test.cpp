// Tests serialize_response: status line, framing headers, bodiless statuses and header safety.
#include "api/wire.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <regex>

namespace gpurent::http {
namespace wire_test {

using testing::ElementsAre;
using testing::HasSubstr;
using testing::Not;

// One serialised response split back into its parts.
struct Parsed {
  std::string status_line;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;

  std::vector<std::string> values(std::string_view name) const {
    std::vector<std::string> out;
    for (const auto& [k, v] : headers) {
      if (k == name) out.push_back(v);
    }
    return out;
  }
  bool has(std::string_view name) const { return !values(name).empty(); }
};

Parsed parse(const std::string& wire) {
  Parsed p;
  auto end = wire.find("\r\n\r\n");
  EXPECT_NE(end, std::string::npos) << wire;
  if (end == std::string::npos) return p;
  std::string head = wire.substr(0, end);
  p.body = wire.substr(end + 4);
  std::size_t pos = 0;
  bool first = true;
  while (pos <= head.size()) {
    auto eol = head.find("\r\n", pos);
    if (eol == std::string::npos) eol = head.size();
    std::string line = head.substr(pos, eol - pos);
    EXPECT_EQ(line.find_first_of("\r\n"), std::string::npos) << "bare CR or LF in " << line;
    if (first) {
      p.status_line = line;
      first = false;
    } else {
      auto colon = line.find(": ");
      EXPECT_NE(colon, std::string::npos) << line;
      if (colon != std::string::npos)
        p.headers.emplace_back(line.substr(0, colon), line.substr(colon + 2));
    }
    pos = eol + 2;
  }
  return p;
}

std::string serialize(const Response& r, bool keep_alive = true, bool head = false,
                      std::string_view request_id = "req_test") {
  std::string out;
  serialize_response(r, request_id, keep_alive, head, out);
  return out;
}

Response json_ok(std::string body, int status = 200) {
  Response r;
  r.status = status;
  r.body = std::move(body);
  return r;
}

TEST(SerializeResponse, StatusLineAndStandardHeaders) {
  Parsed p = parse(serialize(json_ok(R"({"id":"rnt_1"})", 201)));
  EXPECT_EQ(p.status_line, "HTTP/1.1 201 Created");
  EXPECT_THAT(p.values("Content-Type"), ElementsAre("application/json"));
  EXPECT_THAT(p.values("Content-Length"), ElementsAre("14"));
  EXPECT_THAT(p.values("X-Request-Id"), ElementsAre("req_test"));
  EXPECT_THAT(p.values("Server"), ElementsAre("gpurent"));
  ASSERT_EQ(p.values("Date").size(), 1u);
  EXPECT_TRUE(
      std::regex_match(p.values("Date")[0],
                       std::regex(R"([A-Z][a-z]{2}, \d\d [A-Z][a-z]{2} \d{4} \d\d:\d\d:\d\d GMT)")))
      << p.values("Date")[0];
  EXPECT_EQ(p.body, R"({"id":"rnt_1"})");
}

TEST(SerializeResponse, ContentLengthMatchesBodyBytes) {
  for (std::size_t n : {0u, 1u, 9u, 10u, 1000u, 70000u}) {
    Parsed p = parse(serialize(json_ok(std::string(n, 'x'))));
    EXPECT_THAT(p.values("Content-Length"), ElementsAre(std::to_string(n)));
    EXPECT_EQ(p.body.size(), n);
  }
}

TEST(SerializeResponse, UsesSharedBody) {
  Response r;
  r.content_type = "text/html; charset=utf-8";
  r.body = "ignored";
  r.shared_body = std::make_shared<const std::string>("<html></html>");
  Parsed p = parse(serialize(r));
  EXPECT_EQ(p.body, "<html></html>");
  EXPECT_THAT(p.values("Content-Length"), ElementsAre("13"));
  EXPECT_THAT(p.values("Content-Type"), ElementsAre("text/html; charset=utf-8"));
}

TEST(SerializeResponse, HeadKeepsLengthButSendsNoBody) {
  std::string wire = serialize(json_ok("0123456789"), true, /*head=*/true);
  EXPECT_EQ(wire.substr(wire.size() - 4), "\r\n\r\n");
  Parsed p = parse(wire);
  EXPECT_EQ(p.status_line, "HTTP/1.1 200 OK");
  EXPECT_THAT(p.values("Content-Length"), ElementsAre("10"));
  EXPECT_EQ(p.body, "");
}

TEST(SerializeResponse, NoContentAndNotModifiedCarryNoBody) {
  for (int status : {204, 304, 100}) {
    SCOPED_TRACE(status);
    Response r = json_ok("should not be sent", status);
    r.set_header("ETag", "\"abc\"");
    std::string wire = serialize(r);
    Parsed p = parse(wire);
    EXPECT_EQ(p.body, "");
    EXPECT_FALSE(p.has("Content-Length"));
    EXPECT_FALSE(p.has("Content-Type"));
    EXPECT_THAT(p.values("ETag"), ElementsAre("\"abc\""));
    EXPECT_THAT(p.values("X-Request-Id"), ElementsAre("req_test"));
    EXPECT_THAT(wire, Not(HasSubstr("should not be sent")));
  }
  EXPECT_EQ(parse(serialize(json_ok("", 204))).status_line, "HTTP/1.1 204 No Content");
  EXPECT_EQ(parse(serialize(json_ok("", 304))).status_line, "HTTP/1.1 304 Not Modified");
}

TEST(SerializeResponse, ErrorStatusesKeepTheirBody) {
  Parsed p = parse(serialize(json_ok(R"({"error":{}})", 404)));
  EXPECT_EQ(p.status_line, "HTTP/1.1 404 Not Found");
  EXPECT_EQ(p.body, R"({"error":{}})");
}

TEST(SerializeResponse, UnknownStatusStillSerialises) {
  EXPECT_EQ(parse(serialize(json_ok("", 299))).status_line, "HTTP/1.1 299 Unknown");
}

TEST(SerializeResponse, HandlerHeadersAreWrittenInOrder) {
  Response r = json_ok("{}");
  r.set_header("Retry-After", "30");
  r.set_header("Set-Cookie", "a=1");
  r.set_header("Set-Cookie", "b=2");
  Parsed p = parse(serialize(r));
  EXPECT_THAT(p.values("Retry-After"), ElementsAre("30"));
  EXPECT_THAT(p.values("Set-Cookie"), ElementsAre("a=1", "b=2"));
}

TEST(SerializeResponse, HeadersWithCrOrLfAreDropped) {
  Response r = json_ok("{}");
  r.set_header("X-Good", "1");
  r.set_header("X-Bad-Value", "a\r\nSet-Cookie: evil=1");
  r.set_header("X-Bad-Lf", "a\nInjected: 1");
  r.set_header("X-Bad-Cr", "a\rInjected: 1");
  r.set_header("X-Evil\r\nInjected", "v");
  r.set_header("X-Evil-Lf\nInjected", "v");
  r.set_header("X-Also-Good", "2");
  std::string wire = serialize(r);
  EXPECT_THAT(wire, Not(HasSubstr("evil")));
  EXPECT_THAT(wire, Not(HasSubstr("Injected")));
  EXPECT_THAT(wire, Not(HasSubstr("X-Bad")));
  EXPECT_THAT(wire, Not(HasSubstr("X-Evil")));
  Parsed p = parse(wire);
  EXPECT_THAT(p.values("X-Good"), ElementsAre("1"));
  EXPECT_THAT(p.values("X-Also-Good"), ElementsAre("2"));
  EXPECT_EQ(p.body, "{}");
  // Exactly the fixed headers plus the two good ones.
  std::vector<std::string> names;
  for (const auto& [k, v] : p.headers) names.push_back(k);
  EXPECT_THAT(names, ElementsAre("Server", "Date", "Content-Type", "Content-Length", "X-Request-Id",
                                 "X-Good", "X-Also-Good"));
}

TEST(SerializeResponse, ConnectionClose) {
  EXPECT_FALSE(parse(serialize(json_ok("{}"), /*keep_alive=*/true)).has("Connection"));
  EXPECT_THAT(parse(serialize(json_ok("{}"), /*keep_alive=*/false)).values("Connection"),
              ElementsAre("close"));
  Response closing = json_ok("{}");
  closing.close = true;
  EXPECT_THAT(parse(serialize(closing, /*keep_alive=*/true)).values("Connection"),
              ElementsAre("close"));
  EXPECT_THAT(parse(serialize(closing, /*keep_alive=*/false)).values("Connection"),
              ElementsAre("close"));
}

TEST(SerializeResponse, AppendsToExistingOutput) {
  std::string out = "previous response bytes";
  serialize_response(json_ok("{}"), "req_1", true, false, out);
  EXPECT_EQ(out.rfind("previous response bytes", 0), 0u);
  EXPECT_EQ(out.substr(23, 9), "HTTP/1.1 ");
  Parsed p = parse(out.substr(23));
  EXPECT_EQ(p.body, "{}");
}

TEST(SerializeResponse, PipelinedResponsesConcatenate) {
  std::string out;
  serialize_response(json_ok("first"), "req_1", true, false, out);
  std::size_t first_len = out.size();
  serialize_response(json_ok("second!"), "req_2", true, false, out);
  Parsed a = parse(out.substr(0, first_len));
  Parsed b = parse(out.substr(first_len));
  EXPECT_EQ(a.body, "first");
  EXPECT_EQ(b.body, "second!");
  EXPECT_THAT(b.values("X-Request-Id"), ElementsAre("req_2"));
}

}  // namespace wire_test
}  // namespace gpurent::http
