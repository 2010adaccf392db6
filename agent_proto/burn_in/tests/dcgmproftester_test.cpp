// Tests the dcgmproftester parser on real -t 1004 outputs (fixtures/matmul, provenance in
// fixtures/README.md), every sample as printed, and on synthetic edges: other prefixes, a test
// that prints no gflops, refusals and bounds.
#include "agent_proto/burn_in/dcgmproftester.h"
#include "agent_proto/burn_in/tests/fixture_text.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <set>

namespace gpurent::burn_in {
namespace dcgmproftester_test {

using testing::fixture_dir;
using testing::read_fixture;

struct FixtureCase {
  std::string file;
  ProftesterResult expected;
};

// Every file in fixtures/matmul with every sample it prints, copied from the file.
const std::vector<FixtureCase>& fixture_cases() {
  static const std::vector<FixtureCase> kCases = {
      {"dcgm-3_dcgmproftester11_2-gpus_interleaved-workers_excerpt.txt",
       {.test_id = 1004,
        .metric = "TensorEngineActive",
        .workers = {{.gpu = 1, .instance = 0, .gflops = {76460.9, 83514.9}},
                    {.gpu = 0, .instance = 0, .gflops = {76553.6, 83709.5}}}}},
      {"dcgm-user-guide_dcgmproftester11_1xa100-mig-2x3g.20gb_dcgm-braces_snipped.txt",
       {.test_id = 1004,
        .metric = "TensorEngineActive",
        .workers = {{.gpu = 0, .instance = 0, .gflops = {102659.5, 107747.3, 108107.6, 108001.2}},
                    {.gpu = 0, .instance = 1, .gflops = {102659.8, 107787.3, 108102.3}}}}},
      {"dcgm-user-guide_dcgmproftester11_1xa100_worker-prefix.txt",
       {.test_id = 1004,
        .metric = "TensorEngineActive",
        .workers = {{.gpu = 0,
                     .instance = 0,
                     .gflops = {250362.2, 252917.0, 253971.7, 253700.2, 252599.0, 253134.6,
                                252676.7, 252861.4, 252764.1, 253109.4}}}}},
      {"gpu-operator-notes-zh_dcgmproftester-2.x_1xv100-pcie-32gb_tail.txt",
       {.test_id = std::nullopt,
        .metric = "TensorEngineActive",
        .workers = {{.gpu = 0,
                     .instance = std::nullopt,
                     .gflops = {74380.8, 75398.9, 75787.6, 77173.9, 75669.5}}}}},
      {"gpu-operator-notes_dcgmproftester-2.0.10_1xt4_no-worker-prefix.txt",
       {.test_id = std::nullopt,
        .metric = "TensorEngineActive",
        .workers = {{.gpu = 0,
                     .instance = std::nullopt,
                     .gflops = {26723.0, 27450.3, 27520.2, 27386.5, 27294.1, 27304.2, 27220.1,
                                27193.2, 27139.5, 27125.2, 26985.2, 27282.3, 27413.9, 27366.0,
                                27378.1, 27244.6}}}}},
      {"ocp-gpu-sharing-notes_dcgmproftester12-3.3.5_1xa100-pcie-40gb_sci-notation.txt",
       {.test_id = 1004,
        .metric = "TensorEngineActive",
        .workers = {{.gpu = 0,
                     .instance = 0,
                     .gflops = {1.78e+05, 1.96e+05, 1.97e+05, 1.89e+05, 1.92e+05, 1.94e+05,
                                1.94e+05, 1.90e+05, 1.92e+05, 1.93e+05, 1.93e+05, 1.90e+05,
                                1.92e+05, 1.92e+05, 1.91e+05, 1.90e+05, 1.90e+05, 1.91e+05,
                                1.91e+05, 1.90e+05, 1.90e+05, 1.90e+05, 1.89e+05, 1.89e+05,
                                1.90e+05, 1.90e+05, 1.89e+05, 1.89e+05, 1.89e+05, 1.89e+05,
                                1.89e+05, 1.89e+05}}}}},
      // A GPU without tensor cores: the figure is real and implausibly low, and is kept as such.
      {"time-slicing-notes-zh-tw_dcgmproftester11-2.1.7_1xgeforce-2gb_no-tensor-cores.txt",
       {.test_id = 1004,
        .metric = "TensorEngineActive",
        .workers = {{.gpu = 0, .instance = 0, .gflops = {20.4, 20.4, 20.4}}}}},
  };
  return kCases;
}

std::string error_of(std::string_view text) {
  try {
    parse_dcgmproftester(text);
  } catch (const ParseError& e) {
    return e.what();
  }
  return "(parsed)";
}

std::string sample(const std::string& worker, const std::string& figure) {
  return worker + ": TensorEngineActive: generated ???, dcgm 0.000 (" + figure + " gflops)\n";
}

TEST(ProftesterFixtures, EveryRealRunParsesToEverySample) {
  for (const auto& c : fixture_cases()) {
    EXPECT_EQ(parse_dcgmproftester(read_fixture("matmul", c.file)), c.expected) << c.file;
  }
}

// A fixture added without expectations fails here rather than going untested.
TEST(ProftesterFixtures, EveryFixtureFileHasExpectations) {
  std::set<std::string> expected;
  for (const auto& c : fixture_cases()) expected.insert(c.file);
  std::set<std::string> present;
  for (const auto& entry : std::filesystem::directory_iterator(fixture_dir("matmul"))) {
    present.insert(entry.path().filename().string());
  }
  EXPECT_EQ(present, expected);
}

// Synthetic: a capture saved with Windows line ends reads the same.
TEST(ProftesterEdges, CrLfLineEnds) {
  for (const auto& c : fixture_cases()) {
    auto text = read_fixture("matmul", c.file);
    std::string crlf;
    for (char ch : text) crlf += ch == '\n' ? std::string("\r\n") : std::string(1, ch);
    EXPECT_EQ(parse_dcgmproftester(crlf), c.expected) << c.file;
  }
}

// Synthetic: prefixes without an instance or a test number, other precisions, and lines that
// mention gflops without being samples.
TEST(ProftesterEdges, OtherPrefixesAndPrecisions) {
  auto no_instance = parse_dcgmproftester(
      "Worker 3[1006]: Fp64EngineActive: generated ???, dcgm 0.000 (9700.5 gflops)\n"
      "Worker 3 [1006]: Fp64EngineActive: generated ???, dcgm 0.000 (9712 gflops).\n");
  EXPECT_EQ(no_instance,
            (ProftesterResult{.test_id = 1006,
                              .metric = "Fp64EngineActive",
                              .workers = {{.gpu = 3, .instance = {}, .gflops = {9700.5, 9712}}}}));

  auto no_test = parse_dcgmproftester("gflops are printed per second\n" +
                                      sample("Worker 2:0", "0") + sample("Worker 2:0", "1e3"));
  EXPECT_EQ(no_test,
            (ProftesterResult{.test_id = {},
                              .metric = "TensorEngineActive",
                              .workers = {{.gpu = 2, .instance = 0, .gflops = {0, 1000}}}}));
}

// Synthetic, the shape of NVIDIA/DCGM issue #239: -t 1007 printing no gflops is no reading.
TEST(ProftesterErrors, ARunWithoutGflopsIsNoReading) {
  for (const std::string& text : std::vector<std::string>{
           "",
           "\n\n",
           "Skipping CreateDcgmGroups() since DCGM validation is disabled\n",
           "Worker 0:0[1007]: Fp32EngineActive: target max, dcgm 0\n"
           "Worker 0:0[1007]: Fp32EngineActive: target max, dcgm 0\n",
           "Worker 0:0[1004]: Message: DCGM CudaContext Init completed successfully.\n",
       }) {
    EXPECT_EQ(error_of(text),
              "no sample with a gflops figure: not dcgmproftester output, or a test that reports "
              "none")
        << text;
  }
}

// Synthetic: malformed samples are refused naming their line.
TEST(ProftesterErrors, MalformedSamplesAreRefused) {
  const std::string first = sample("Worker 0:0[1004]", "100");
  struct Case {
    std::string second_line;
    std::string error;
  };
  for (const auto& c : std::vector<Case>{
           {sample("Worker 0:0[1004]", "fast"), "line 2: a gflops figure is not a number"},
           {sample("Worker 0:0[1004]", ""), "line 2: a gflops figure is not a number"},
           {sample("Worker 0:0[1004]", "nan"), "line 2: a gflops figure is not a number"},
           {sample("Worker 0:0[1004]", "inf"), "line 2: a gflops figure is not a number"},
           {sample("Worker 0:0[1004]", "1e400"), "line 2: a gflops figure is not a number"},
           {sample("Worker 0:0[1004]", "-5"),
            "line 2: a gflops figure is outside 0 to 1e8, not one a GPU measures"},
           {sample("Worker 0:0[1004]", "1e8"),
            "line 2: a gflops figure is outside 0 to 1e8, not one a GPU measures"},
           {"Worker 0:0[1004]: TensorEngineActive: 5 gflops)\n",
            "line 2: a gflops figure has no opening parenthesis"},
           {sample("Worker x:0[1004]", "100"),
            "line 2: a sample's worker prefix is not 'Worker GPU:INSTANCE[TEST]:'"},
           {sample("Worker 0:0[1004", "100"), "line 2: a sample's test number is not '[N]'"},
           {sample("Worker 0:0[abc]", "100"), "line 2: a sample's test number is not '[N]'"},
           {sample("Worker 100000:0[1004]", "100"),
            "line 2: a sample's worker prefix is not 'Worker GPU:INSTANCE[TEST]:'"},
           {sample("Worker 0:123456[1004]", "100"),
            "line 2: a sample's worker instance is not a number DCGM prints"},
           {"Worker 0:0[1004]: (100 gflops)\n",
            "line 2: a gflops sample has no metric name before its figure"},
           {"Worker 0:0[1004]: Tensor Engine Active: (100 gflops)\n",
            "line 2: a gflops sample has no metric name before its figure"},
           {"TensorEngineActive: generated ???, dcgm 0.000 (100 gflops)\n",
            "line 2: a sample without a worker prefix among samples with one"},
           {sample("Worker 0:0[1005]", "100"),
            "line 2: a sample of test 1005 after samples of test 1004; one output is one test"},
           {sample("Worker 0:0", "100"),
            "line 2: a sample of test none after samples of test 1004; one output is one test"},
           {"Worker 0:0[1004]: Fp16EngineActive: (100 gflops)\n",
            "line 2: a sample of Fp16EngineActive after samples of TensorEngineActive; one "
            "output is one test"},
       }) {
    EXPECT_EQ(error_of(first + c.second_line), c.error) << c.second_line;
  }
  EXPECT_EQ(error_of("TensorEngineActive: generated ???, dcgm 0.000 (1 gflops)\n" + first),
            "line 2: a sample with a worker prefix among samples without one");
}

// Synthetic: the bounds on workers and samples, just inside and just past them.
TEST(ProftesterErrors, LimitsBoundTheWork) {
  std::string workers;
  for (std::size_t i = 0; i < kMaxProftesterWorkers; ++i) {
    workers += sample("Worker " + std::to_string(i) + ":0[1004]", "1");
  }
  EXPECT_EQ(parse_dcgmproftester(workers).workers.size(), kMaxProftesterWorkers);
  workers += sample("Worker 0:1[1004]", "1");
  EXPECT_EQ(error_of(workers), "line 257: more than 256 workers, more GPUs than any node has");

  std::string samples;
  for (std::size_t i = 0; i < kMaxProftesterSamples; ++i) samples += "A: (1 gflops)\n";
  EXPECT_EQ(parse_dcgmproftester(samples).workers.at(0).gflops.size(), kMaxProftesterSamples);
  samples += "A: (1 gflops)\n";
  EXPECT_EQ(error_of(samples),
            "line 100001: a worker has more than 100000 samples, longer than any burn-in runs");

  EXPECT_THROW(parse_dcgmproftester(std::string(kMaxToolOutputBytes + 1, '\n')), ParseError);
}

}  // namespace dcgmproftester_test
}  // namespace gpurent::burn_in
