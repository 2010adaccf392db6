// Tests the `nvidia-smi nvlink -s` and `-e` parsers on real outputs (fixtures/nvlink, provenance
// in fixtures/README.md), each file through both parsers, and on synthetic edges: the driver's
// one-line answers, newer counter names, duplicates, refusals and bounds.
#include "agent_proto/burn_in/nvlink_status.h"
#include "agent_proto/burn_in/tests/fixture_text.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <set>

namespace gpurent::burn_in {
namespace nvlink_status_test {

using testing::fixture_dir;
using testing::read_fixture;

// Links 0..count-1 all at one speed, as the fixtures print them.
std::vector<NvlinkLinkState> at(int count, double gbps) {
  std::vector<NvlinkLinkState> out;
  for (int i = 0; i < count; ++i) out.push_back({.link = i, .gbps = gbps});
  return out;
}

NvlinkGpuStatus status(int gpu, std::string name, std::vector<NvlinkLinkState> links) {
  return {.gpu = gpu,
          .name = std::move(name),
          .links = std::move(links),
          .all_inactive = false,
          .unsupported = false};
}

// The per-link inactive pattern of the HPE bridged H100 pair: links 4, 5, 10, 11, 16, 17.
std::vector<NvlinkLinkState> hpe_bridge_links() {
  auto links = at(18, 26.562);
  for (int i : {4, 5, 10, 11, 16, 17}) links[static_cast<std::size_t>(i)].gbps = std::nullopt;
  return links;
}

// The Brev A100's -e: 12 links of the three older counters, all zero.
std::vector<NvlinkLinkErrors> brev_zero_links() {
  std::vector<NvlinkLinkErrors> out;
  for (int i = 0; i < 12; ++i) {
    out.push_back({.link = i, .counters = {{"replay", 0}, {"recovery", 0}, {"crc", 0}}});
  }
  return out;
}

struct FixtureCase {
  std::string file;
  // What each parser makes of the file; nullopt: it refuses it (the other subcommand's output).
  std::optional<std::vector<NvlinkGpuStatus>> status;
  std::optional<std::vector<NvlinkGpuErrors>> errors;
};

const std::vector<FixtureCase>& fixture_cases() {
  static const std::vector<FixtureCase> kCases = [] {
    std::vector<NvlinkGpuErrors> brev_errors;
    for (int gpu = 0; gpu < 8; ++gpu) {
      brev_errors.push_back(
          {.gpu = gpu, .name = "NVIDIA A100-SXM4-40GB", .links = brev_zero_links()});
    }
    auto azure_links = at(6, 25.781);
    azure_links[3].gbps = std::nullopt;
    azure_links[5].gbps = std::nullopt;
    NvlinkGpuStatus b200 = status(2, "NVIDIA B200", {});
    b200.all_inactive = true;
    return std::vector<FixtureCase>{
        {"azhpc-diagnostics-73_v100-sxm2-32gb-multi-gpu_gpu3-links-3-5-inactive_status.txt",
         std::vector{status(3, "Tesla V100-SXM2-32GB", azure_links)}, std::nullopt},
        {"brev-burn-in-notes_8xa100-sxm4-40gb_gpu0-only_status.txt",
         std::vector{status(0, "NVIDIA A100-SXM4-40GB", at(12, 25))}, std::nullopt},
        {"brev-burn-in-notes_8xa100-sxm4-40gb_per-gpu-loop_errors.txt", std::nullopt, brev_errors},
        // The issue does not say which subcommand printed it: both parsers read it alike.
        {"gpud-1085_b200_all-links-inactive-message.txt", std::vector{b200},
         std::vector<NvlinkGpuErrors>{{.gpu = 2, .name = "NVIDIA B200", .links = {}}}},
        {"hpe-dl380a-h100-nvlink_2xh100-pcie_bridge-links-inactive_status.txt",
         std::vector{status(0, "NVIDIA H100 PCIe", hpe_bridge_links()),
                     status(1, "NVIDIA H100 PCIe", hpe_bridge_links())},
         std::nullopt},
        {"k8s-test-infra-371_4xgb200_truncated_status.txt",
         std::vector{status(0, "NVIDIA GB200", at(18, 53.125)),
                     status(1, "NVIDIA GB200", at(2, 53.125))},
         std::nullopt},
        {"openshift-power9-notes_4xv100-sxm2-16gb_status.txt",
         std::vector{status(0, "Tesla V100-SXM2-16GB", at(6, 25.781)),
                     status(1, "Tesla V100-SXM2-16GB", at(6, 25.781)),
                     status(2, "Tesla V100-SXM2-16GB", at(6, 25.781)),
                     status(3, "Tesla V100-SXM2-16GB", at(6, 25.781))},
         std::nullopt},
    };
  }();
  return kCases;
}

std::string error_of(const std::function<void()>& parse) {
  try {
    parse();
  } catch (const ParseError& e) {
    return e.what();
  }
  return "(parsed)";
}

std::string status_error(const std::string& text) {
  return error_of([&] { parse_nvlink_status(text); });
}

std::string errors_error(const std::string& text) {
  return error_of([&] { parse_nvlink_errors(text); });
}

std::string crlf(const std::string& text) {
  std::string out;
  for (char c : text) out += c == '\n' ? std::string("\r\n") : std::string(1, c);
  return out;
}

TEST(NvlinkFixtures, EveryRealOutputThroughBothParsers) {
  for (const auto& c : fixture_cases()) {
    auto text = read_fixture("nvlink", c.file);
    for (const auto& t : {text, crlf(text)}) {  // and saved with Windows line ends
      if (c.status) {
        EXPECT_EQ(parse_nvlink_status(t), *c.status) << c.file;
      } else {
        EXPECT_THROW(parse_nvlink_status(t), ParseError) << c.file;
      }
      if (c.errors) {
        EXPECT_EQ(parse_nvlink_errors(t), *c.errors) << c.file;
      } else {
        EXPECT_THROW(parse_nvlink_errors(t), ParseError) << c.file;
      }
    }
  }
}

// A fixture added without expectations fails here rather than going untested.
TEST(NvlinkFixtures, EveryFixtureFileHasExpectations) {
  std::set<std::string> expected;
  for (const auto& c : fixture_cases()) expected.insert(c.file);
  std::set<std::string> present;
  for (const auto& entry : std::filesystem::directory_iterator(fixture_dir("nvlink"))) {
    present.insert(entry.path().filename().string());
  }
  EXPECT_EQ(present, expected);
}

TEST(NvlinkFixtures, WrongSubcommandIsRefusedNamingTheLine) {
  EXPECT_EQ(status_error(read_fixture(
                "nvlink", "brev-burn-in-notes_8xa100-sxm4-40gb_per-gpu-loop_errors.txt")),
            "line 3: a link's speed is neither 'N GB/s' nor '<inactive>'");
  EXPECT_EQ(errors_error(
                read_fixture("nvlink", "brev-burn-in-notes_8xa100-sxm4-40gb_gpu0-only_status.txt")),
            "line 2: a link line is not 'Link N: COUNTER: COUNT'");
}

// Synthetic: the driver's one-line answers, for status and for errors, and indentation by tab
// and space, by spaces, or none.
TEST(NvlinkEdges, OneLineAnswersAndIndents) {
  const std::string text =
      "GPU 0: NVIDIA GeForce RTX 4090 (UUID: GPU-0)\n"
      "\tDevice does not have or support Nvlink.\n"
      "GPU 1: NVIDIA A100-SXM4-80GB (UUID: GPU-1)\n"
      "   NVLink is not supported on this GPU in MIG mode\n"
      "GPU 2: NVIDIA H100 80GB HBM3\n"
      "NVML: Unable to retrieve NVLink information as all links are inActive\n"
      "GPU 3: NVIDIA H100 80GB HBM3 (UUID: GPU-3)\n"
      "\t Link 0: 26.562 GB/s\n"
      "    Link 1: <inactive>\n"
      "Link 2: 0 GB/s\n";
  auto s = parse_nvlink_status(text);
  ASSERT_EQ(s.size(), 4u);
  EXPECT_TRUE(s[0].unsupported);
  EXPECT_FALSE(s[0].all_inactive);
  EXPECT_EQ(s[0].name, "NVIDIA GeForce RTX 4090");
  EXPECT_TRUE(s[1].unsupported);
  EXPECT_TRUE(s[2].all_inactive);
  EXPECT_FALSE(s[2].unsupported);
  EXPECT_EQ(s[2].name, "NVIDIA H100 80GB HBM3");  // a header without a UUID
  EXPECT_EQ(s[3].links,
            (std::vector<NvlinkLinkState>{
                {.link = 0, .gbps = 26.562}, {.link = 1, .gbps = {}}, {.link = 2, .gbps = 0}}));
  for (std::size_t i = 0; i < 3; ++i) EXPECT_TRUE(s[i].links.empty()) << i;

  auto e = parse_nvlink_errors(
      "GPU 0: NVIDIA GeForce RTX 4090 (UUID: GPU-0)\n"
      "\tDevice does not have or support Nvlink.\n");
  EXPECT_EQ(
      e,
      (std::vector<NvlinkGpuErrors>{{.gpu = 0, .name = "NVIDIA GeForce RTX 4090", .links = {}}}));
}

// Synthetic, written from the names a GB200 -e parser expects (not a real capture; see the
// fixtures README): newer counter names, nonzero counts, surroundings of a paste skipped.
TEST(NvlinkEdges, NewerCounterNamesAndNonzeroCounts) {
  auto e = parse_nvlink_errors(
      "$ for i in 0 1; do nvidia-smi nvlink -e -i $i; done\n"
      "GPU 00000008:06:00.0\n"  // an -q style header is not "GPU N:"
      "GPU 1: NVIDIA GB200 (UUID: GPU-1)\n"
      "\t Link 0: Malformed packet Errors: 0\n"
      "\t Link 0: Rx Errors: 12\n"
      "\t Link 0: Tx discards: 3\n"
      "\t Link 0: Link recovery successful events: 1\n"
      "\t Link 0: Effective Errors: 9000000000\n"
      "\t Link 0: FEC Errors - 3: 7\n"
      "...\n"
      "\t Link 1: CRC Errors: 5\n");
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e[0].gpu, 1);
  ASSERT_EQ(e[0].links.size(), 2u);
  EXPECT_EQ(e[0].links[0].counters, (std::map<std::string, std::int64_t>{
                                        {"malformed_packet", 0},
                                        {"rx", 12},
                                        {"tx_discards", 3},
                                        {"link_recovery_successful_events", 1},
                                        {"effective", 9000000000},
                                        {"fec_errors_3", 7},
                                    }));
  EXPECT_EQ(e[0].links[1].counters, (std::map<std::string, std::int64_t>{{"crc", 5}}));
}

// Synthetic: duplicates are refused naming the line.
TEST(NvlinkErrors, DuplicatesAreRefused) {
  const std::string gpu0 = "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-0)\n";
  EXPECT_EQ(status_error(gpu0 + "\t Link 0: 26.562 GB/s\n" + gpu0),
            "line 3: GPU 0 is printed twice");
  EXPECT_EQ(status_error(gpu0 + "\t Link 0: 26.562 GB/s\n\t Link 0: <inactive>\n"),
            "line 3: link 0 of GPU 0 is printed twice");
  EXPECT_EQ(errors_error(gpu0 + "\t Link 0: CRC Errors: 0\n" + gpu0),
            "line 3: GPU 0 is printed twice");
  EXPECT_EQ(errors_error(gpu0 + "\t Link 0: CRC Errors: 0\n\t Link 1: CRC Errors: 0\n"
                                "\t Link 0: Replay Errors: 0\n"),
            "line 4: link 0 of GPU 0 is printed twice");
  EXPECT_EQ(errors_error(gpu0 + "\t Link 0: CRC Errors: 0\n\t Link 0: CRC Errors: 1\n"),
            "line 3: link 0 of GPU 0 has its crc counter twice");
  // The same link on another GPU is another link.
  EXPECT_EQ(parse_nvlink_status(gpu0 + "\t Link 0: 1 GB/s\nGPU 1: X\n\t Link 0: 1 GB/s\n").size(),
            2u);
}

// Synthetic: what is not the tool's output, or not in its shape.
TEST(NvlinkErrors, BrokenOutputIsRefused) {
  for (const std::string& text :
       {std::string(), std::string("\r\n"), std::string("=== GPU 0 NVLink Errors ===\n...\n")}) {
    EXPECT_EQ(status_error(text), "no 'GPU N:' header: not `nvidia-smi nvlink -s` output");
    EXPECT_EQ(errors_error(text), "no 'GPU N:' header: not `nvidia-smi nvlink -e` output");
  }
  EXPECT_EQ(status_error("....\n\t Link 0: 25 GB/s\nGPU 0: X\n"),
            "line 2: a link line before any 'GPU N:' header");
  EXPECT_EQ(errors_error("\t Link 0: CRC Errors: 0\nGPU 0: X\n"),
            "line 1: a link line before any 'GPU N:' header");

  const std::string gpu = "GPU 0: X\n";
  for (const char* link : {"Link 0: fast GB/s", "Link 0: 25 Gb/s", "Link 0: 25", "Link 0: inactive",
                           "Link 0: 25 GB/s extra", "Link 0: nan GB/s"}) {
    EXPECT_EQ(status_error(gpu + link + "\n"),
              "line 2: a link's speed is neither 'N GB/s' nor '<inactive>'")
        << link;
  }
  for (const char* link : {"Link 0: -1 GB/s", "Link 0: 10000 GB/s"}) {
    EXPECT_EQ(status_error(gpu + link + "\n"),
              "line 2: a link's speed is outside 0 to 10000 GB/s, not one NVLink runs at")
        << link;
  }
  EXPECT_EQ(status_error(gpu + "Link 0: 1 GB/s\nall links are inActive\n"),
            "line 3: GPU 0 has link lines and a one-line answer instead");
  EXPECT_EQ(status_error(gpu + "all links are inActive\nLink 0: 1 GB/s\n"),
            "line 3: GPU 0 has link lines after a one-line answer instead");

  for (const char* link :
       {"Link 0: CRC Errors: -1", "Link 0: CRC Errors: N/A", "Link 0: CRC Errors: 1.5",
        "Link 0: CRC Errors:", "Link 0: CRC Errors: 99999999999999999999"}) {
    EXPECT_EQ(errors_error(gpu + link + "\n"), "line 2: an error count is not a whole number >= 0")
        << link;
  }
  for (const char* link : {"Link 0: : 0", "Link 0: -- : 0"}) {
    EXPECT_EQ(errors_error(gpu + link + "\n"),
              "line 2: a link line's counter name is empty or longer than 64 bytes")
        << link;
  }
}

// Synthetic: the bounds, just inside and just past them.
TEST(NvlinkErrors, LimitsBoundTheWork) {
  std::string gpus;
  for (std::size_t i = 0; i < kMaxNvlinkGpus; ++i) gpus += "GPU " + std::to_string(i) + ": X\n";
  EXPECT_EQ(parse_nvlink_status(gpus).size(), kMaxNvlinkGpus);
  EXPECT_EQ(parse_nvlink_errors(gpus).size(), kMaxNvlinkGpus);
  EXPECT_EQ(status_error("GPU 1024: X\n"),
            "line 1: a GPU number is above 1023, more GPUs than any node has");
  EXPECT_EQ(errors_error("GPU 99999999999999999999: X\n"),
            "line 1: a GPU number is above 1023, more GPUs than any node has");

  std::string links = "GPU 0: X\n";
  for (std::size_t i = 0; i < kMaxNvlinkLinksPerGpu; ++i) {
    links += "\t Link " + std::to_string(i) + ": 1 GB/s\n";
  }
  EXPECT_EQ(parse_nvlink_status(links).at(0).links.size(), kMaxNvlinkLinksPerGpu);
  EXPECT_EQ(status_error(links + "\t Link 64: 1 GB/s\n"),
            "line 66: a link number is above 63, more links than a GPU has");
  EXPECT_EQ(errors_error("GPU 0: X\n\t Link 64: CRC Errors: 0\n"),
            "line 2: a link number is above 63, more links than a GPU has");

  std::string counters = "GPU 0: X\n";
  for (std::size_t i = 0; i < kMaxNvlinkCountersPerLink; ++i) {
    counters += "\t Link 0: Counter " + std::to_string(i) + ": 0\n";
  }
  EXPECT_EQ(parse_nvlink_errors(counters).at(0).links.at(0).counters.size(),
            kMaxNvlinkCountersPerLink);
  EXPECT_EQ(errors_error(counters + "\t Link 0: Counter 16: 0\n"),
            "line 18: a link has more than 16 error counters, more than the driver prints");
  EXPECT_EQ(errors_error("GPU 0: X\n\t Link 0: " + std::string(65, 'a') + ": 0\n"),
            "line 2: a link line's counter name is empty or longer than 64 bytes");

  auto long_name = parse_nvlink_status("GPU 0: " + std::string(300, 'n') + "\x01\n");
  EXPECT_EQ(long_name.at(0).name, std::string(kMaxNvlinkNameBytes, 'n'));
  EXPECT_EQ(parse_nvlink_status("GPU 0: NVIDIA \xe2\x80\x94 H100\n").at(0).name,
            "NVIDIA ??? H100");  // printable ASCII only

  EXPECT_THROW(parse_nvlink_status(std::string(kMaxToolOutputBytes + 1, '\n')), ParseError);
  EXPECT_THROW(parse_nvlink_errors(std::string(kMaxToolOutputBytes + 1, '\n')), ParseError);
}

}  // namespace nvlink_status_test
}  // namespace gpurent::burn_in
