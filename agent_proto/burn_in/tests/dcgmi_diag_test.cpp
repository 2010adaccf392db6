// Tests the dcgmi diag parser on real outputs of DCGM 3.x and 4.x (fixtures/dcgmi, provenance
// in fixtures/README.md) and on hand-made edges: per-GPU failures in both layouts, warnings,
// cut pastes, dcgmi errors instead of a table.
#include "agent_proto/burn_in/dcgmi_diag.h"
#include "agent_proto/burn_in/tests/fixture_text.h"

#include <gtest/gtest.h>

namespace gpurent::burn_in {
namespace dcgmi_diag_test {

using testing::read_fixture;

const DiagTest& test_named(const DcgmDiagResult& r, const std::string& name) {
  for (const auto& t : r.tests) {
    if (t.name == name) return t;
  }
  ADD_FAILURE() << "no test " << name;
  static const DiagTest kNone;
  return kNone;
}

TEST(DcgmFixtures, EveryRealRunParses) {
  struct Case {
    std::string file;
    std::size_t tests;
    bool passed;
    std::optional<std::string> version;
    std::size_t device_ids;
  };
  const std::vector<Case> cases = {
      {"dcgm-253_dcgm-4.2.3_4x26b9_pcie-internal-error.txt", 3, false, "4.2.3", 4},
      {"dcgm-253-comment_dcgm-4.4.1_8x2901_pcie-internal-error.txt", 3, false, "4.4.1", 8},
      {"dcgm-124_dcgm-4.4.2_1x2237_pass.txt", 3, true, "4.4.2", 1},
      {"nccl-tests-264_dcgm-3.3.8_8x2330_gpu-memory-fail-all.txt", 13, false, "3.3.8", 8},
      {"memtest-notes_dcgm-3.x_1-gpu_persistence-fail.txt", 16, false, std::nullopt, 0},
      {"cluster-report_dcgm-3.3.9_4x2237_targeted-power-fail-gpu1.txt", 16, false, "3.3.9", 4},
  };
  for (const auto& c : cases) {
    auto r = parse_dcgmi_diag(read_fixture("dcgmi", c.file));
    EXPECT_EQ(r.tests.size(), c.tests) << c.file;
    EXPECT_EQ(r.passed(), c.passed) << c.file;
    EXPECT_EQ(r.dcgm_version, c.version) << c.file;
    EXPECT_EQ(r.gpu_device_ids.size(), c.device_ids) << c.file;
  }
}

TEST(DcgmFixtures, Dcgm4PerGpuVerdictsAndWrappedWarnings) {
  auto r =
      parse_dcgmi_diag(read_fixture("dcgmi", "dcgm-253_dcgm-4.2.3_4x26b9_pcie-internal-error.txt"));
  EXPECT_EQ(r.driver_version, "570.148.08");
  EXPECT_EQ(r.gpu_device_ids, (std::vector<std::string>{"26b9", "26b9", "26b9", "26b9"}));
  const auto& software = test_named(r, "software");
  EXPECT_EQ(software.category, "Deployment");
  EXPECT_EQ(software.verdict, DiagVerdict::kPass);
  EXPECT_EQ(software.gpus.size(), 4u);
  const auto& pcie = test_named(r, "pcie");
  EXPECT_EQ(pcie.category, "Integration");
  EXPECT_EQ(pcie.verdict, DiagVerdict::kFail);  // the test failed, no GPU did
  EXPECT_TRUE(pcie.failing_gpus().empty());
  ASSERT_EQ(pcie.messages.size(), 4u);
  EXPECT_EQ(pcie.messages[0].kind, "warning");
  EXPECT_EQ(pcie.messages[0].text,
            "There was an internal error during the test:'A child process (152) exited with "
            "non-zero status 1' Check DCGM and system logs for errors. Reset GPU. Restart DCGM. "
            "Rerun diagnostics.");
  EXPECT_EQ(pcie.gpus.back(), (DiagGpuVerdict{3, DiagVerdict::kPass}));
}

TEST(DcgmFixtures, Dcgm3FailForAllGpus) {
  auto r = parse_dcgmi_diag(
      read_fixture("dcgmi", "nccl-tests-264_dcgm-3.3.8_8x2330_gpu-memory-fail-all.txt"));
  const auto& memory = test_named(r, "GPU Memory");
  EXPECT_EQ(memory.category, "Hardware");
  EXPECT_EQ(memory.verdict, DiagVerdict::kFail);
  EXPECT_TRUE(memory.all_gpus);
  EXPECT_EQ(memory.messages.size(), 8u);
  EXPECT_EQ(test_named(r, "PCIe").verdict, DiagVerdict::kSkip);
  EXPECT_TRUE(test_named(r, "PCIe").all_gpus);
  // The wrapped Info under Persistence Mode belongs to it and does not change its verdict.
  const auto& persistence = test_named(r, "Persistence Mode");
  EXPECT_EQ(persistence.verdict, DiagVerdict::kPass);
  ASSERT_EQ(persistence.messages.size(), 1u);
  EXPECT_EQ(persistence.messages[0].kind, "info");
  EXPECT_EQ(test_named(r, "EUD Test").category, "Stress");
}

TEST(DcgmFixtures, Dcgm3FailingGpuNamed) {
  auto r = parse_dcgmi_diag(
      read_fixture("dcgmi", "cluster-report_dcgm-3.3.9_4x2237_targeted-power-fail-gpu1.txt"));
  const auto& power = test_named(r, "Targeted Power");
  EXPECT_EQ(power.verdict, DiagVerdict::kFail);
  EXPECT_FALSE(power.all_gpus);
  EXPECT_EQ(power.failing_gpus(), (std::vector<int>{1}));
  EXPECT_EQ(power.gpus, (std::vector<DiagGpuVerdict>{{0, DiagVerdict::kPass},
                                                     {2, DiagVerdict::kPass},
                                                     {3, DiagVerdict::kPass},
                                                     {1, DiagVerdict::kFail}}));
  ASSERT_EQ(power.messages.size(), 4u);
  EXPECT_EQ(power.messages[1].kind, "info");
  EXPECT_EQ(test_named(r, "Targeted Stress").verdict, DiagVerdict::kPass);
}

TEST(DcgmFixtures, DeploymentFailureWithoutMetadata) {
  auto r =
      parse_dcgmi_diag(read_fixture("dcgmi", "memtest-notes_dcgm-3.x_1-gpu_persistence-fail.txt"));
  const auto& persistence = test_named(r, "Persistence Mode");
  EXPECT_EQ(persistence.verdict, DiagVerdict::kFail);
  ASSERT_EQ(persistence.messages.size(), 1u);
  EXPECT_EQ(persistence.messages[0].kind, "error");
  EXPECT_EQ(test_named(r, "Memtest").verdict, DiagVerdict::kPass);
}

// Synthetic: DCGM 4 with a failing GPU, a warn verdict, a paste cut mid-row, a table with no
// sections (DCGM 2.x style), rows before any test.
TEST(DcgmEdges, HandMadeShapes) {
  auto r = parse_dcgmi_diag(
      "|                           | GPU0: Fail                                     |\n"
      "| Warning                   | orphan                                         |\n"
      "| Deployment                | Pass                                           |\n"
      "+-----  Hardware  ----------+------------------------------------------------+\n"
      "| memory                    | Fail                                           |\n"
      "|                           | GPU0: Pass                                     |\n"
      "|                           | GPU3: Fail                                     |\n"
      "| Error                     | GPU 3 has uncorrectable memory errors and row  |\n"
      "|                           |  remappings are pending                        |\n"
      "| diagnostic                | Warn                                           |\n"
      "| GPU Memory                | Pass - GPUs: 1, 2                              |\n"
      "|                           | Fail - GPU: 0                                  |\n"
      "| Warning                   | GPU 0 Thermal violations totaling 13.3 second  |\n"
      "|                           | s started\n");
  ASSERT_EQ(r.tests.size(), 4u);
  EXPECT_EQ(r.tests[0].category, "");
  const auto& memory = r.tests[1];
  EXPECT_EQ(memory.failing_gpus(), (std::vector<int>{3}));
  EXPECT_EQ(memory.messages.at(0).text,
            "GPU 3 has uncorrectable memory errors and row remappings are pending");
  EXPECT_EQ(r.tests[2].verdict, DiagVerdict::kWarn);
  EXPECT_EQ(r.tests[3].failing_gpus(), (std::vector<int>{0}));
  EXPECT_EQ(r.tests[3].messages.at(0).text,
            "GPU 0 Thermal violations totaling 13.3 seconds started");
  EXPECT_FALSE(r.passed());
}

TEST(DcgmErrors, NoTableIsRefusedQuotingDcgmi) {
  try {
    parse_dcgmi_diag("Error: unable to establish a connection to the specified host: localhost\n");
    FAIL();
  } catch (const ParseError& e) {
    EXPECT_NE(std::string(e.what()).find("unable to establish a connection"), std::string::npos);
  }
  for (const std::string& text : std::vector<std::string>{
           "",
           "+---------------------------+----------+\n| Diagnostic | Result |\n+====+====+\n",
           "| Deployment | Great |\n",
           "|Deployment Pass\n",
       }) {
    EXPECT_THROW(parse_dcgmi_diag(text), ParseError) << text;
  }
}

TEST(DcgmErrors, LimitsBoundTheWork) {
  std::string many;
  for (std::size_t i = 0; i <= kMaxDiagTests; ++i) many += "| t | Pass |\n";
  EXPECT_THROW(parse_dcgmi_diag(many), ParseError);
  std::string gpus = "| t | Pass |\n";
  for (std::size_t i = 0; i <= kMaxDiagGpus; ++i) gpus += "| | GPU1: Pass |\n";
  EXPECT_THROW(parse_dcgmi_diag(gpus), ParseError);
  // Messages stop growing at their limit rather than failing the run.
  std::string warnings = "| t | Pass |\n| Warning | x |\n";
  for (int i = 0; i < 1000; ++i) warnings += "|  | " + std::string(45, 'w') + " |\n";
  auto r = parse_dcgmi_diag(warnings);
  EXPECT_EQ(r.tests[0].messages[0].text.size(), kMaxDiagMessageBytes);
  EXPECT_THROW(parse_dcgmi_diag(std::string(kMaxToolOutputBytes + 1, '|')), ParseError);
  // A GPU id beyond any node is not a GPU verdict.
  EXPECT_TRUE(parse_dcgmi_diag("| t | Fail - GPU: 99999 |\n").tests[0].gpus.empty());
}

}  // namespace dcgmi_diag_test
}  // namespace gpurent::burn_in
