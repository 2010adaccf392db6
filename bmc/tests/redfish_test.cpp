// The Redfish readers on real BMC bodies (fixtures/, provenance in fixtures/README.md): every
// fixture has its expectations here, and a fixture without any fails. Refusals of malformed
// bodies name the JSON path; those inputs are synthetic, written in this file.
#include "bmc/redfish.h"
#include "tests/support/paths.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>

namespace gpurent::bmc {
namespace redfish_test {

std::filesystem::path fixture_dir() {
  return std::filesystem::path(gpurent::testing::source_dir()) / "bmc/tests/fixtures";
}

std::string read_fixture(const std::string& name) {
  std::ifstream in(fixture_dir() / name, std::ios::binary);
  EXPECT_TRUE(in) << "missing fixture " << name;
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

using R = ResetType;

// Each fixture and what it must read as.
const std::map<std::string, std::function<void(const std::string&)>>& expectations() {
  static const std::map<std::string, std::function<void(const std::string&)>> all = {
      {"dmtf-mockup_public-rackmount1_system.json",
       [](const std::string& body) {
         auto s = parse_computer_system(body);
         EXPECT_EQ(s.id, "437XR1138R2");
         EXPECT_EQ(s.power_state, PowerState::kOn);
         ASSERT_TRUE(s.reset);
         EXPECT_EQ(s.reset->target, "/redfish/v1/Systems/437XR1138R2/Actions/ComputerSystem.Reset");
         EXPECT_EQ(s.reset->allowable,
                   (std::vector<R>{R::kOn, R::kForceOff, R::kGracefulShutdown, R::kGracefulRestart,
                                   R::kForceRestart, R::kNmi, R::kForceOn, R::kPushPowerButton}));
         EXPECT_TRUE(s.reset->other_allowable.empty());
         EXPECT_EQ(s.reset->action_info, std::nullopt);
       }},
      {"dmtf-mockup_public-rackmount1_systems.json",
       [](const std::string& body) {
         EXPECT_EQ(parse_system_collection(body),
                   std::vector<std::string>{"/redfish/v1/Systems/437XR1138R2"});
       }},
      {"cisco-cimc_ucsc-c240-m4sx_system.json",
       [](const std::string& body) {
         auto s = parse_computer_system(body);
         EXPECT_EQ(s.id, "FCH2017V1J7");
         EXPECT_EQ(s.power_state, PowerState::kOff);
         ASSERT_TRUE(s.reset);
         EXPECT_EQ(s.reset->target, "/redfish/v1/Systems/FCH2017V1J7/Actions/ComputerSystem.Reset");
         EXPECT_EQ(s.reset->allowable, (std::vector<R>{R::kOn, R::kForceOff, R::kGracefulShutdown,
                                                       R::kForceRestart, R::kNmi, R::kPowerCycle}));
       }},
      {"cisco-cimc_ucsc-c240-m4sx_systems.json",
       [](const std::string& body) {
         EXPECT_EQ(parse_system_collection(body),
                   std::vector<std::string>{"/redfish/v1/Systems/FCH2017V1J7"});
       }},
      {"openbmc-bmcweb_qemu_system.json",
       [](const std::string& body) {
         auto s = parse_computer_system(body);
         EXPECT_EQ(s.id, "system");
         EXPECT_EQ(s.power_state, PowerState::kOff);
         ASSERT_TRUE(s.reset);
         EXPECT_EQ(s.reset->target, "/redfish/v1/Systems/system/Actions/ComputerSystem.Reset");
         EXPECT_EQ(s.reset->allowable, std::nullopt) << "bmcweb lists them in its ActionInfo";
         EXPECT_EQ(s.reset->action_info, "/redfish/v1/Systems/system/ResetActionInfo");
       }},
      {"openbmc-bmcweb_pr266_reset-action-info.json",
       [](const std::string& body) {
         EXPECT_EQ(
             parse_reset_action_info(body),
             (std::vector<R>{R::kOn, R::kForceOff, R::kForceOn, R::kForceRestart,
                             R::kGracefulRestart, R::kGracefulShutdown, R::kPowerCycle, R::kNmi}));
       }},
      {"openbmc-bmcweb_pr266_error_resource-not-found.json",
       [](const std::string& body) {
         EXPECT_EQ(redfish_error_sentence(body),
                   "The requested resource of type ComputerSystem named 'sysem0' was not found. "
                   "(Base.1.16.0.ResourceNotFound)");
       }},
  };
  return all;
}

TEST(RedfishFixtures, EachReadsAsExpected) {
  for (const auto& [name, check] : expectations()) {
    SCOPED_TRACE(name);
    check(read_fixture(name));
  }
}

TEST(RedfishFixtures, EveryFixtureFileHasExpectations) {
  std::size_t seen = 0;
  for (const auto& entry : std::filesystem::directory_iterator(fixture_dir())) {
    auto name = entry.path().filename().string();
    if (name == "README.md") continue;
    ++seen;
    EXPECT_TRUE(expectations().count(name)) << name << " has no expectations in redfish_test.cpp";
  }
  EXPECT_EQ(seen, expectations().size()) << "an expected fixture file is missing";
}

TEST(RedfishResetType, DmtfStringsBothWays) {
  const std::vector<std::string> names = {
      "On",  "ForceOff", "GracefulShutdown", "GracefulRestart", "ForceRestart",
      "Nmi", "ForceOn",  "PushPowerButton",  "PowerCycle"};
  ASSERT_EQ(std::size(kAllResetTypes), names.size());
  for (std::size_t i = 0; i < names.size(); ++i) {
    EXPECT_EQ(to_string(kAllResetTypes[i]), names[i]);
    EXPECT_EQ(reset_type_from_string(names[i]), kAllResetTypes[i]);
  }
  for (const char* unknown : {"forceoff", "FORCEOFF", "Suspend", "", " On", "FullPowerCycle"}) {
    EXPECT_EQ(reset_type_from_string(unknown), std::nullopt) << unknown;
  }
  for (const char* state : {"On", "Off", "PoweringOn", "PoweringOff", "Paused"}) {
    auto s = power_state_from_string(state);
    ASSERT_TRUE(s) << state;
    EXPECT_EQ(to_string(*s), state);
  }
}

// Synthetic: a system listing reset types this client does not know keeps them apart.
TEST(RedfishSystem, UnknownAllowableValuesAreKeptApart) {
  auto s = parse_computer_system(
      R"({"Id":"1","Actions":{"#ComputerSystem.Reset":{"target":"/redfish/v1/Systems/1/Actions/ComputerSystem.Reset",
          "ResetType@Redfish.AllowableValues":["On","Suspend","ForceOff"]}}})");
  ASSERT_TRUE(s.reset);
  EXPECT_EQ(s.reset->allowable, (std::vector<R>{R::kOn, R::kForceOff}));
  EXPECT_EQ(s.reset->other_allowable, std::vector<std::string>{"Suspend"});
  EXPECT_EQ(s.power_state, std::nullopt);
  auto none = parse_computer_system(R"({"Id":"1","PowerState":"Off"})");
  EXPECT_EQ(none.reset, std::nullopt);
}

std::string refusal(const std::function<void()>& parse) {
  try {
    parse();
  } catch (const RedfishError& e) {
    return e.what();
  }
  return "(accepted)";
}

// Synthetic malformed bodies: each refusal names where.
TEST(RedfishSystem, MalformedBodiesAreRefusedNamingThePath) {
  auto system = [](std::string body) { return refusal([&] { parse_computer_system(body); }); };
  const std::string reset = R"({"Id":"1","Actions":{"#ComputerSystem.Reset":)";
  EXPECT_EQ(system("not json"), "$: not JSON");
  EXPECT_EQ(system("[]"), "$: not a JSON object");
  EXPECT_EQ(system("{}"), "Id: missing");
  EXPECT_EQ(system(R"({"Id":7})"), "Id: not a string");
  EXPECT_EQ(system(R"({"Id":"1","PowerState":"Sleeping"})"),
            "PowerState: \"Sleeping\" is not a Redfish power state");
  EXPECT_EQ(system(R"({"Id":"1","Actions":[]})"), "Actions: not an object");
  EXPECT_EQ(system(reset + R"({}}})"), R"(Actions["#ComputerSystem.Reset"].target: missing)");
  EXPECT_EQ(system(reset + R"({"target":"https://elsewhere.example/x"}}})"),
            R"(Actions["#ComputerSystem.Reset"].target: not a path on the BMC ("/redfish/..."))");
  EXPECT_EQ(system(reset + R"({"target":"//elsewhere.example/x"}}})"),
            R"(Actions["#ComputerSystem.Reset"].target: not a path on the BMC ("/redfish/..."))");
  EXPECT_EQ(
      system(reset + R"({"target":"/a b"}}})"),
      R"(Actions["#ComputerSystem.Reset"].target: a path with a character a path may not hold)");
  EXPECT_EQ(
      system(reset + R"({"target":"/x","ResetType@Redfish.AllowableValues":"On"}}})"),
      R"(Actions["#ComputerSystem.Reset"]["ResetType@Redfish.AllowableValues"]: not an array)");
  EXPECT_EQ(
      system(reset + R"({"target":"/x","ResetType@Redfish.AllowableValues":["On",3]}}})"),
      R"(Actions["#ComputerSystem.Reset"]["ResetType@Redfish.AllowableValues"][1]: not a string)");
  EXPECT_EQ(system(R"({"Id":")" + std::string(257, 'a') + R"("})"),
            "Id: a string of 257 bytes, over the 256 allowed");
  EXPECT_EQ(system(R"({"Id":"a\u0001b"})"), "Id: a string with control characters");
  EXPECT_EQ(system(std::string(100000, '[')), "$: nested deeper than 64 levels");
  EXPECT_EQ(system(R"({"Id":"1","Pad":")" + std::string(kMaxRedfishBodyBytes, 'x') + R"("})"),
            "$: body of 1048595 bytes, over the 1048576 allowed");
}

TEST(RedfishCollection, MalformedCollectionsAreRefusedNamingThePath) {
  auto members = [](std::string body) { return refusal([&] { parse_system_collection(body); }); };
  EXPECT_EQ(members("{}"), "Members: missing");
  EXPECT_EQ(members(R"({"Members":[{"@odata.id":"/redfish/v1/Systems/1"},{}]})"),
            R"(Members[1]["@odata.id"]: missing)");
  std::string many = R"({"Members":[)";
  for (int i = 0; i < 65; ++i) many += std::string(i ? "," : "") + R"({"@odata.id":"/x"})";
  EXPECT_EQ(members(many + "]}"), "Members: 65 items, over the 64 allowed");
  EXPECT_EQ(members(R"({"Members":[]})"), "(accepted)");
}

TEST(RedfishActionInfo, ResetTypeParameterIsFound) {
  EXPECT_EQ(parse_reset_action_info(R"({"Parameters":[{"Name":"Other"},{"Name":"ResetType"}]})"),
            std::nullopt);
  EXPECT_EQ(refusal([] { parse_reset_action_info(R"({"Parameters":[{"Name":"Other"}]})"); }),
            "Parameters: no parameter named ResetType");
  EXPECT_EQ(refusal([] { parse_reset_action_info(R"({"Parameters":[{"Name":1}]})"); }),
            "Parameters[0].Name: not a string");
}

TEST(RedfishError, SentenceSaysEachDistinctMessageOnce) {
  // Synthetic, in the shape of a service answering an unknown reset type.
  EXPECT_EQ(redfish_error_sentence(R"({"error":{"code":"Base.1.8.GeneralError",
      "message":"A general error has occurred. See ExtendedInfo for more information.",
      "@Message.ExtendedInfo":[{"MessageId":"Base.1.8.ActionParameterValueNotInList",
      "Message":"The value 'Reboot' for the parameter ResetType is not in the list."}]}})"),
            "A general error has occurred. See ExtendedInfo for more information. "
            "(Base.1.8.GeneralError); The value 'Reboot' for the parameter ResetType is not in "
            "the list. (Base.1.8.ActionParameterValueNotInList)");
  EXPECT_EQ(redfish_error_sentence(R"({"error":{"code":"X","message":"caf\u00e9"}})"), "caf?? (X)");
  EXPECT_EQ(refusal([] { redfish_error_sentence(R"({"code":"X"})"); }), "error: missing");
  EXPECT_EQ(refusal([] { redfish_error_sentence(R"({"error":{"code":"X"}})"); }),
            "error.message: missing");
  EXPECT_EQ(refusal([] {
              redfish_error_sentence(
                  R"({"error":{"code":"X","message":"m","@Message.ExtendedInfo":[1]}})");
            }),
            R"(error["@Message.ExtendedInfo"][0]: not an object)");
}

TEST(RedfishSystemId, OnlyPathSafeIds) {
  for (const char* ok : {"1", "system", "System.Embedded.1", "437XR1138R2", "node-7_a~"}) {
    EXPECT_TRUE(is_valid_system_id(ok)) << ok;
  }
  for (const char* bad : {"", ".", "..", "a/b", "a b", "a?b", "a%2fb", "a#b"}) {
    EXPECT_FALSE(is_valid_system_id(bad)) << bad;
  }
}

}  // namespace redfish_test
}  // namespace gpurent::bmc
