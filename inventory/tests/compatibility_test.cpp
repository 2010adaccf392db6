// Tests the image compatibility rules against the facts in shared/reference (gpus.md and
// cuda_min_driver_linux.csv).
#include "inventory/compatibility.h"

#include <gtest/gtest.h>

#include <compare>
#include <cstddef>
#include <iterator>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

namespace gpurent::inventory {

// Readable failure messages for gtest.
void PrintTo(const Version& v, std::ostream* os) {
  *os << v.str();
}
void PrintTo(ComputeCapability cc, std::ostream* os) {
  *os << cc.str();
}

namespace compatibility_test {

// A version the test spells out; fails the test rather than crash on a typo.
Version v(std::string_view text) {
  std::optional<Version> parsed = parse_version(text);
  EXPECT_TRUE(parsed.has_value()) << text;
  return parsed.value_or(Version{});
}

// GPU models from gpus.md.
const GpuFacts kV100{"V100-SXM2-32GB", Architecture::kVolta, {7, 0}};
const GpuFacts kT4{"T4-16GB", Architecture::kTuring, {7, 5}};
const GpuFacts kA100{"A100-SXM4-80GB", Architecture::kAmpere, {8, 0}};
const GpuFacts kL40S{"L40S-48GB", Architecture::kAda, {8, 9}};
const GpuFacts kH100{"H100-SXM5-80GB", Architecture::kHopper, {9, 0}};

TEST(ParseVersion, AcceptsDottedNumbers) {
  struct Case {
    std::string_view text;
    std::vector<int> parts;
  };
  const Case cases[] = {
      {"535.104.05", {535, 104, 5}},
      {"570.26", {570, 26}},
      {"580", {580}},
      {"12.2.2", {12, 2, 2}},
      {"0", {0}},
      {"99999.0.99999", {99999, 0, 99999}},
      {"007", {7}},
      {"12.4", {12, 4}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    std::optional<Version> parsed = parse_version(c.text);
    ASSERT_TRUE(parsed.has_value());
    EXPECT_EQ(parsed->parts, c.parts);
    EXPECT_EQ(parsed->str(), c.text);
  }
}

TEST(ParseVersion, RejectsMalformed) {
  for (std::string_view bad : {"",
                               ".",
                               "1.",
                               ".1",
                               "1..2",
                               "1.2.3.4",
                               "+1",
                               "-1",
                               "1.-2",
                               "1.+2",
                               " 1",
                               "1 ",
                               "1. 2",
                               "a",
                               "1.2a",
                               "v1.2",
                               "100000",
                               "1.100000",
                               "99999999999999999999",
                               "0x10",
                               "1,2",
                               "1.2.3."}) {
    EXPECT_FALSE(parse_version(bad).has_value()) << '"' << bad << '"';
  }
}

TEST(Version, StrKeepsTheParsedSpelling) {
  // Admins must see the driver as they wrote it, zero padding included.
  EXPECT_EQ(v("535.104.05").str(), "535.104.05");
  EXPECT_EQ((Version{{550, 54, 14}, ""}.str()), "550.54.14");
  EXPECT_EQ((Version{{12, 4}, ""}.str()), "12.4");
}

TEST(Version, ComparesNumerically) {
  struct Case {
    std::string_view a;
    std::string_view b;
    std::strong_ordering expected;
  };
  const Case cases[] = {
      {"570.26", "570.124.06", std::strong_ordering::less},
      {"580", "580.0.0", std::strong_ordering::equal},
      {"580.0", "580", std::strong_ordering::equal},
      {"535.104.05", "535.54.03", std::strong_ordering::greater},  // 104 > 54, not "1" < "5"
      {"535.104.05", "535.104.5", std::strong_ordering::equal},
      {"12.10", "12.9", std::strong_ordering::greater},
      {"1.0.1", "1", std::strong_ordering::greater},
      {"550.54.14", "550.54.15", std::strong_ordering::less},
      {"525.60.13", "525.85.12", std::strong_ordering::less},
      {"13.0", "12.9.1", std::strong_ordering::greater},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(c.a) + " vs " + std::string(c.b));
    EXPECT_TRUE((v(c.a) <=> v(c.b)) == c.expected);
    EXPECT_EQ(v(c.a) == v(c.b), c.expected == std::strong_ordering::equal);
  }
}

TEST(ParseComputeCapability, AcceptsAndRejects) {
  struct Case {
    std::string_view text;
    std::optional<ComputeCapability> expected;
  };
  const Case cases[] = {
      {"9.0", ComputeCapability{9, 0}},
      {"12.0", ComputeCapability{12, 0}},
      {"7.5", ComputeCapability{7, 5}},
      {"8.9", ComputeCapability{8, 9}},
      {"3.5", ComputeCapability{3, 5}},
      {"9", std::nullopt},
      {"9.", std::nullopt},
      {".0", std::nullopt},
      {"9.0.0", std::nullopt},
      {"9.10", std::nullopt},
      {"+9.0", std::nullopt},
      {"9,0", std::nullopt},
      {"", std::nullopt},
      {"a.b", std::nullopt},
      {"100.0", std::nullopt},
      {" 9.0", std::nullopt},
      {"9.-1", std::nullopt},
      {"sm_90", std::nullopt},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    EXPECT_EQ(parse_compute_capability(c.text), c.expected);
  }
  EXPECT_EQ(ComputeCapability({9, 0}).str(), "9.0");
  EXPECT_EQ(ComputeCapability({12, 0}).str(), "12.0");
}

TEST(Architecture, NamesRoundTrip) {
  const Architecture all[] = {Architecture::kVolta,  Architecture::kTuring,
                              Architecture::kAmpere, Architecture::kAda,
                              Architecture::kHopper, Architecture::kBlackwell};
  const std::string_view names[] = {"Volta", "Turing", "Ampere", "Ada", "Hopper", "Blackwell"};
  for (std::size_t i = 0; i < std::size(all); ++i) {
    EXPECT_EQ(to_string(all[i]), names[i]);
    EXPECT_EQ(parse_architecture(names[i]), all[i]);
  }
  for (std::string_view bad : {"", "hopper", "HOPPER", "Hopper ", "Lovelace", "Pascal"}) {
    EXPECT_FALSE(parse_architecture(bad).has_value()) << bad;
  }
}

TEST(CudaReleases, TranscribeTheCsv) {
  const std::vector<CudaRelease>& releases = cuda_releases();
  ASSERT_EQ(releases.size(), 20u);  // the CSV's data rows
  EXPECT_EQ(releases.front().label, "11.8 GA");
  EXPECT_EQ(releases.front().min_driver.str(), "520.61.05");
  EXPECT_EQ(releases.back().label, "13.2 GA");
  EXPECT_EQ(releases.back().min_driver.str(), "595.45.04");
  for (std::size_t i = 0; i < releases.size(); ++i) {
    const CudaRelease& r = releases[i];
    SCOPED_TRACE(r.label);
    const std::string base = std::to_string(r.major) + "." + std::to_string(r.minor);
    EXPECT_EQ(r.label, r.update == 0 ? base + " GA" : base + " Update " + std::to_string(r.update));
    if (i == 0) continue;
    // Oldest first, and a newer toolkit never needs an older driver: catches a swapped row.
    const CudaRelease& prev = releases[i - 1];
    EXPECT_LT(std::tie(prev.major, prev.minor, prev.update), std::tie(r.major, r.minor, r.update));
    EXPECT_LT(prev.min_driver, r.min_driver);
  }
}

TEST(DriverRunsCuda, Cuda124NeedsDriver550) {
  const Verdict old_driver = driver_runs_cuda(v("535.104.05"), v("12.4"));
  EXPECT_FALSE(old_driver);
  EXPECT_EQ(old_driver.reason,
            "CUDA 12.4 needs driver 550.54.14 or newer; the image has 535.104.05");
  EXPECT_TRUE(driver_runs_cuda(v("550.54.14"), v("12.4")));
  EXPECT_TRUE(driver_runs_cuda(v("550.54.14"), v("12.4")).reason.empty());
  EXPECT_FALSE(driver_runs_cuda(v("550.54.13"), v("12.4")));
  EXPECT_TRUE(driver_runs_cuda(v("580"), v("12.4")));
}

TEST(DriverRunsCuda, EveryCsvRowMinDriverAcceptedOneBelowRefused) {
  struct Case {
    std::string name;
    Version cuda;
    Version driver;
    bool ok;
  };
  std::vector<Case> cases;
  for (const CudaRelease& r : cuda_releases()) {
    const Version cuda{{r.major, r.minor, r.update}, ""};
    Version below = r.min_driver;
    ASSERT_GT(below.parts.back(), 0) << r.label;
    --below.parts.back();
    below.spelling.clear();
    cases.push_back({r.label + " at its minimum", cuda, r.min_driver, true});
    cases.push_back({r.label + " one below", cuda, below, false});
  }
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name + ": CUDA " + c.cuda.str() + " with driver " + c.driver.str());
    const Verdict verdict = driver_runs_cuda(c.driver, c.cuda);
    EXPECT_EQ(verdict.ok, c.ok) << verdict.reason;
    EXPECT_EQ(verdict.reason.empty(), c.ok);
  }
}

TEST(DriverRunsCuda, UnknownMajorIsRefused) {
  for (std::string_view cuda : {"10.2", "9", "14.0", "0"}) {
    SCOPED_TRACE(cuda);
    const Verdict verdict = driver_runs_cuda(v("595.45.04"), v(cuda));
    EXPECT_FALSE(verdict);
    EXPECT_NE(verdict.reason.find("CUDA " + std::string(cuda)), std::string::npos);
  }
}

TEST(MinDriverForCuda, UpdateRuleAndFloors) {
  struct Case {
    std::string_view cuda;
    std::optional<std::string_view> min_driver;
  };
  const Case cases[] = {
      {"12.2.2", "535.104.05"},  // listed update
      {"12.2.1", "535.54.03"},   // greatest listed update <= 1 is GA
      {"12.2", "535.54.03"},    {"12.2.0", "535.54.03"},
      {"12.2.3", "535.104.05"},                       // past the last listed update
      {"12.7", "525.60.13"},                          // unlisted minor: the 12.x floor
      {"12.7.1", "525.60.13"},  {"12", "525.60.13"},  // 12.0 GA
      {"12.0.1", "525.85.12"},  {"12.8", "570.26"},
      {"12.8.1", "570.124.06"}, {"12.9", "575.51.03"},
      {"11.8", "520.61.05"},    {"11.7", "450.80.02"},  // unlisted minor: the 11.x floor
      {"11.0", "450.80.02"},    {"13.0", "580.65.06"},
      {"13.0.1", "580.65.06"},  {"13.0.2", "580.95.05"},
      {"13.2", "595.45.04"},    {"13.3", "580.65.06"},  // unlisted minor: the 13.x floor
      {"10.2", std::nullopt},   {"14.0", std::nullopt},
      {"0", std::nullopt},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.cuda);
    std::optional<Version> expected;
    if (c.min_driver) expected = v(*c.min_driver);
    const std::optional<Version> actual = min_driver_for_cuda(v(c.cuda));
    EXPECT_EQ(actual, expected);
    // The spelling comes from the table, zero padding included.
    if (actual && expected) {
      EXPECT_EQ(actual->str(), expected->str());
    }
  }
}

TEST(CudaSupports, ComputeCapabilityRanges) {
  struct Case {
    std::string_view cuda;
    ComputeCapability cc;
    bool expected;
  };
  const Case cases[] = {
      {"11.0", {3, 5}, true},   {"11.0", {8, 0}, true},  {"11.0", {8, 6}, false},
      {"11.0", {3, 0}, false},  {"11.1", {8, 6}, true},  {"11.7", {8, 6}, true},
      {"11.7", {8, 9}, false},  {"11.7", {9, 0}, false}, {"11.8", {8, 9}, true},
      {"11.8", {9, 0}, true},   {"11.8", {3, 5}, true},  {"11.8", {10, 0}, false},
      {"12.0", {3, 5}, false},  {"12.0", {3, 7}, false}, {"12.0", {5, 0}, true},
      {"12.0", {7, 0}, true},   {"12.7", {9, 0}, true},  {"12.7", {10, 0}, false},
      {"12.8", {10, 0}, true},  {"12.8", {12, 0}, true}, {"12.9.1", {12, 0}, true},
      {"12.9", {12, 1}, false}, {"13.0", {7, 0}, false}, {"13.0", {7, 5}, true},
      {"13.0", {12, 0}, true},  {"13.2", {5, 0}, false}, {"10.2", {7, 0}, false},
      {"14.0", {9, 0}, false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(c.cuda) + " for " + c.cc.str());
    EXPECT_EQ(cuda_supports(v(c.cuda), c.cc), c.expected);
  }
}

TEST(MinDriverBranch, ConservativeBranches) {
  EXPECT_EQ(min_driver_branch(Architecture::kVolta), 384);
  EXPECT_EQ(min_driver_branch(Architecture::kTuring), 410);
  EXPECT_EQ(min_driver_branch(Architecture::kAmpere), 450);
  EXPECT_EQ(min_driver_branch(Architecture::kAda), 525);
  EXPECT_EQ(min_driver_branch(Architecture::kHopper), 525);
  EXPECT_EQ(min_driver_branch(Architecture::kBlackwell), 570);
}

TEST(ImageRunsOn, ImagesAgainstGpus) {
  struct Case {
    std::string_view driver;
    std::string_view cuda;
    const GpuFacts* gpu;
    bool ok;
    std::string_view reason_mentions;  // empty when ok
  };
  const Case cases[] = {
      // CUDA 13 dropped Volta (rule 2); Turing onwards is fine on R580.
      {"580.65.06", "13.0", &kV100, false, "compute capability 7.0"},
      {"580.65.06", "13.0", &kT4, true, ""},
      {"580.65.06", "13.0", &kH100, true, ""},
      {"580.95.05", "13.0", &kH100, true, ""},
      {"580.65.05", "13.0", &kT4, false, "580.65.06"},
      // CUDA 11.7 predates sm_90 (rule 2) though its 11.x floor driver is met (rule 1).
      {"450.80.02", "11.7", &kH100, false, "compute capability 9.0"},
      {"450.80.02", "11.7", &kA100, true, ""},
      // CUDA 11.8's own minimum driver is R520, older than Hopper and Ada need (rule 3).
      {"520.61.05", "11.8", &kH100, false, "R525"},
      {"520.61.05", "11.8", &kL40S, false, "R525"},
      {"520.61.05", "11.8", &kA100, true, ""},
      {"525.60.13", "11.8", &kH100, true, ""},
      // A current image everywhere CUDA 12 builds for.
      {"550.54.14", "12.4", &kV100, true, ""},
      {"550.54.14", "12.4", &kT4, true, ""},
      {"550.54.14", "12.4", &kL40S, true, ""},
      {"550.54.14", "12.4", &kH100, true, ""},
      // Rule 1 is reported before rule 2 when both fail.
      {"535.104.05", "13.0", &kV100, false, "needs driver 580.65.06"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(c.driver) + " + CUDA " + std::string(c.cuda) + " on " + c.gpu->name);
    const Verdict verdict = image_runs_on(v(c.driver), v(c.cuda), *c.gpu);
    EXPECT_EQ(verdict.ok, c.ok) << verdict.reason;
    if (c.ok) {
      EXPECT_TRUE(verdict.reason.empty()) << verdict.reason;
    } else {
      EXPECT_NE(verdict.reason.find(c.reason_mentions), std::string::npos) << verdict.reason;
    }
  }
}

TEST(ImageRunsOn, ReasonsReadForAdmins) {
  EXPECT_EQ(image_runs_on(v("520.61.05"), v("11.8"), kH100).reason,
            "H100-SXM5-80GB (Hopper) needs driver branch R525 or newer; the image has 520.61.05");
  EXPECT_EQ(image_runs_on(v("580.65.06"), v("13.0"), kV100).reason,
            "CUDA 13.0 cannot build for V100-SXM2-32GB (compute capability 7.0)");
}

TEST(Precision, Bf16AndFp8ByComputeCapability) {
  struct Case {
    std::string_view gpu;
    ComputeCapability cc;
    bool bf16;
    bool fp8;
  };
  // The bf16/fp8 columns of gpus.md.
  const Case cases[] = {
      {"V100", {7, 0}, false, false},  {"T4", {7, 5}, false, false},
      {"A100", {8, 0}, true, false},   {"L40S", {8, 9}, true, true},
      {"L4", {8, 9}, true, true},      {"H100", {9, 0}, true, true},
      {"H200", {9, 0}, true, true},    {"sm_86", {8, 6}, true, false},
      {"sm_120", {12, 0}, true, true},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.gpu);
    EXPECT_EQ(supports_bf16(c.cc), c.bf16);
    EXPECT_EQ(supports_fp8(c.cc), c.fp8);
  }
}

}  // namespace compatibility_test
}  // namespace gpurent::inventory
