// The HTTP layer end to end against a real gpurentd: routing, errors, limits, timeouts,
// pipelining, static files, metrics and the OpenAPI document.
#include "tests/support/http_client.h"
#include "tests/support/pg_harness.h"
#include "tests/support/server_process.h"
#include "tests/support/wait_for.h"

#include <gtest/gtest.h>

#include <atomic>
#include <latch>
#include <thread>
#include <vector>

namespace gpurent::testing::http_server_e2e {

using namespace std::chrono_literals;

// One server for the read-only cases of this file, with small limits and timeouts.
class HttpServerE2E : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    db_ = new TestDatabase();
    server_ = new ServerProcess({.database_url = db_->url(),
                                 .flags = {"--http_body_limit=1KiB", "--http_header_limit=4KiB",
                                           "--http_read_timeout=700ms", "--http_idle_timeout=1s"}});
  }
  static void TearDownTestSuite() {
    delete server_;
    delete db_;
  }
  static int port() { return server_->port(); }
  static std::string logs() { return server_->logs(); }

  static TestDatabase* db_;
  static ServerProcess* server_;
};
TestDatabase* HttpServerE2E::db_ = nullptr;
ServerProcess* HttpServerE2E::server_ = nullptr;

TEST_F(HttpServerE2E, HealthzAnswersWithARequestId) {
  auto r = http_request(port(), "GET", "/healthz");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.json()["status"], "ok");
  EXPECT_EQ(r.header("content-type"), "application/json");
  EXPECT_EQ(r.header("x-request-id").rfind("req_", 0), 0u);
}

TEST_F(HttpServerE2E, AcceptsAWellFormedRequestIdAndReplacesABadOne) {
  auto r = http_request(port(), "GET", "/healthz", "", {{"X-Request-Id", "ci-run-42.step-7"}});
  EXPECT_EQ(r.header("x-request-id"), "ci-run-42.step-7");
  auto bad = http_request(port(), "GET", "/healthz", "", {{"X-Request-Id", std::string(300, 'a')}});
  EXPECT_EQ(bad.header("x-request-id").rfind("req_", 0), 0u);
  auto spaces = http_request(port(), "GET", "/healthz", "", {{"X-Request-Id", "a b"}});
  EXPECT_EQ(spaces.header("x-request-id").rfind("req_", 0), 0u);
}

TEST_F(HttpServerE2E, RequestIdAppearsInTheAccessLog) {
  http_request(port(), "GET", "/v1/definitely-missing", "", {{"X-Request-Id", "trace-me-123"}});
  // The access log line is written just before the response; allow a moment for the file.
  wait_for([] { return logs().find("trace-me-123") != std::string::npos; });
  std::string log = logs();
  auto at = log.find("\"request_id\":\"trace-me-123\"");
  ASSERT_NE(at, std::string::npos) << log;
  auto line_end = log.find('\n', at);
  EXPECT_NE(log.substr(at, line_end - at).find("404"), std::string::npos);
}

TEST_F(HttpServerE2E, UnknownRouteIs404InTheContractFormat) {
  auto r = http_request(port(), "GET", "/v1/no-such-thing");
  EXPECT_EQ(r.status, 404);
  EXPECT_EQ(r.json()["error"]["code"], "not_found");
  EXPECT_TRUE(r.json()["error"]["message"].is_string());
  EXPECT_TRUE(r.json()["error"]["details"].is_object());
}

TEST_F(HttpServerE2E, WrongMethodIs405WithAllow) {
  auto r = http_request(port(), "DELETE", "/healthz");
  EXPECT_EQ(r.status, 405);
  EXPECT_EQ(r.json()["error"]["code"], "method_not_allowed");
  EXPECT_EQ(r.header("allow"), "GET, HEAD");
}

TEST_F(HttpServerE2E, HeadHasTheLengthButNoBody) {
  RawConnection c(port());
  ASSERT_TRUE(c.send(build_request("HEAD", "/healthz") + build_request("GET", "/healthz")));
  auto head = c.read_response(5s, true);
  EXPECT_EQ(head.status, 200);
  EXPECT_EQ(head.header("content-length"), "15");
  EXPECT_EQ(head.body, "");
  auto get = c.read_response();  // would fail to parse if HEAD had leaked a body
  EXPECT_EQ(get.body, R"({"status":"ok"})");
}

TEST_F(HttpServerE2E, MalformedJsonIs400InvalidJson) {
  auto r = http_request(port(), "POST", "/v1/admin/test-clock", R"({"advance_seconds": )",
                        {{"Content-Type", "application/json"}});
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.json()["error"]["code"], "invalid_json");
}

TEST_F(HttpServerE2E, UnknownAndMistypedFieldsAre400NamingTheField) {
  auto unknown =
      http_request(port(), "POST", "/v1/admin/test-clock", R"({"advance_seconds": 0, "extra": 1})",
                   {{"Content-Type", "application/json"}});
  EXPECT_EQ(unknown.status, 400);
  EXPECT_EQ(unknown.json()["error"]["code"], "invalid_request");
  EXPECT_EQ(unknown.json()["error"]["details"]["field"], "extra");
  auto mistyped =
      http_request(port(), "POST", "/v1/admin/test-clock", R"({"advance_seconds": "ten"})",
                   {{"Content-Type", "application/json"}});
  EXPECT_EQ(mistyped.status, 400);
  EXPECT_EQ(mistyped.json()["error"]["details"]["field"], "advance_seconds");
  auto not_json = http_request(port(), "POST", "/v1/admin/test-clock", "advance_seconds=1",
                               {{"Content-Type", "application/x-www-form-urlencoded"}});
  EXPECT_EQ(not_json.status, 400);
}

TEST_F(HttpServerE2E, OversizedBodyIs413ByContentLength) {
  std::string body(2048, 'x');
  auto r = http_request(port(), "POST", "/v1/admin/test-clock", body,
                        {{"Content-Type", "application/json"}});
  EXPECT_EQ(r.status, 413);
  EXPECT_EQ(r.json()["error"]["code"], "payload_too_large");
  EXPECT_EQ(r.header("connection"), "close");
}

TEST_F(HttpServerE2E, OversizedChunkedBodyIs413) {
  RawConnection c(port());
  std::string chunk(1500, 'x');
  char size[16];
  std::snprintf(size, sizeof size, "%zx", chunk.size());
  ASSERT_TRUE(
      c.send("POST /v1/admin/test-clock HTTP/1.1\r\nHost: x\r\nContent-Type: "
             "application/json\r\nTransfer-Encoding: chunked\r\n\r\n" +
             std::string(size) + "\r\n" + chunk + "\r\n0\r\n\r\n"));
  EXPECT_EQ(c.read_response().status, 413);
}

TEST_F(HttpServerE2E, OversizedHeadersAre431) {
  auto r = http_request(port(), "GET", "/healthz", "", {{"X-Filler", std::string(8000, 'h')}});
  EXPECT_EQ(r.status, 431);
}

TEST_F(HttpServerE2E, GarbageIs400AndClosed) {
  RawConnection c(port());
  ASSERT_TRUE(c.send("THIS IS NOT HTTP\r\n\r\n"));
  auto r = c.read_response();
  EXPECT_EQ(r.status, 400);
  EXPECT_TRUE(c.closed_within(3s));
}

TEST_F(HttpServerE2E, HalfARequestIsCutOffAfterTheReadTimeout) {
  RawConnection c(port());
  ASSERT_TRUE(c.send("GET /healthz HTTP/1.1\r\nHost: x\r\n"));  // no blank line: never ends
  auto start = std::chrono::steady_clock::now();
  std::string received;
  EXPECT_TRUE(c.closed_within(5s, &received)) << "the server must not wait forever";
  EXPECT_GE(std::chrono::steady_clock::now() - start, 500ms) << "but it waits for the timeout";
  EXPECT_EQ(received, "") << "nothing is answered to an incomplete request";
}

TEST_F(HttpServerE2E, AnIdleKeepAliveConnectionIsClosed) {
  RawConnection c(port());
  ASSERT_TRUE(c.send(build_request("GET", "/healthz")));
  EXPECT_EQ(c.read_response().status, 200);
  EXPECT_TRUE(c.closed_within(5s));
}

TEST_F(HttpServerE2E, KeepAliveServesManyRequestsOnOneConnection) {
  RawConnection c(port());
  for (int i = 0; i < 20; ++i) {
    ASSERT_TRUE(c.send(build_request("GET", "/healthz")));
    EXPECT_EQ(c.read_response().status, 200);
  }
}

TEST_F(HttpServerE2E, PipelinedResponsesComeBackInRequestOrder) {
  RawConnection c(port());
  // A slow database request first, then fast ones: answers must still come in order.
  ASSERT_TRUE(c.send(build_request("GET", "/v1/test/sleep?ms=300") +
                     build_request("GET", "/v1/nothing-here") + build_request("GET", "/healthz") +
                     build_request("DELETE", "/healthz")));
  auto first = c.read_response();
  EXPECT_EQ(first.status, 200);
  EXPECT_EQ(first.json()["slept_ms"], 300);
  EXPECT_EQ(c.read_response().status, 404);
  EXPECT_EQ(c.read_response().status, 200);
  EXPECT_EQ(c.read_response().status, 405);
}

TEST_F(HttpServerE2E, ExpectContinueGetsAnInterimResponse) {
  RawConnection c(port());
  ASSERT_TRUE(
      c.send("POST /v1/admin/test-clock HTTP/1.1\r\nHost: x\r\nContent-Type: "
             "application/json\r\nContent-Length: 22\r\nExpect: 100-continue\r\n\r\n"));
  auto interim = c.read_response();
  EXPECT_EQ(interim.status, 100);
  ASSERT_TRUE(c.send(R"({"advance_seconds": 0})"));
  EXPECT_EQ(c.read_response().status, 200);
}

TEST_F(HttpServerE2E, ServesThePanelWithTypesAndCacheHeaders) {
  auto index = http_request(port(), "GET", "/");
  EXPECT_EQ(index.status, 200);
  EXPECT_EQ(index.header("content-type"), "text/html; charset=utf-8");
  EXPECT_EQ(index.header("cache-control"), "no-cache");
  EXPECT_FALSE(index.header("etag").empty());
  EXPECT_NE(index.header("content-security-policy").find("default-src 'self'"), std::string::npos);
  auto again = http_request(port(), "GET", "/", "", {{"If-None-Match", index.header("etag")}});
  EXPECT_EQ(again.status, 304);
  EXPECT_EQ(again.body, "");
  auto script = http_request(port(), "GET", "/js/app.js");
  EXPECT_EQ(script.status, 200);
  EXPECT_EQ(script.header("content-type"), "text/javascript; charset=utf-8");
  EXPECT_EQ(script.header("cache-control"), "no-cache");
  // The page names the release's copy, which a browser may keep: a deploy renames it.
  auto at = index.body.find("src=\"/r/");
  ASSERT_NE(at, std::string::npos) << index.body;
  auto name = index.body.substr(at + 5, index.body.find('"', at + 5) - at - 5);
  EXPECT_EQ(name.substr(name.size() - 10), "/js/app.js");
  auto kept = http_request(port(), "GET", name);
  EXPECT_EQ(kept.status, 200);
  EXPECT_EQ(kept.body, script.body);
  EXPECT_EQ(kept.header("cache-control"), "public, max-age=31536000, immutable");
}

TEST_F(HttpServerE2E, PathTraversalNeverLeavesTheWebRoot) {
  for (const char* target :
       {"/../../../../etc/passwd", "/%2e%2e/%2e%2e/%2e%2e/etc/passwd",
        "/..%2f..%2f..%2fetc%2fpasswd", "/%2e%2e%2f%2e%2e%2fetc/passwd", "/..\\..\\etc\\passwd",
        "//etc/passwd", "/./../CMakeLists.txt", "/../CMakeLists.txt", "/%00index.html",
        "/index.html%00.js", "/....//....//etc/passwd"}) {
    auto r = http_request(port(), "GET", target);
    EXPECT_EQ(r.status, 404) << target;
    EXPECT_EQ(r.body.find("root:"), std::string::npos) << target;
  }
}

TEST_F(HttpServerE2E, MetricsCountRequestsByRouteAndStatus) {
  http_request(port(), "GET", "/healthz");
  http_request(port(), "GET", "/v1/missing-for-metrics");
  auto r = http_request(port(), "GET", "/metrics");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.header("content-type").rfind("text/plain", 0), 0u);
  EXPECT_NE(
      r.body.find(R"(gpurent_http_requests_total{route="/healthz",method="GET",status="200"})"),
      std::string::npos);
  EXPECT_NE(
      r.body.find(R"(gpurent_http_requests_total{route="unmatched",method="GET",status="404"})"),
      std::string::npos);
  EXPECT_NE(
      r.body.find(R"(gpurent_http_request_duration_seconds_bucket{route="/healthz",le="+Inf"})"),
      std::string::npos);
  EXPECT_NE(r.body.find("gpurent_db_pool_size "), std::string::npos);
  EXPECT_NE(r.body.find("gpurent_db_pool_in_use "), std::string::npos);
  EXPECT_NE(r.body.find("gpurent_build_info{version="), std::string::npos);
}

TEST_F(HttpServerE2E, OpenApiDocumentsTheOperationalRoutes) {
  auto r = http_request(port(), "GET", "/v1/openapi.json");
  EXPECT_EQ(r.status, 200);
  auto doc = r.json();
  EXPECT_EQ(doc["openapi"], "3.1.0");
  for (const char* path : {"/healthz", "/readyz", "/metrics", "/v1/openapi.json"}) {
    EXPECT_TRUE(doc["paths"].contains(path)) << path;
    EXPECT_TRUE(doc["paths"][path].contains("get")) << path;
  }
  EXPECT_FALSE(doc["paths"].contains("/v1/test/sleep")) << "test-only routes stay undocumented";
}

TEST_F(HttpServerE2E, TestClockMovesForwardOnlyThroughTheTestRoute) {
  auto before = http_request(port(), "GET", "/v1/admin/test-clock").json();
  auto moved = http_request(port(), "POST", "/v1/admin/test-clock", R"({"advance_seconds": 86400})",
                            {{"Content-Type", "application/json"}});
  ASSERT_EQ(moved.status, 200) << moved.body;
  EXPECT_EQ(moved.json()["offset_seconds"].get<long long>(),
            before["offset_seconds"].get<long long>() + 86400);
  EXPECT_GT(moved.json()["now"].get<std::string>(), before["now"].get<std::string>());
  auto backwards =
      http_request(port(), "POST", "/v1/admin/test-clock", R"({"advance_seconds": -1})",
                   {{"Content-Type", "application/json"}});
  EXPECT_EQ(backwards.status, 400);
  EXPECT_EQ(backwards.json()["error"]["details"]["field"], "advance_seconds");
}

TEST(TestRoutes, AbsentWithoutTestMode) {
  TestDatabase db;
  ServerProcess server({.database_url = db.url(), .test_mode = false});
  EXPECT_EQ(http_request(server.port(), "GET", "/v1/admin/test-clock").status, 404);
  EXPECT_EQ(http_request(server.port(), "GET", "/v1/test/sleep?ms=1").status, 404);
}

TEST_F(HttpServerE2E, ManyClientsAtOnce) {
  std::vector<std::thread> clients;
  std::atomic<int> ok{0};
  constexpr int kClients = 16;
  std::latch go(kClients);  // all connected at once
  for (int t = 0; t < kClients; ++t) {
    clients.emplace_back([&] {
      go.arrive_and_wait();
      RawConnection c(port());
      for (int i = 0; i < 25; ++i) {
        const char* target = i % 5 == 0 ? "/readyz" : "/healthz";
        if (!c.send(build_request("GET", target))) return;
        if (c.read_response().status == 200) ++ok;
      }
    });
  }
  for (auto& t : clients) t.join();
  EXPECT_EQ(ok.load(), kClients * 25);
}

}  // namespace gpurent::testing::http_server_e2e
