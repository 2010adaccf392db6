// The API client over a scripted transport: what is retried, how often, with which pauses,
// and that every retry of a POST carries the invocation's one Idempotency-Key.
#include "cli/api_client.h"
#include "cli/exit_codes.h"

#include <gtest/gtest.h>

#include <deque>
#include <sstream>
#include <variant>

namespace gpurent::cli::api_client_test {

using std::chrono::milliseconds;

// Answers from a script: a response, or a connection failure.
class ScriptedTransport : public Transport {
 public:
  using Step = std::variant<HttpResponse, TransportError>;
  void then(Step s) { script_.push_back(std::move(s)); }
  HttpResponse send(const HttpRequest& r) override {
    seen.push_back(r);
    if (script_.empty()) throw TransportError("script ran out");
    Step s = std::move(script_.front());
    script_.pop_front();
    if (auto* e = std::get_if<TransportError>(&s)) throw *e;
    return std::get<HttpResponse>(s);
  }
  std::string header(std::size_t i, const std::string& name) const {
    for (const auto& [k, v] : seen.at(i).headers) {
      if (k == name) return v;
    }
    return "";
  }
  std::vector<HttpRequest> seen;

 private:
  std::deque<Step> script_;
};

HttpResponse answer(int status, const std::string& body, HeaderList headers = {}) {
  return HttpResponse{.status = status, .headers = std::move(headers), .body = body};
}
HttpResponse error_answer(int status, const std::string& code, HeaderList headers = {}) {
  return answer(status, R"({"error":{"code":")" + code + R"(","message":"m","details":{}}})",
                std::move(headers));
}

class CliApiClient : public ::testing::Test {
 protected:
  ApiClient client(int attempts = 5) {
    ClientHooks hooks{.sleep = [this](milliseconds d) { pauses.push_back(d); },
                      .random01 = [] { return 0.0; }};
    return ApiClient(transport, "gpr_secret_token", RetryPolicy{.max_attempts = attempts}, log,
                     "gpurent-cli-k1", hooks);
  }
  ScriptedTransport transport;
  std::ostringstream log;
  std::vector<milliseconds> pauses;
};

TEST_F(CliApiClient, ACutConnectionAndA503AreRetriedWithTheSameKey) {
  transport.then(TransportError("the connection ended before an answer"));
  transport.then(error_answer(503, "unavailable"));
  transport.then(error_answer(409, "conflict"));  // the first attempt still running
  transport.then(answer(201, R"({"id":"rnt_1"})"));
  auto api = client();
  auto r = api.post("/v1/rentals", {{"gpu_count", 2}});
  EXPECT_EQ(r.status, 201);
  EXPECT_EQ(r.json()["id"], "rnt_1");
  ASSERT_EQ(transport.seen.size(), 4u);
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(transport.header(i, "Idempotency-Key"), "gpurent-cli-k1") << i;
    EXPECT_EQ(transport.seen[i].body, R"({"gpu_count":2})") << "the same body each time";
    EXPECT_EQ(transport.header(i, "Authorization"), "Bearer gpr_secret_token");
  }
  EXPECT_EQ(pauses,
            (std::vector<milliseconds>{milliseconds(250), milliseconds(500), milliseconds(1000)}));
  EXPECT_EQ(api.last_attempts(), 4);
  EXPECT_NE(log.str().find("retrying in"), std::string::npos) << log.str();
  EXPECT_EQ(log.str().find("gpr_secret_token"), std::string::npos) << "never logged";
}

TEST_F(CliApiClient, RetryAfterIsWaitedOn429) {
  transport.then(error_answer(429, "rate_limited", {{"retry-after", "3"}}));
  transport.then(answer(200, "{}"));
  auto api = client();
  EXPECT_EQ(api.get("/v1/offers").status, 200);
  EXPECT_EQ(pauses, std::vector<milliseconds>{milliseconds(3000)});
}

TEST_F(CliApiClient, RetriesAreBoundedAndEndInExitCode8) {
  for (int i = 0; i < 3; ++i) transport.then(TransportError("connection refused"));
  auto api = client(3);
  try {
    api.get("/v1/rentals");
    ADD_FAILURE() << "no error";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.exit_code(), kExitServer);
    EXPECT_EQ(e.status(), 0);
    EXPECT_NE(std::string(e.what()).find("after 3 attempts"), std::string::npos) << e.what();
  }
  EXPECT_EQ(transport.seen.size(), 3u);
  EXPECT_EQ(pauses.size(), 2u);
}

TEST_F(CliApiClient, RefusalsAreNotRetriedAndCarryTheirExitCode) {
  struct Case {
    int status;
    const char* code;
    int exit;
  };
  for (const Case& c :
       {Case{402, "insufficient_funds", kExitNoFunds},
        Case{409, "insufficient_capacity", kExitNoCapacity},
        Case{401, "unauthenticated", kExitAuth}, Case{404, "not_found", kExitNotFound},
        Case{400, "invalid_request", kExitApiError}}) {
    transport.seen.clear();
    transport.then(error_answer(c.status, c.code, {{"retry-after", "60"}}));
    auto api = client();
    try {
      api.post("/v1/rentals", nlohmann::json::object());
      ADD_FAILURE() << c.code;
    } catch (const ApiError& e) {
      EXPECT_EQ(e.exit_code(), c.exit) << c.code;
      EXPECT_EQ(e.code(), c.code);
      EXPECT_EQ(e.status(), c.status);
    }
    EXPECT_EQ(transport.seen.size(), 1u) << c.code << " was retried";
  }
  EXPECT_TRUE(pauses.empty());
}

TEST_F(CliApiClient, ARejectedCertificateIsNotRetried) {
  transport.then(TransportError("certificate verify failed", true));
  auto api = client();
  EXPECT_THROW(api.get("/v1/rentals"), ApiError);
  EXPECT_EQ(transport.seen.size(), 1u);
}

TEST_F(CliApiClient, ASecondDifferentPostInOneInvocationGetsAKeyOfItsOwn) {
  transport.then(answer(200, "{}"));
  transport.then(answer(200, "{}"));
  transport.then(answer(200, "{}"));
  auto api = client();
  api.post("/v1/rentals/rnt_1/ssh-certificate", {{"public_key", "a"}});
  api.post("/v1/rentals/rnt_1/ssh-certificate", {{"public_key", "a"}});
  api.post("/v1/rentals/rnt_1/terminate", nlohmann::json::object());
  EXPECT_EQ(transport.header(0, "Idempotency-Key"), "gpurent-cli-k1");
  EXPECT_EQ(transport.header(1, "Idempotency-Key"), "gpurent-cli-k1") << "the same request";
  EXPECT_NE(transport.header(2, "Idempotency-Key"), "gpurent-cli-k1");
  EXPECT_EQ(transport.header(2, "Idempotency-Key").rfind("gpurent-cli-k1-", 0), 0u);
}

TEST_F(CliApiClient, ADeleteRetriedAfterALostAnswerFindsItsWorkDone) {
  transport.then(TransportError("the connection ended before an answer"));
  transport.then(error_answer(404, "not_found"));
  auto api = client();
  EXPECT_EQ(api.del("/v1/ssh-keys/key_1").status, 204);
  // A first attempt's 404 is a real one.
  transport.then(error_answer(404, "not_found"));
  EXPECT_THROW(api.del("/v1/ssh-keys/key_2"), ApiError);
}

TEST_F(CliApiClient, APutIsRetriedAsItStandsWithoutAKey) {
  transport.then(TransportError("the connection ended before an answer"));
  transport.then(answer(200, R"({"command":"save","timeout_s":60})"));
  auto api = client();
  auto r = api.put("/v1/rentals/rnt_1/checkpoint", {{"command", "save"}, {"timeout_s", 60}});
  EXPECT_EQ(r.json()["timeout_s"], 60);
  ASSERT_EQ(transport.seen.size(), 2u);
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(transport.seen[i].method, "PUT");
    EXPECT_EQ(transport.seen[i].body, R"({"command":"save","timeout_s":60})");
    EXPECT_EQ(transport.header(i, "Content-Type"), "application/json");
    EXPECT_EQ(transport.header(i, "Idempotency-Key"), "") << "a PUT needs none";
  }
}

TEST(CliIdempotencyKey, FreshAndWellFormedEachTime) {
  std::string a = new_idempotency_key();
  std::string b = new_idempotency_key();
  EXPECT_NE(a, b);
  EXPECT_EQ(a.size(), std::string("gpurent-cli-").size() + 32);
  EXPECT_EQ(a.rfind("gpurent-cli-", 0), 0u);
  EXPECT_EQ(url_encode("a b/c&d=é"), "a%20b%2Fc%26d%3D%C3%A9");
}

}  // namespace gpurent::cli::api_client_test
