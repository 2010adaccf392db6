// The Redfish client against the test responder (tests/support/redfish_responder.h) on
// 127.0.0.1: every allowed reset type is POSTed to the target the system advertises and moves its
// power state; a type it does not allow is refused before any POST; wrong credentials, a BMC that
// hangs, a failing BMC and a certificate that is not the pinned one are each their own failure
// kind; the password appears in no failure's message.
#include "bmc/redfish_client.h"
#include "tests/support/redfish_responder.h"

#include "core/crypto.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <thread>

namespace gpurent::bmc {
namespace redfish_client_e2etest {

using namespace std::chrono_literals;
using gpurent::testing::RedfishResponder;
using gpurent::testing::RedfishResponderOptions;
using Clock = std::chrono::steady_clock;

RedfishClientOptions options_for(const RedfishResponder& responder,
                                 const std::string& password = "responder-secret") {
  RedfishClientOptions o;
  o.base_url = responder.base_url();
  o.allow_plain_http = true;
  o.username = "admin";
  o.password = password;
  o.timeout = 5s;
  if (responder.base_url().rfind("https", 0) == 0) {
    o.allow_plain_http = false;
    o.pinned_sha256 = responder.certificate_fingerprint();
  }
  return o;
}

// The failure a call throws (the test fails when it throws none).
template <typename Call>
RedfishFailure failure_of(Call call) {
  try {
    call();
  } catch (const RedfishFailure& f) {
    return f;
  }
  ADD_FAILURE() << "no RedfishFailure";
  return RedfishFailure(RedfishFailureKind::kMalformed, "(none)");
}

template <typename Done>
bool eventually(Done done, std::chrono::milliseconds limit = 10s) {
  for (auto until = Clock::now() + limit; Clock::now() < until; std::this_thread::sleep_for(20ms)) {
    if (done()) return true;
  }
  return done();
}

std::vector<gpurent::testing::RedfishRequest> posts(RedfishResponder& responder) {
  std::vector<gpurent::testing::RedfishRequest> out;
  for (auto& r : responder.requests()) {
    if (r.method == "POST") out.push_back(r);
  }
  return out;
}

TEST(RedfishClientE2E, EveryAllowedTypeIsPostedToTheAdvertisedTargetAndMovesPowerState) {
  RedfishResponderOptions ro;
  ro.restart_delay = 400ms;
  RedfishResponder responder(ro);
  RedfishClient client(options_for(responder));

  EXPECT_EQ(client.systems(), std::vector<std::string>{"/redfish/v1/Systems/node-7"});
  auto sys = client.system("node-7");
  EXPECT_EQ(sys.power_state, PowerState::kOn);
  ASSERT_TRUE(sys.reset);
  EXPECT_EQ(sys.reset->target, ro.reset_target);

  std::size_t n = 0;
  for (ResetType type : kAllResetTypes) {
    const std::string name(to_string(type));
    SCOPED_TRACE(name);
    std::string before = responder.power_state();
    client.reset("node-7", type);
    ++n;
    auto sent = posts(responder);
    ASSERT_EQ(sent.size(), n);
    EXPECT_EQ(sent.back().target, ro.reset_target) << "the target the system gave, not a guess";
    EXPECT_EQ(nlohmann::json::parse(sent.back().body), (nlohmann::json{{"ResetType", name}}));
    EXPECT_EQ(responder.accepted_resets().back(), name);

    std::optional<PowerState> expected;
    switch (type) {
      case ResetType::kOn:
      case ResetType::kForceOn:
        expected = PowerState::kOn;
        break;
      case ResetType::kForceOff:
      case ResetType::kGracefulShutdown:
        expected = PowerState::kOff;
        break;
      case ResetType::kPushPowerButton:
        expected = before == "On" ? PowerState::kOff : PowerState::kOn;
        break;
      case ResetType::kNmi:
        expected = power_state_from_string(before);
        break;
      case ResetType::kGracefulRestart:
      case ResetType::kForceRestart:
      case ResetType::kPowerCycle:
        // Powering on for the restart's delay, then on.
        EXPECT_EQ(client.system("node-7").power_state, PowerState::kPoweringOn);
        expected = PowerState::kOn;
        break;
    }
    EXPECT_TRUE(eventually([&] { return client.system("node-7").power_state == expected; }))
        << "power state " << responder.power_state();
  }
  EXPECT_EQ(responder.accepted_resets().size(), std::size(kAllResetTypes));
}

TEST(RedfishClientE2E, ATypeTheSystemDoesNotAllowIsRefusedBeforeAnyPost) {
  RedfishResponderOptions ro;
  ro.allowable = {"On", "ForceOff"};
  RedfishResponder responder(ro);
  RedfishClient client(options_for(responder));
  auto f = failure_of([&] { client.reset("node-7", ResetType::kPowerCycle); });
  EXPECT_EQ(f.kind(), RedfishFailureKind::kRefused);
  EXPECT_EQ(std::string(f.what()),
            "system node-7 does not allow the reset type PowerCycle (it allows: On, ForceOff)");
  EXPECT_FALSE(f.retryable());
  EXPECT_TRUE(posts(responder).empty());
  client.reset("node-7", ResetType::kForceOff);
  EXPECT_EQ(responder.power_state(), "Off");
}

TEST(RedfishClientE2E, WrongPasswordIsAnAuthFailure) {
  RedfishResponder responder;
  RedfishClient client(options_for(responder, "not-the-password"));
  auto f = failure_of([&] { client.system("node-7"); });
  EXPECT_EQ(f.kind(), RedfishFailureKind::kAuth);
  EXPECT_EQ(f.status(), 401);
  EXPECT_NE(std::string(f.what()).find("the credentials of admin were refused"), std::string::npos)
      << f.what();
  EXPECT_NE(std::string(f.what()).find("ResourceAtUriUnauthorized"), std::string::npos) << f.what();
  auto r = failure_of([&] { client.reset("node-7", ResetType::kForceOff); });
  EXPECT_EQ(r.kind(), RedfishFailureKind::kAuth);
  EXPECT_TRUE(posts(responder).empty());
  EXPECT_EQ(responder.power_state(), "On");
}

TEST(RedfishClientE2E, ABmcThatHangsIsATimeoutWithinTheTimeout) {
  RedfishResponder responder;
  responder.delay_answers(30s);
  auto options = options_for(responder);
  options.timeout = 300ms;
  RedfishClient client(options);
  auto started = Clock::now();
  auto f = failure_of([&] { client.system("node-7"); });
  auto took = Clock::now() - started;
  EXPECT_EQ(f.kind(), RedfishFailureKind::kTimeout);
  EXPECT_TRUE(f.retryable());
  EXPECT_NE(std::string(f.what()).find("no answer within 300 ms"), std::string::npos) << f.what();
  EXPECT_GE(took, 250ms);
  EXPECT_LT(took, 300ms + 5s) << "generous: sanitized builds on a loaded machine";
  auto r = failure_of([&] { client.reset("node-7", ResetType::kForceOff); });
  EXPECT_EQ(r.kind(), RedfishFailureKind::kTimeout);
  EXPECT_TRUE(posts(responder).empty());
}

TEST(RedfishClientE2E, A500IsABmcError) {
  RedfishResponder responder;
  responder.fail_with(500);
  RedfishClient client(options_for(responder));
  auto f = failure_of([&] { client.reset("node-7", ResetType::kForceOff); });
  EXPECT_EQ(f.kind(), RedfishFailureKind::kBmcError);
  EXPECT_EQ(f.status(), 500);
  EXPECT_TRUE(f.retryable());
  EXPECT_NE(std::string(f.what()).find("internal service error"), std::string::npos) << f.what();
}

TEST(RedfishClientE2E, A404CarriesTheRedfishErrorsSentence) {
  RedfishResponder responder;
  RedfishClient client(options_for(responder));
  auto f = failure_of([&] { client.system("node-8"); });
  EXPECT_EQ(f.kind(), RedfishFailureKind::kRefused);
  EXPECT_EQ(f.status(), 404);
  EXPECT_NE(std::string(f.what()).find("was not found. (Base.1.16.0.ResourceNotFound)"),
            std::string::npos)
      << f.what();
  EXPECT_EQ(failure_of([&] { client.system("../Managers"); }).kind(), RedfishFailureKind::kRefused);
}

TEST(RedfishClientE2E, HttpsWithThePinnedFingerprintWorksAndAnotherIsRefused) {
  RedfishResponderOptions ro;
  ro.tls = true;
  RedfishResponder responder(ro);
  ASSERT_EQ(responder.certificate_fingerprint().size(), 64u);

  // As an operator pastes it from `openssl x509 -fingerprint -sha256`: upper case with colons.
  auto options = options_for(responder);
  std::string pasted;
  for (std::size_t i = 0; i < 64; i += 2) {
    pasted += (i ? ":" : "") + responder.certificate_fingerprint().substr(i, 2);
  }
  for (auto& c : pasted) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  options.pinned_sha256 = pasted;
  RedfishClient client(options);
  EXPECT_EQ(client.system("node-7").id, "node-7");
  client.reset("node-7", ResetType::kForceOff);
  EXPECT_EQ(responder.power_state(), "Off");
  auto seen = responder.requests().size();

  auto wrong = options_for(responder);
  wrong.pinned_sha256[10] = wrong.pinned_sha256[10] == '0' ? '1' : '0';
  RedfishClient untrusting(wrong);
  auto f = failure_of([&] { untrusting.reset("node-7", ResetType::kOn); });
  EXPECT_EQ(f.kind(), RedfishFailureKind::kUntrusted);
  EXPECT_FALSE(f.retryable());
  EXPECT_NE(std::string(f.what()).find("not the one pinned"), std::string::npos) << f.what();
  EXPECT_EQ(responder.requests().size(), seen) << "nothing was sent to a BMC not trusted";
  EXPECT_EQ(responder.power_state(), "Off");
}

TEST(RedfishClientE2E, HttpsWithTheCaFileWorksAndWithoutAnyTrustIsRefused) {
  RedfishResponderOptions ro;
  ro.tls = true;
  RedfishResponder responder(ro);
  auto options = options_for(responder);
  options.pinned_sha256.clear();
  options.ca_file = responder.certificate_file();
  EXPECT_EQ(RedfishClient(options).system("node-7").id, "node-7");

  options.ca_file.clear();  // the system's CA store does not know a throwaway certificate
  RedfishClient client(options);
  EXPECT_EQ(failure_of([&] { client.system("node-7"); }).kind(), RedfishFailureKind::kUntrusted);
}

TEST(RedfishClientE2E, OptionsThatCannotWorkStopAtConstruction) {
  RedfishClientOptions o;
  o.username = "admin";
  o.base_url = "http://127.0.0.1:1";
  EXPECT_THROW(RedfishClient{o}, std::invalid_argument) << "plain http needs allow_plain_http";
  for (const char* bad : {"ftp://bmc", "https://", "https://bmc/redfish", "https://u@bmc",
                          "https://bmc:0", "https://bmc:70000", "https://[::1"}) {
    o.base_url = bad;
    EXPECT_THROW(RedfishClient{o}, std::invalid_argument) << bad;
  }
  o.base_url = "https://bmc.example:8443/";
  o.pinned_sha256 = "abc";
  EXPECT_THROW(RedfishClient{o}, std::invalid_argument);
  o.pinned_sha256.clear();
  EXPECT_NO_THROW(RedfishClient{o});
  o.base_url = "https://[fd00::1]:443";
  EXPECT_NO_THROW(RedfishClient{o});
}

TEST(RedfishClientE2E, ThePasswordIsInNoFailureMessage) {
  const std::string password = "responder-secret";
  const std::string basic = crypto::base64("admin:" + password);
  std::vector<std::string> messages;
  auto keep = [&](const RedfishFailure& f) { messages.push_back(f.what()); };
  {
    RedfishResponder responder;
    keep(failure_of(
        [&] { RedfishClient(options_for(responder, password + "-wrong")).system("node-7"); }));
    responder.fail_with(500);
    keep(failure_of(
        [&] { RedfishClient(options_for(responder, password)).reset("node-7", ResetType::kOn); }));
    responder.fail_with(0);
    keep(failure_of([&] { RedfishClient(options_for(responder, password)).system("nope"); }));
    responder.delay_answers(5s);
    auto o = options_for(responder, password);
    o.timeout = 200ms;
    keep(failure_of([&] { RedfishClient(o).system("node-7"); }));
  }
  {
    RedfishResponderOptions ro;
    ro.tls = true;
    RedfishResponder responder(ro);
    auto o = options_for(responder, password);
    o.pinned_sha256 = std::string(64, 'a');
    keep(failure_of([&] { RedfishClient(o).system("node-7"); }));
  }
  RedfishClientOptions closed;
  closed.base_url = "http://127.0.0.1:1";
  closed.allow_plain_http = true;
  closed.username = "admin";
  closed.password = password;
  closed.timeout = 2s;
  auto unreachable = failure_of([&] { RedfishClient(closed).system("node-7"); });
  EXPECT_EQ(unreachable.kind(), RedfishFailureKind::kUnreachable);
  keep(unreachable);
  ASSERT_EQ(messages.size(), 6u);
  for (const auto& m : messages) {
    EXPECT_EQ(m.find(password), std::string::npos) << m;
    EXPECT_EQ(m.find(basic), std::string::npos) << m;
  }
}

}  // namespace redfish_client_e2etest
}  // namespace gpurent::bmc
