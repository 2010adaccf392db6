// Tests the `nvidia-smi topo -m` parser against output captured on real machines and against
// malformed and hostile text, plus declared-shape matrices and the JSON form.
#include "agent_proto/topology.h"
#include "tests/support/paths.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <sstream>

namespace gpurent::topology {

// Readable failures; found by argument-dependent lookup, so outside the unnamed namespace.
void PrintTo(const Matrix& m, std::ostream* os) {
  *os << to_json(m).dump();
}

namespace topology_test {

using ::testing::HasSubstr;

// ---- Helpers ----

std::filesystem::path fixture_dir() {
  return std::filesystem::path(gpurent::testing::source_dir()) / "agent_proto/tests/fixtures/topo";
}

std::string read_fixture(const std::string& name) {
  std::ifstream in(fixture_dir() / name, std::ios::binary);
  EXPECT_TRUE(in) << "missing fixture " << name;
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

// The ParseError message of parsing `text`, or "" when it parsed.
std::string parse_error(std::string_view text) {
  try {
    parse_topo_m(text);
  } catch (const ParseError& e) {
    return e.what();
  }
  return "";
}

std::string replace_all(std::string s, std::string_view from, std::string_view to) {
  for (auto pos = s.find(from); pos != std::string::npos; pos = s.find(from, pos + to.size())) {
    s.replace(pos, from.size(), to);
  }
  return s;
}

// A matrix whose off-diagonal cells are all `kind`.
Matrix uniform(int gpus, const std::string& kind) {
  Matrix m{gpus, std::vector(gpus, std::vector(gpus, kind))};
  for (int i = 0; i < gpus; ++i) m.links[i][i] = "X";
  return m;
}

// Every message goes into a JSON 400 body: printable ASCII, one line.
bool is_printable_ascii(std::string_view s) {
  for (char c : s) {
    if (c < 0x20 || c > 0x7e) return false;
  }
  return true;
}

const Matrix kSingleGpu{1, {{"X"}}};

// ---- Link kinds ----

TEST(LinkKind, AcceptsWhatNvidiaSmiPrints) {
  for (auto kind : {"X", "NV1", "NV4", "NV6", "NV12", "NV18", "NV99", "PIX", "PXB", "PHB", "NODE",
                    "SYS", "SOC"}) {
    EXPECT_TRUE(is_link_kind(kind)) << kind;
  }
}

TEST(LinkKind, RejectsEverythingElse) {
  for (auto kind : {"", "x", "NV", "NV0", "NV01", "NV100", "NV-1", "NVX", "NV#", "nv4", " X",
                    "PHB ", "node", "GPU0", "N/A", "PCI"}) {
    EXPECT_FALSE(is_link_kind(kind)) << "'" << kind << "'";
  }
}

TEST(LinkKind, NvlinkCount) {
  EXPECT_EQ(nvlink_count("NV18"), 18);
  EXPECT_EQ(nvlink_count("NV1"), 1);
  EXPECT_EQ(nvlink_count("NV0"), 0);
  EXPECT_EQ(nvlink_count("PHB"), 0);
  EXPECT_EQ(nvlink_count("X"), 0);
  EXPECT_TRUE(is_nvlink("NV4"));
  EXPECT_FALSE(is_nvlink("SYS"));
  EXPECT_FALSE(is_nvlink("X"));
}

// ---- Matrix::all_nvlink ----

TEST(AllNvlink, EmptyAndSingleSubsetsAreTrivially) {
  auto pcie = uniform(2, "PHB");
  EXPECT_TRUE(pcie.all_nvlink({}));
  EXPECT_TRUE(pcie.all_nvlink({1}));
  EXPECT_FALSE(pcie.all_nvlink({0, 1}));
}

TEST(AllNvlink, OutOfRangeIndexIsFalseAndRepeatsAreIgnored) {
  auto nvswitch = uniform(4, "NV18");
  EXPECT_FALSE(nvswitch.all_nvlink({0, 4}));
  EXPECT_FALSE(nvswitch.all_nvlink({-1}));
  EXPECT_TRUE(nvswitch.all_nvlink({2, 2, 3}));
}

// ---- Every captured fixture ----

struct FixtureCase {
  std::string label;  // the test name
  std::string file;
  std::optional<Matrix> expected;  // nullopt: must fail with `error`
  std::string error;
};

void PrintTo(const FixtureCase& c, std::ostream* os) {
  *os << c.label;
}

Matrix pxb_pix_sys() {
  return {4,
          {{"X", "PXB", "SYS", "SYS"},
           {"PXB", "X", "SYS", "SYS"},
           {"SYS", "SYS", "X", "PIX"},
           {"SYS", "SYS", "PIX", "X"}}};
}

const std::vector<FixtureCase>& fixture_cases() {
  static const std::vector<FixtureCase> cases{
      {"Rtx2080Super_595_71_05", "linux-x86_64__nvidia-geforce-rtx-2080-super__595.71.05.topo-m",
       kSingleGpu, ""},
      {"Rtx2080Super_610_57_04", "linux-x86_64__nvidia-geforce-rtx-2080-super__610.57.04.topo-m",
       kSingleGpu, ""},
      {"Rtx4080Super_595_71_05", "linux-x86_64__nvidia-geforce-rtx-4080-super__595.71.05.topo-m",
       kSingleGpu, ""},
      {"H100_80gb_590_48_01", "linux-x86_64__nvidia-h100-80gb-hbm3__590.48.01.topo-m", kSingleGpu,
       ""},
      {"H100Mig_590_48_01", "linux-x86_64__nvidia-h100-mig__590.48.01.topo-m", kSingleGpu, ""},
      {"H200Mig_590_48_01", "linux-x86_64__nvidia-h200-mig__590.48.01.topo-m", kSingleGpu, ""},
      {"H200_590_48_01", "linux-x86_64__nvidia-h200__590.48.01.topo-m", kSingleGpu, ""},
      {"L40s_595_80", "linux-x86_64__nvidia-l40s__595.80.topo-m", kSingleGpu, ""},
      {"WindowsRtx2080Super_610_62", "windows-x86_64__nvidia-geforce-rtx-2080-super__610.62.topo-m",
       kSingleGpu, ""},
      {"WindowsRtx2080Super_591_86_Error",
       "windows-x86_64__nvidia-geforce-rtx-2080-super__591.86.topo-m", std::nullopt,
       "Option -m is missing"},
      {"Nccl1298_8xA10G_Phb", "nccl-1298_aws-g5.48xlarge_8xA10G_PHB.topo-m.txt", uniform(8, "PHB"),
       ""},
      {"Nccl1617_4xH100_Nv6", "nccl-1617_4xH100_NV6.topo-m.txt", uniform(4, "NV6"), ""},
      {"Nccl667_4gpu_PxbPixSys", "nccl-667_4gpu_PXB_PIX_SYS.topo-m.txt", pxb_pix_sys(), ""},
  };
  return cases;
}

class TopoFixture : public ::testing::TestWithParam<FixtureCase> {};

TEST_P(TopoFixture, ParsesToExpectedMatrixOrError) {
  const auto& c = GetParam();
  auto text = read_fixture(c.file);
  if (c.expected) {
    EXPECT_EQ(parse_topo_m(text), *c.expected);
  } else {
    auto error = parse_error(text);
    EXPECT_THAT(error, HasSubstr(c.error));
    EXPECT_TRUE(is_printable_ascii(error)) << error;
  }
}

INSTANTIATE_TEST_SUITE_P(Captured, TopoFixture, ::testing::ValuesIn(fixture_cases()),
                         [](const auto& info) { return info.param.label; });

TEST(TopoFixtures, EveryFileInTheFolderHasACase) {
  std::set<std::string> covered;
  for (const auto& c : fixture_cases()) covered.insert(c.file);
  for (const auto& entry : std::filesystem::directory_iterator(fixture_dir())) {
    auto name = entry.path().filename().string();
    if (name == "README.md") continue;
    EXPECT_TRUE(covered.contains(name)) << name << " has no case in fixture_cases()";
  }
}

TEST(TopoFixtures, H100Nv6MeshIsAllNvlinkAndDropsNics) {
  auto m = parse_topo_m(read_fixture("nccl-1617_4xH100_NV6.topo-m.txt"));
  ASSERT_EQ(m.gpus, 4);
  ASSERT_EQ(m.links.size(), 4u);
  for (const auto& row : m.links) EXPECT_EQ(row.size(), 4u);
  EXPECT_TRUE(m.all_nvlink({0, 1, 2, 3}));
  EXPECT_EQ(nvlink_count(m.links[0][3]), 6);
}

TEST(TopoFixtures, A10gIsAllPhbWithoutNvlink) {
  auto m = parse_topo_m(read_fixture("nccl-1298_aws-g5.48xlarge_8xA10G_PHB.topo-m.txt"));
  ASSERT_EQ(m.gpus, 8);
  for (int i = 0; i < 8; ++i) {
    for (int j = 0; j < 8; ++j) {
      EXPECT_EQ(m.links[i][j], i == j ? "X" : "PHB") << i << "," << j;
      if (i != j) {
        EXPECT_FALSE(m.all_nvlink({i, j}));
      }
    }
  }
}

TEST(TopoFixtures, WindowsErrorQuotesTheFirstLineOnly) {
  auto error =
      parse_error(read_fixture("windows-x86_64__nvidia-geforce-rtx-2080-super__591.86.topo-m"));
  EXPECT_THAT(error, HasSubstr("ERROR: Option -m is missing its value"));
  EXPECT_THAT(error, ::testing::Not(HasSubstr("exit code")));
}

// ---- Variants of good input that must still parse ----

const std::string kPxb = "nccl-667_4gpu_PXB_PIX_SYS.topo-m.txt";
const std::string kH100 = "nccl-1617_4xH100_NV6.topo-m.txt";
const std::string kA10g = "nccl-1298_aws-g5.48xlarge_8xA10G_PHB.topo-m.txt";
const std::string kL40s = "linux-x86_64__nvidia-l40s__595.80.topo-m";

struct VariantCase {
  std::string label;
  std::string text;
  Matrix expected;
};

void PrintTo(const VariantCase& c, std::ostream* os) {
  *os << c.label;
}

class TopoVariant : public ::testing::TestWithParam<VariantCase> {};

TEST_P(TopoVariant, Parses) {
  EXPECT_EQ(parse_topo_m(GetParam().text), GetParam().expected);
}

INSTANTIATE_TEST_SUITE_P(
    Good, TopoVariant,
    ::testing::ValuesIn(std::vector<VariantCase>{
        {"CrlfLineEnds", replace_all(read_fixture(kPxb), "\n", "\r\n"), pxb_pix_sys()},
        {"CrlfWithAnsiHeader", replace_all(read_fixture(kL40s), "\n", "\r\n"), kSingleGpu},
        {"TabsReplacedBySpaces", replace_all(read_fixture(kPxb), "\t", "    "), pxb_pix_sys()},
        {"SpacesReplacedByTabs", replace_all(read_fixture(kA10g), "    ", "\t"), uniform(8, "PHB")},
        {"NoTrailingNewline", read_fixture(kPxb).substr(0, read_fixture(kPxb).size() - 1),
         pxb_pix_sys()},
        {"WarningBeforeHeader",
         "WARNING: infoROM is corrupted at gpu 0000:17:00.0\n" + read_fixture(kH100),
         uniform(4, "NV6")},
        {"OldStyleNicNames",
         "\tGPU0\tGPU1\tmlx5_0\tCPU Affinity\n"
         "GPU0\t X \tNV4\tPIX\t0-11\n"
         "GPU1\tNV4\t X \tPIX\t0-11\n"
         "mlx5_0\tPIX\tPIX\t X \n",
         uniform(2, "NV4")},
        {"NicLegendAfterMatrix",
         read_fixture(kH100) + "\nLegend:\n\n  X    = Self\n\nNIC Legend:\n\n  NIC0: mlx5_0\n",
         uniform(4, "NV6")},
        {"OtherEscapeSequences",
         "\x1b[1m\x1b[38;5;2m\tGPU0\tGPU1\x1b[0m\nGPU0\t X \tSOC\nGPU1\tSOC\t X \n",
         uniform(2, "SOC")},
    }),
    [](const auto& info) { return info.param.label; });

// ---- Malformed and hostile input ----

struct MalformedCase {
  std::string label;
  std::string text;
  std::string error;  // a substring of the message
};

void PrintTo(const MalformedCase& c, std::ostream* os) {
  *os << c.label;
}

const std::string kTwoGpuHeader = "\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\n";

std::string many_gpus(int n) {
  std::string text;
  for (int i = 0; i < n; ++i) text += "\tGPU" + std::to_string(i);
  text += "\n";
  for (int i = 0; i < n; ++i) {
    text += "GPU" + std::to_string(i);
    for (int j = 0; j < n; ++j) text += i == j ? "\t X " : "\tSYS";
    text += "\n";
  }
  return text;
}

class TopoMalformed : public ::testing::TestWithParam<MalformedCase> {};

TEST_P(TopoMalformed, ThrowsParseErrorSayingWhy) {
  auto error = parse_error(GetParam().text);
  ASSERT_FALSE(error.empty()) << "parsed, but should not have";
  EXPECT_THAT(error, HasSubstr(GetParam().error));
  EXPECT_TRUE(is_printable_ascii(error)) << error;
  EXPECT_LE(error.size(), 300u) << error;
}

INSTANTIATE_TEST_SUITE_P(
    Bad, TopoMalformed,
    ::testing::ValuesIn(std::vector<MalformedCase>{
        {"Empty", "", "empty"},
        {"OnlyWhitespace", " \n\t\r\n\n", "empty"},
        {"Garbage", "hello world\nthis is not nvidia-smi\n", "no topology matrix: \"hello world\""},
        {"LegendOnly", "Legend:\n\n  X    = Self\n", "no topology matrix"},
        {"Asymmetric", kTwoGpuHeader + "GPU0\t X \tNV4\t0-7\t0\nGPU1\tPHB\t X \t0-7\t0\n",
         "not symmetric: row GPU0, column GPU1 is 'NV4' but row GPU1, column GPU0 is 'PHB'"},
        {"BadKind",
         replace_all(read_fixture(kA10g), "GPU2    PHB     PHB      X      PHB     PHB     PHB",
                     "GPU2    PHB     PHB      X      PHB     PHB     NVX"),
         "row GPU2, column GPU5: 'NVX' is not a link kind"},
        {"MissingMiddleRow",
         kTwoGpuHeader.substr(0, 10) + "\tGPU2\n" + "GPU0\t X \tSYS\tSYS\n" +
             "GPU2\tSYS\tSYS\t X \n",
         "row GPU1 is missing"},
        {"MissingLastRow", kTwoGpuHeader + "GPU0\t X \tSYS\t0-7\t0\n", "row GPU1 is missing"},
        {"DiagonalNotX", kTwoGpuHeader + "GPU0\tSYS\tSYS\nGPU1\tSYS\t X \n",
         "row GPU0, column GPU0: the diagonal must be 'X'"},
        {"XOffDiagonal", kTwoGpuHeader + "GPU0\t X \t X \nGPU1\t X \t X \n",
         "row GPU0, column GPU1: 'X' (self) may only appear on the diagonal"},
        {"DuplicatedRow", kTwoGpuHeader + "GPU0\t X \tSYS\nGPU0\t X \tSYS\nGPU1\tSYS\t X \n",
         "row GPU0 appears twice"},
        {"RowWithoutColumn", kTwoGpuHeader + "GPU0\t X \tSYS\nGPU1\tSYS\t X \nGPU2\tSYS\tSYS\n",
         "row GPU2 has no header column; the header lists 2 GPUs"},
        {"TooFewCells", kTwoGpuHeader + "GPU0\t X \nGPU1\tSYS\t X \n",
         "row GPU0 ends after 1 of its 2 GPU cells"},
        {"ShiftedAffinityCell", kTwoGpuHeader + "GPU0\t X \t0-7\t0\nGPU1\tSYS\t X \t0-7\t0\n",
         "row GPU0, column GPU1: '0-7' is not a link kind"},
        {"NicOnly", "\tNIC0\tNIC1\tCPU Affinity\nNIC0\t X \tSYS\nNIC1\tSYS\t X \n",
         "no GPU columns"},
        {"HeaderOutOfOrder", "\tGPU1\tGPU0\nGPU0\t X \tSYS\nGPU1\tSYS\t X \n",
         "header column 1 is GPU1 but GPU0 was expected"},
        {"HeaderDuplicate", "\tGPU0\tGPU0\nGPU0\t X \tSYS\n", "but GPU1 was expected"},
        {"GpuColumnAfterNic", "\tGPU0\tNIC0\tGPU1\nGPU0\t X \tPIX\tSYS\n", "after the NIC columns"},
        {"GpuRowAfterNic",
         "\tGPU0\tGPU1\tNIC0\nGPU0\t X \tSYS\tPIX\nNIC0\tPIX\tSYS\t X \n"
         "GPU1\tSYS\t X \tSYS\n",
         "row GPU1 comes after the NIC rows"},
        {"UnknownRowName", kTwoGpuHeader + "GPU0\t X \tSYS\nbanana\tSYS\t X \n",
         "row 'banana' is neither a GPU nor a header column"},
        {"LeadingZeroGpu", "\tGPU00\n", "no topology matrix"},
        {"MoreThan64Gpus", many_gpus(65), "more than 64 GPUs"},
        {"TooLarge", read_fixture(kA10g) + std::string(256 * 1024, ' '), "at most 262144"},
        {"NulBytes", std::string("\tGPU0\nGPU0\t\0X\n", 12), "NUL"},
        {"InvalidUtf8Garbage", "\xff\xfe\xc3(\x80 oops \x1b]0;title\x07\n", "no topology matrix"},
        {"InvalidUtf8Cell", "\tGPU0\tGPU1\nGPU0\t X \t\xc3\x28\xa0\nGPU1\tSYS\t X \n",
         "'?(?' is not a link kind"},
        {"HugeCellIsCut",
         "\tGPU0\tGPU1\nGPU0\t X \t" + std::string(100000, 'Q') + "\nGPU1\tSYS\t X \n",
         std::string(40, 'Q') + "...' is not a link kind"},
        {"HugeLineWithoutNewline", std::string(200 * 1024, 'A'), "no topology matrix"},
    }),
    [](const auto& info) { return info.param.label; });

TEST(TopoHostile, SixtyFourGpusIsTheLimitAndParses) {
  auto m = parse_topo_m(many_gpus(64));
  EXPECT_EQ(m, uniform(64, "SYS"));
}

// A cheap stand-in for a fuzzer: random bytes spliced into the fixtures must either parse to a
// well-formed matrix or throw ParseError with a printable message, never anything else.
TEST(TopoHostile, RandomMutationsOfFixturesNeverCrash) {
  std::mt19937 rng(20240607);
  std::vector<std::string> seeds;
  for (const auto& c : fixture_cases()) seeds.push_back(read_fixture(c.file));
  for (int round = 0; round < 3000; ++round) {
    auto text = seeds[rng() % seeds.size()];
    int edits = 1 + static_cast<int>(rng() % 8);
    for (int e = 0; e < edits && !text.empty(); ++e) {
      auto pos = rng() % text.size();
      switch (rng() % 3) {
        case 0:
          text[pos] = static_cast<char>(rng() % 256);
          break;
        case 1:
          text.erase(pos, 1 + rng() % 16);
          break;
        default:
          text.insert(pos, 1 + rng() % 4, static_cast<char>(rng() % 256));
      }
    }
    try {
      auto m = parse_topo_m(text);
      ASSERT_GE(m.gpus, 1);
      ASSERT_EQ(m.links.size(), static_cast<std::size_t>(m.gpus));
      for (int i = 0; i < m.gpus; ++i) ASSERT_EQ(m.links[i][i], "X");
    } catch (const ParseError& e) {
      ASSERT_TRUE(is_printable_ascii(e.what())) << e.what();
    }
  }
}

// ---- Declared shapes ----

TEST(Interconnect, NamesRoundTrip) {
  for (auto shape : {Interconnect::kNvswitch, Interconnect::kNvlinkPairs, Interconnect::kPcie}) {
    EXPECT_EQ(parse_interconnect(to_string(shape)), shape);
  }
  EXPECT_EQ(to_string(Interconnect::kNvlinkPairs), "nvlink-pairs");
  EXPECT_EQ(parse_interconnect("NVSwitch"), std::nullopt);
  EXPECT_EQ(parse_interconnect(""), std::nullopt);
}

TEST(DeclaredMatrix, EightGpuNvswitchIsAllNv18) {
  auto m = declared_matrix(Interconnect::kNvswitch, 8, "NV18");
  EXPECT_EQ(m, uniform(8, "NV18"));
  EXPECT_TRUE(m.all_nvlink({0, 1, 2, 3, 4, 5, 6, 7}));
}

TEST(DeclaredMatrix, FourGpuNvlinkPairs) {
  auto m = declared_matrix(Interconnect::kNvlinkPairs, 4, "NV4");
  EXPECT_EQ(m, (Matrix{4,
                       {{"X", "NV4", "SYS", "SYS"},
                        {"NV4", "X", "SYS", "SYS"},
                        {"SYS", "SYS", "X", "NV4"},
                        {"SYS", "SYS", "NV4", "X"}}}));
  EXPECT_TRUE(m.all_nvlink({0, 1}));
  EXPECT_TRUE(m.all_nvlink({2, 3}));
  EXPECT_FALSE(m.all_nvlink({0, 2}));
}

TEST(DeclaredMatrix, EightGpuNvlinkPairsUseNodeWithinAHalf) {
  auto m = declared_matrix(Interconnect::kNvlinkPairs, 8, "NV8");
  EXPECT_EQ(m.links[0][1], "NV8");
  EXPECT_EQ(m.links[0][2], "NODE");
  EXPECT_EQ(m.links[3][4], "SYS");
  EXPECT_EQ(m.links[6][7], "NV8");
}

TEST(DeclaredMatrix, EightGpuPcieHasNoNvlink) {
  auto m = declared_matrix(Interconnect::kPcie, 8, "");
  for (int i = 0; i < 8; ++i) {
    for (int j = 0; j < 8; ++j) {
      if (i == j) continue;
      EXPECT_EQ(m.links[i][j], (i < 4) == (j < 4) ? "NODE" : "SYS") << i << "," << j;
      EXPECT_FALSE(m.all_nvlink({i, j}));
    }
  }
}

TEST(DeclaredMatrix, SmallPcieNodesAreOneSocket) {
  EXPECT_EQ(declared_matrix(Interconnect::kPcie, 1, ""), kSingleGpu);
  EXPECT_EQ(declared_matrix(Interconnect::kPcie, 2, "ignored"), uniform(2, "NODE"));
}

TEST(DeclaredMatrix, EveryShapeProducesAMatrixTheJsonCheckAccepts) {
  for (int n = 1; n <= kMaxGpus; ++n) {
    for (auto shape : {Interconnect::kNvswitch, Interconnect::kNvlinkPairs, Interconnect::kPcie}) {
      if (shape == Interconnect::kNvlinkPairs && n % 2 != 0) continue;
      auto m = declared_matrix(shape, n, "NV12");
      EXPECT_EQ(matrix_from_json(to_json(m)), m) << to_string(shape) << " " << n;
    }
  }
}

TEST(DeclaredMatrix, RejectsInvalidArguments) {
  EXPECT_THROW(declared_matrix(Interconnect::kPcie, 0, ""), std::invalid_argument);
  EXPECT_THROW(declared_matrix(Interconnect::kPcie, -1, ""), std::invalid_argument);
  EXPECT_THROW(declared_matrix(Interconnect::kNvswitch, 65, "NV18"), std::invalid_argument);
  EXPECT_THROW(declared_matrix(Interconnect::kNvlinkPairs, 3, "NV4"), std::invalid_argument);
  EXPECT_THROW(declared_matrix(Interconnect::kNvswitch, 8, ""), std::invalid_argument);
  EXPECT_THROW(declared_matrix(Interconnect::kNvswitch, 8, "PHB"), std::invalid_argument);
  EXPECT_THROW(declared_matrix(Interconnect::kNvlinkPairs, 2, "NV0"), std::invalid_argument);
}

// ---- JSON ----

TEST(MatrixJson, RoundTripsParsedFixtures) {
  for (const auto& file : {kPxb, kH100, kA10g, kL40s}) {
    auto m = parse_topo_m(read_fixture(file));
    EXPECT_EQ(matrix_from_json(to_json(m)), m) << file;
  }
}

TEST(MatrixJson, HasTheDocumentedShape) {
  auto json = to_json(declared_matrix(Interconnect::kNvlinkPairs, 2, "NV4"));
  EXPECT_EQ(json, nlohmann::json::parse(R"({"gpus": 2, "links": [["X","NV4"],["NV4","X"]]})"));
}

struct BadJsonCase {
  std::string label;
  std::string json;
  std::string error;
};

void PrintTo(const BadJsonCase& c, std::ostream* os) {
  *os << c.label;
}

class MatrixJsonBad : public ::testing::TestWithParam<BadJsonCase> {};

TEST_P(MatrixJsonBad, ThrowsParseError) {
  try {
    matrix_from_json(nlohmann::json::parse(GetParam().json));
    FAIL() << "accepted " << GetParam().json;
  } catch (const ParseError& e) {
    EXPECT_THAT(e.what(), HasSubstr(GetParam().error));
  }
}

INSTANTIATE_TEST_SUITE_P(
    Bad, MatrixJsonBad,
    ::testing::ValuesIn(std::vector<BadJsonCase>{
        {"NotAnObject", R"([["X"]])", "JSON object"},
        {"MissingLinks", R"({"gpus": 1})", "needs both"},
        {"MissingGpus", R"({"links": [["X"]]})", "needs both"},
        {"GpusNotInteger", R"({"gpus": "1", "links": [["X"]]})", "\"gpus\" must be an integer"},
        {"GpusFloat", R"({"gpus": 1.5, "links": [["X"]]})", "\"gpus\" must be an integer"},
        {"GpusBool", R"({"gpus": true, "links": [["X"]]})", "\"gpus\" must be an integer"},
        {"GpusZero", R"({"gpus": 0, "links": []})", "from 1 to 64"},
        {"GpusTooMany", R"({"gpus": 65, "links": []})", "from 1 to 64"},
        {"GpusHugeUnsigned", R"({"gpus": 18446744073709551615, "links": []})", "from 1 to 64"},
        {"LinksNotArray", R"({"gpus": 1, "links": "X"})", "array of 1 row"},
        {"TooFewRows", R"({"gpus": 2, "links": [["X","NV4"]]})", "array of 2 rows"},
        {"RowTooShort", R"({"gpus": 2, "links": [["X"],["NV4","X"]]})",
         "row GPU0 must be an array of 2 strings"},
        {"CellNotString", R"({"gpus": 2, "links": [["X",4],["NV4","X"]]})",
         "row GPU0, column GPU1: a link kind must be a string"},
        {"BadKind", R"({"gpus": 2, "links": [["X","NVX"],["NVX","X"]]})",
         "'NVX' is not a link kind"},
        {"DiagonalNotX", R"({"gpus": 1, "links": [["SYS"]]})", "the diagonal must be 'X'"},
        {"Asymmetric", R"({"gpus": 2, "links": [["X","NV4"],["SYS","X"]]})", "not symmetric"},
    }),
    [](const auto& info) { return info.param.label; });

}  // namespace topology_test
}  // namespace gpurent::topology
