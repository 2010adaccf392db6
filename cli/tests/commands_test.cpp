// Commands over a scripted API: waiting long-polls GET …/wait (never a tight loop) and ends
// in the documented exit codes; rent sends the booking once with its key and prints it.
#include "cli/commands.h"
#include "cli/api_client.h"
#include "cli/exit_codes.h"

#include <gtest/gtest.h>

#include <deque>
#include <map>
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

TEST_F(CliCommands, RebootPostsOnceThenWaitsUntilActiveAgain) {
  server_.states = {"provisioning", "provisioning", "active"};
  EXPECT_EQ(run({"reboot", "rnt_1", "--wait", "--timeout", "5m"}), kExitOk) << err_.str();
  ASSERT_EQ(server_.seen.size(), 3u);
  EXPECT_EQ(server_.seen[0].method, "POST");
  EXPECT_EQ(server_.seen[0].target, "/v1/rentals/rnt_1/reboot");
  EXPECT_EQ(server_.seen[1].target, "/v1/rentals/rnt_1/wait?state=active&timeout_s=60");
  EXPECT_EQ(json::parse(out_.str())["state"], "active");
  EXPECT_NE(err_.str().find("Rebooting rnt_1: provisioning"), std::string::npos) << err_.str();
  // Without --wait: the one request, the rental as it answered.
  server_.seen.clear();
  server_.states = {"provisioning"};
  out_.str("");
  EXPECT_EQ(run({"reboot", "rnt_1"}), kExitOk);
  EXPECT_EQ(server_.seen.size(), 1u);
  EXPECT_EQ(json::parse(out_.str())["state"], "provisioning");
  EXPECT_THROW(run({"reboot", "rnt_1", "--timeout", "5m"}), UsageError) << "--timeout, no --wait";
}

// Answers each request from a table of "METHOD target" → (status, body), and keeps them.
class ScriptedApi : public Transport {
 public:
  std::map<std::string, std::pair<int, json>> answers;
  std::vector<HttpRequest> seen;

  HttpResponse send(const HttpRequest& r) override {
    seen.push_back(r);
    auto it = answers.find(r.method + " " + r.target);
    if (it == answers.end()) {
      return HttpResponse{.status = 404,
                          .body = R"({"error":{"code":"not_found","message":"No such rental.",
                                      "details":{}}})"};
    }
    return HttpResponse{.status = it->second.first, .body = it->second.second.dump()};
  }
};

class CliScriptedCommands : public ::testing::Test {
 protected:
  int run(const std::vector<std::string>& argv, bool as_json = false) {
    out_.str("");
    err_.str("");
    api_.seen.clear();
    args_ = parse_args(argv);
    ApiClient api(api_, "gpr_t", RetryPolicy{.max_attempts = 1}, err_, "gpurent-cli-k",
                  ClientHooks{.sleep = [](milliseconds) {}, .random01 = [] { return 0.0; }});
    CommandContext ctx{.args = args_, .api = api, .out = out_, .err = err_, .json = as_json};
    return run_command(ctx);
  }
  // The exit code of the ApiError the command ends in (-1 when it ends otherwise).
  int refused(const std::vector<std::string>& argv) {
    try {
      run(argv);
    } catch (const ApiError& e) {
      return e.exit_code();
    }
    return -1;
  }

  ScriptedApi api_;
  ParsedArgs args_;
  std::ostringstream out_;
  std::ostringstream err_;
};

json notice(const std::string& id, json choices, json choice, json applied_at) {
  return {{"id", id},
          {"rental_id", "rnt_1"},
          {"kind", "maintenance"},
          {"message", "Node nd_1 of rental rnt_1 is under maintenance."},
          {"effective_at", "2027-01-10T08:00:00Z"},
          {"ends_at", "2027-01-11T08:00:00Z"},
          {"maintenance_id", "mnt_1"},
          {"created_at", "2027-01-01T08:00:00Z"},
          {"choices", std::move(choices)},
          {"respond_by", "2027-01-10T08:00:00Z"},
          {"choice", choice},
          {"chosen_at", choice.is_null() ? json() : json("2027-01-02T09:00:00Z")},
          {"applied_at", std::move(applied_at)}};
}

TEST_F(CliScriptedCommands, NoticesShowTheChoicesAwaitedAndTheAnswersGiven) {
  const json all = json::array({"other_node", "shift", "cancel"});
  api_.answers["GET /v1/notices"] = {
      200,
      {{"items", json::array({notice("ntc_waits", all, nullptr, nullptr),
                              notice("ntc_answered", all, "shift", "2027-01-02T09:00:00Z"),
                              notice("ntc_lapsed", all, nullptr, "2027-01-10T08:00:00Z"),
                              notice("ntc_told", json::array(), nullptr, nullptr)})}}};
  EXPECT_EQ(run({"notices"}), kExitOk);
  const std::string out = out_.str();
  auto line_of = [&](const std::string& id) {
    auto at = out.find(id);
    return at == std::string::npos ? "" : out.substr(at, out.find('\n', at) - at);
  };
  EXPECT_NE(line_of("ntc_waits").find("choose other_node, shift, cancel by 2027-01-10T08:00:00Z"),
            std::string::npos)
      << out;
  EXPECT_NE(line_of("ntc_answered").find("answered shift at 2027-01-02T09:00:00Z"),
            std::string::npos)
      << out;
  EXPECT_NE(line_of("ntc_lapsed").find("no answer: default applied at 2027-01-10T08:00:00Z"),
            std::string::npos)
      << out;
  EXPECT_NE(line_of("ntc_told").find("  -  "), std::string::npos) << out;
  // How to answer, for the one that waits only.
  EXPECT_NE(err_.str().find("Answer by 2027-01-10T08:00:00Z: gpurent notices answer ntc_waits "
                            "--rental rnt_1 --choice other_node|shift|cancel"),
            std::string::npos)
      << err_.str();
  EXPECT_EQ(err_.str().find("ntc_answered"), std::string::npos) << err_.str();
  // --json: the API's answer as it came.
  EXPECT_EQ(run({"notices"}, true), kExitOk);
  EXPECT_EQ(json::parse(out_.str()), api_.answers["GET /v1/notices"].second);
}

TEST_F(CliScriptedCommands, NoticesAnswerPostsTheChoiceAndEndsInTheContractsExitCodes) {
  const json all = json::array({"other_node", "shift", "cancel"});
  const std::string target = "/v1/rentals/rnt_1/notices/ntc_1/choice";
  api_.answers["POST " + target] = {200, notice("ntc_1", all, "shift", "2027-01-02T09:00:00Z")};
  EXPECT_EQ(run({"notices", "answer", "ntc_1", "--rental", "rnt_1", "--choice", "shift"}), kExitOk);
  ASSERT_EQ(api_.seen.size(), 1u);
  EXPECT_EQ(api_.seen[0].method, "POST");
  EXPECT_EQ(json::parse(api_.seen[0].body), json({{"choice", "shift"}}));
  EXPECT_NE(out_.str().find("answer:  answered shift at 2027-01-02T09:00:00Z"), std::string::npos)
      << out_.str();

  auto error = [](int status, const std::string& code) {
    return std::pair<int, json>{
        status, {{"error", {{"code", code}, {"message", "m"}, {"details", json::object()}}}}};
  };
  api_.answers["POST " + target] = error(409, "insufficient_capacity");
  EXPECT_EQ(refused({"notices", "answer", "ntc_1", "--rental", "rnt_1", "--choice", "other_node"}),
            kExitNoCapacity);
  api_.answers["POST " + target] = error(409, "invalid_state");
  EXPECT_EQ(refused({"notices", "answer", "ntc_1", "--rental", "rnt_1", "--choice", "cancel"}),
            kExitApiError);
  api_.answers["POST " + target] = error(400, "invalid_request");
  EXPECT_EQ(refused({"notices", "answer", "ntc_1", "--rental", "rnt_1", "--choice", "sideways"}),
            kExitApiError)
      << "which choices a notice offers is the server's to say";
  EXPECT_EQ(refused({"notices", "answer", "ntc_1", "--rental", "rnt_2", "--choice", "cancel"}),
            kExitNotFound);
  EXPECT_THROW(run({"notices", "answer", "ntc_1", "--choice", "cancel"}), UsageError);
  EXPECT_THROW(run({"notices", "answer", "ntc_1", "--rental", "rnt_1"}), UsageError);
  EXPECT_TRUE(api_.seen.empty()) << "nothing sent without --rental and --choice";
}

TEST_F(CliScriptedCommands, CheckpointShowsSetsAndClears) {
  const std::string target = "/v1/rentals/rnt_1/checkpoint";
  api_.answers["GET " + target] = {200, {{"command", nullptr}, {"timeout_s", 600}}};
  EXPECT_EQ(run({"checkpoint", "rnt_1"}), kExitOk);
  EXPECT_EQ(out_.str(), "command: - (none)\ntimeout: 10m\n");

  api_.answers["PUT " + target] = {200, {{"command", "~/bin/save --all"}, {"timeout_s", 900}}};
  EXPECT_EQ(run({"checkpoint", "rnt_1", "--set", "~/bin/save --all", "--timeout", "15m"}), kExitOk);
  ASSERT_EQ(api_.seen.size(), 1u);
  EXPECT_EQ(api_.seen[0].method, "PUT");
  EXPECT_EQ(json::parse(api_.seen[0].body),
            json({{"command", "~/bin/save --all"}, {"timeout_s", 900}}));
  EXPECT_EQ(out_.str(), "command: ~/bin/save --all\ntimeout: 15m\n");
  // Without --timeout the server's default stands.
  EXPECT_EQ(run({"checkpoint", "rnt_1", "--set", "~/bin/save --all"}), kExitOk);
  EXPECT_EQ(json::parse(api_.seen[0].body), json({{"command", "~/bin/save --all"}}));

  api_.answers["DELETE " + target] = {200, {{"command", nullptr}, {"timeout_s", 600}}};
  EXPECT_EQ(run({"checkpoint", "rnt_1", "--clear"}, true), kExitOk);
  EXPECT_EQ(api_.seen[0].method, "DELETE");
  EXPECT_EQ(json::parse(out_.str()), json({{"command", nullptr}, {"timeout_s", 600}}));

  for (const auto& argv : std::vector<std::vector<std::string>>{
           {"checkpoint", "rnt_1", "--set", "x", "--clear"},
           {"checkpoint", "rnt_1", "--timeout", "5m"},
           {"checkpoint", "rnt_1", "--set", ""},
           {"checkpoint", "rnt_1", "--set", "x", "--timeout", "ten"}}) {
    EXPECT_THROW(run(argv), UsageError) << argv.back();
    EXPECT_TRUE(api_.seen.empty()) << argv.back();
  }
}

TEST_F(CliScriptedCommands, HandoversListCausesNodesAndCreditsInTheRentalsCurrency) {
  api_.answers["GET /v1/rentals/rnt_1/handovers"] = {
      200,
      {{"items", json::array({{{"id", "hnd_1"},
                               {"cause", "reboot"},
                               {"reason", "rebooted by the tenant"},
                               {"from_node_id", "nd_a"},
                               {"to_node_id", "nd_a"},
                               {"started_at", "2027-01-02T09:00:00Z"},
                               {"ended_at", "2027-01-02T09:04:00Z"},
                               {"outcome", "active"},
                               {"credited_minor", nullptr}},
                              {{"id", "hnd_2"},
                               {"cause", "fault"},
                               {"reason", "node nd_a failed"},
                               {"from_node_id", "nd_a"},
                               {"to_node_id", "nd_b"},
                               {"started_at", "2027-01-03T09:00:00Z"},
                               {"ended_at", nullptr},
                               {"outcome", nullptr},
                               {"credited_minor", 123450}}})}}};
  api_.answers["GET /v1/rentals/rnt_1"] = {
      200,
      {{"id", "rnt_1"},
       {"price", {{"per_day", {{"amount_minor", 5200000}, {"currency", "RUB"}}}}}}};
  EXPECT_EQ(run({"handovers", "rnt_1"}), kExitOk);
  const std::string out = out_.str();
  EXPECT_EQ(out.rfind("STARTED", 0), 0u) << out;
  EXPECT_NE(out.find("reboot  nd_a  nd_a  2027-01-02T09:04:00Z  active"), std::string::npos) << out;
  EXPECT_NE(out.find("1,234.50 RUB"), std::string::npos) << out;
  EXPECT_NE(out.find("node nd_a failed"), std::string::npos) << out;

  // Nothing credited: the rental is not asked for its currency.
  api_.answers["GET /v1/rentals/rnt_1/handovers"] = {200, {{"items", json::array()}}};
  EXPECT_EQ(run({"handovers", "rnt_1"}), kExitOk);
  EXPECT_EQ(api_.seen.size(), 1u);
  EXPECT_NE(err_.str().find("No handovers."), std::string::npos);
  EXPECT_EQ(refused({"handovers", "rnt_9"}), kExitNotFound);
}

}  // namespace gpurent::cli::commands_test
