// Commands over a scripted API: waiting long-polls GET …/wait (never a tight loop) and ends
// in the documented exit codes; rent sends the booking once with its key and prints it.
#include "cli/commands.h"
#include "cli/api_client.h"
#include "cli/exit_codes.h"

#include <gtest/gtest.h>

#include <deque>
#include <sstream>

namespace gpurent::cli::commands_test {

using nlohmann::json;
using std::chrono::milliseconds;

// Answers each request with the next rental state; every answer takes `per_call` of the
// fake clock, as a long-poll that waited would.
class RentalServer : public Transport {
 public:
  // What gpurentd sends as `reachable_states` (scheduler/rental_state.h, tested there).
  static json reachable(const std::string& state) {
    const json after_start = {"active", "releasing", "ended", "failed", "interrupted"};
    if (state == "pending" || state == "scheduled") {
      return {"scheduled", "provisioning", "active", "releasing",
              "ended",     "cancelled",    "failed", "interrupted"};
    }
    if (state == "provisioning") return after_start;
    if (state == "active") return {"releasing", "ended", "interrupted"};
    if (state == "releasing") return {"ended"};
    return json::array();
  }

  std::deque<std::string> states;
  std::vector<HttpRequest> seen;
  std::chrono::steady_clock::time_point now{};
  std::chrono::seconds per_call{30};

  HttpResponse send(const HttpRequest& r) override {
    seen.push_back(r);
    now += per_call;
    std::string state = states.front();  // the last one stays
    if (states.size() > 1) states.pop_front();
    json rental{{"id", "rnt_1"},
                {"state", state},
                {"reachable_states", reachable(state)},
                {"gpu_model", "H100-SXM5-80GB"},
                {"gpu_count", 2},
                {"days", 1}};
    return HttpResponse{.status = r.method == "POST" ? 201 : 200, .body = rental.dump()};
  }
};

class CliCommands : public ::testing::Test {
 protected:
  int run(const std::vector<std::string>& argv) {
    args_ = parse_args(argv);
    ApiClient api(server_, "gpr_t", RetryPolicy{}, err_, "gpurent-cli-k",
                  ClientHooks{.sleep = [](milliseconds) {}, .random01 = [] { return 0.0; }});
    CommandContext ctx{.args = args_, .api = api, .out = out_, .err = err_, .json = true};
    ctx.now = [this] { return server_.now; };
    return run_command(ctx);
  }
  RentalServer server_;
  ParsedArgs args_;
  std::ostringstream out_;
  std::ostringstream err_;
};

TEST_F(CliCommands, WaitLongPollsTheServerUntilActive) {
  server_.states = {"scheduled", "provisioning", "provisioning", "active"};
  EXPECT_EQ(run({"wait", "rnt_1", "--timeout", "10m"}), kExitOk) << err_.str();
  ASSERT_EQ(server_.seen.size(), 4u);
  EXPECT_EQ(server_.seen[0].target, "/v1/rentals/rnt_1");
  for (std::size_t i = 1; i < server_.seen.size(); ++i) {
    EXPECT_EQ(server_.seen[i].target, "/v1/rentals/rnt_1/wait?state=active&timeout_s=60");
    // The read waits longer than the server holds the request.
    EXPECT_GT(server_.seen[i].read_timeout, milliseconds(60'000));
  }
  EXPECT_EQ(json::parse(out_.str())["state"], "active");
  // Each change once on stderr, not each poll.
  EXPECT_NE(err_.str().find("rnt_1: scheduled (0 s)"), std::string::npos) << err_.str();
  EXPECT_NE(err_.str().find("rnt_1: provisioning (30 s)"), std::string::npos) << err_.str();
  EXPECT_EQ(err_.str().find("provisioning (60 s)"), std::string::npos) << err_.str();
  EXPECT_NE(err_.str().find("rnt_1: active (90 s)"), std::string::npos) << err_.str();
}

TEST_F(CliCommands, WaitGivesUpAtTheTimeoutWithExit6AndAsksNoLongerThanItHasLeft) {
  server_.states = {"provisioning"};
  server_.per_call = std::chrono::seconds(60);
  EXPECT_EQ(run({"wait", "rnt_1", "--timeout", "100s"}), kExitTimeout);
  // 100 s from the first answer: a poll of 60 s, then one of the 40 s left, then done.
  ASSERT_EQ(server_.seen.size(), 3u);
  EXPECT_EQ(server_.seen[1].target, "/v1/rentals/rnt_1/wait?state=active&timeout_s=60");
  EXPECT_EQ(server_.seen[2].target, "/v1/rentals/rnt_1/wait?state=active&timeout_s=40");
  EXPECT_NE(err_.str().find("timed out after 100 s"), std::string::npos) << err_.str();
  EXPECT_EQ(json::parse(out_.str())["state"], "provisioning") << "printed all the same";
}

TEST_F(CliCommands, ARentalThatFailsWhileWaitedForIsExit1) {
  for (const char* final_state : {"failed", "cancelled", "interrupted", "ended", "releasing"}) {
    server_.seen.clear();
    server_.states = {"provisioning", final_state};
    out_.str("");
    EXPECT_EQ(run({"wait", "rnt_1"}), kExitApiError) << final_state;
    EXPECT_EQ(server_.seen.size(), 2u) << final_state << ": no more polls";
  }
  // Waiting for the end itself succeeds there.
  server_.states = {"releasing", "ended"};
  EXPECT_EQ(run({"wait", "rnt_1", "--state", "ended"}), kExitOk);
}

TEST_F(CliCommands, RentBooksOnceWithTheKeyThenWaits) {
  server_.states = {"scheduled", "active"};
  EXPECT_EQ(run({"rent", "--gpu-model", "H100-SXM5-80GB", "--gpu-count", "2", "--days", "1",
                 "--image", "img_1", "--wait"}),
            kExitOk)
      << err_.str();
  ASSERT_EQ(server_.seen.size(), 2u);
  EXPECT_EQ(server_.seen[0].method, "POST");
  EXPECT_EQ(server_.seen[0].target, "/v1/rentals");
  bool keyed = false;
  for (const auto& [k, v] : server_.seen[0].headers)
    keyed |= k == "Idempotency-Key" && v == "gpurent-cli-k";
  EXPECT_TRUE(keyed);
  EXPECT_EQ(server_.seen[1].target, "/v1/rentals/rnt_1/wait?state=active&timeout_s=60");
  EXPECT_THROW(run({"rent", "--gpu-model", "m", "--gpu-count", "1", "--days", "1", "--image", "i",
                    "--timeout", "5m"}),
               UsageError)
      << "--timeout without --wait";
}

}  // namespace gpurent::cli::commands_test
