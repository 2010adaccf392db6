// Tests the p2pBandwidthLatencyTest parser on real outputs (fixtures/p2p_bandwidth, provenance in
// fixtures/README.md), numbers copied from the files, and on synthetic edges: CPU blocks, N/A,
// pasted runs, refusals and bounds.
#include "agent_proto/burn_in/p2p_bandwidth.h"
#include "agent_proto/burn_in/tests/fixture_text.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <set>

namespace gpurent::burn_in {
namespace p2p_bandwidth_test {

using testing::fixture_dir;
using testing::read_fixture;

using Cells = std::vector<std::vector<std::optional<double>>>;

const char* const kUniDisabled = "Unidirectional P2P=Disabled Bandwidth Matrix (GB/s)";
const char* const kUniWrites = "Unidirectional P2P=Enabled Bandwidth (P2P Writes) Matrix (GB/s)";
const char* const kUniReads = "Unidirectional P2P=Enabled Bandwidth (P2P Reads) Matrix (GB/s)";
const char* const kBiDisabled = "Bidirectional P2P=Disabled Bandwidth Matrix (GB/s)";
const char* const kBiEnabled = "Bidirectional P2P=Enabled Bandwidth Matrix (GB/s)";
const char* const kLatDisabled = "P2P=Disabled Latency Matrix (us)";
const char* const kLatWrites = "P2P=Enabled Latency (P2P Writes) Matrix (us)";
const char* const kLatReads = "P2P=Enabled Latency (P2P Reads) Matrix (us)";

std::vector<std::string> labels(std::size_t n, const std::string& prefix = "") {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < n; ++i) out.push_back(prefix + std::to_string(i));
  return out;
}

P2pMatrix bandwidth(const std::string& title, Cells cells) {
  auto n = cells.size();
  return {.title = title,
          .unit = "GB/s",
          .columns = labels(n),
          .rows = labels(n),
          .cells = std::move(cells)};
}

// A latency matrix: its GPU-timed block, then its CPU-timed block.
P2pMatrix latency(const std::string& title, Cells gpu, const Cells& cpu) {
  auto n = gpu.size();
  auto rows = labels(n);
  for (const auto& r : labels(n, "CPU ")) rows.push_back(r);
  gpu.insert(gpu.end(), cpu.begin(), cpu.end());
  return {
      .title = title, .unit = "us", .columns = labels(n), .rows = rows, .cells = std::move(gpu)};
}

P2pDevice device(int index, const std::string& name, const std::string& bus) {
  return {.index = index, .name = name, .pci_bus_id = bus};
}

// Fixtures small enough to expect whole, every number copied from the file.
struct WholeCase {
  std::string file;
  P2pBandwidthResult expected;
};

const std::vector<WholeCase>& whole_cases() {
  static const std::vector<WholeCase> kCases = {
      {"p2p-4090-notes_2xrtx4090_p2p-disabled.txt",
       {.devices = {device(0, "NVIDIA GeForce RTX 4090", "41"),
                    device(1, "NVIDIA GeForce RTX 4090", "61")},
        .connectivity = {{1, 0}, {0, 1}},
        .matrices =
            {bandwidth(kUniDisabled, {{913.74, 22.02}, {22.05, 921.88}}),
             bandwidth(kUniWrites, {{912.68, 22.18}, {22.45, 922.37}}),
             bandwidth(kBiDisabled, {{918.25, 30.92}, {30.79, 922.10}}),
             bandwidth(kBiEnabled, {{919.12, 31.06}, {30.84, 923.19}}),
             latency(kLatDisabled, {{1.38, 10.83}, {10.28, 1.35}}, {{1.85, 5.49}, {5.48, 1.79}}),
             latency(kLatWrites, {{1.38, 10.49}, {10.55, 1.35}}, {{1.84, 5.44}, {5.49, 1.78}})}}},
      {"diffusion-notes_2xrtx4090_p2p-disabled_trailing-spaces.txt",
       {.devices = {device(0, "NVIDIA GeForce RTX 4090", "81"),
                    device(1, "NVIDIA GeForce RTX 4090", "c1")},
        .connectivity = {{1, 0}, {0, 1}},
        .matrices =
            {bandwidth(kUniDisabled, {{909.49, 21.73}, {22.61, 921.83}}),
             bandwidth(kUniWrites, {{902.14, 20.91}, {22.36, 922.92}}),
             bandwidth(kBiDisabled, {{918.48, 29.84}, {28.81, 924.56}}),
             bandwidth(kBiEnabled, {{918.22, 29.73}, {28.90, 924.20}}),
             latency(kLatDisabled, {{1.33, 12.84}, {11.44, 1.31}}, {{2.51, 8.12}, {7.88, 2.47}}),
             latency(kLatWrites, {{1.33, 13.10}, {11.59, 1.30}}, {{2.53, 7.94}, {7.94, 2.45}})}}},
      // The Windows build: a blank line after every matrix, no NOTE lines.
      {"ik-llama-discussion_rtx4090-rtx5090_windows_blank-lines.txt",
       {.devices = {device(0, "NVIDIA GeForce RTX 4090", "c1"),
                    device(1, "NVIDIA GeForce RTX 5090", "1")},
        .connectivity = {{1, 0}, {0, 1}},
        .matrices =
            {bandwidth(kUniDisabled, {{909.49, 20.65}, {20.21, 1545.69}}),
             bandwidth(kUniWrites, {{915.89, 20.72}, {20.28, 1536.43}}),
             bandwidth(kBiDisabled, {{920.23, 31.70}, {31.70, 1541.09}}),
             bandwidth(kBiEnabled, {{920.84, 31.57}, {31.83, 1539.03}}),
             latency(kLatDisabled, {{2.62, 46.09}, {38.57, 3.81}}, {{1.62, 5.13}, {3.72, 1.66}}),
             latency(kLatWrites, {{2.59, 45.93}, {38.46, 3.60}}, {{1.58, 3.43}, {3.03, 1.64}})}}},
      // Isaac Sim's own validation inside its log: no device list, no connectivity, one GPU.
      {"isaac-sim-log_1-gpu_kit-iommu-validation_excerpt.txt",
       {.devices = {},
        .connectivity = {},
        .matrices = {bandwidth(kUniWrites, {{1511.12}}), latency(kLatWrites, {{2.12}}, {{1.57}})}}},
      {"hpc-notes-zh_4xa100-pcie-40gb_trailing-spaces.txt",
       {.devices = {device(0, "NVIDIA A100-PCIE-40GB", "18"),
                    device(1, "NVIDIA A100-PCIE-40GB", "3b"),
                    device(2, "NVIDIA A100-PCIE-40GB", "86"),
                    device(3, "NVIDIA A100-PCIE-40GB", "af")},
        .connectivity = {{1, 1, 1, 1}, {1, 1, 1, 1}, {1, 1, 1, 1}, {1, 1, 1, 1}},
        .matrices = {bandwidth(kUniDisabled, {{1151.22, 10.78, 10.78, 10.89},
                                              {10.73, 1160.63, 10.71, 10.71},
                                              {11.02, 11.17, 1289.79, 11.22},
                                              {11.09, 11.19, 11.40, 1294.16}}),
                     bandwidth(kUniWrites, {{1293.26, 10.28, 8.33, 8.52},
                                            {10.28, 1306.44, 7.71, 7.69},
                                            {7.94, 8.72, 1304.36, 10.28},
                                            {7.95, 8.15, 10.28, 1304.02}}),
                     bandwidth(kBiDisabled, {{1313.65, 12.35, 15.67, 15.78},
                                             {12.39, 1314.23, 15.71, 15.82},
                                             {15.69, 15.73, 1315.60, 16.09},
                                             {15.70, 15.80, 16.09, 1313.40}}),
                     bandwidth(kBiEnabled, {{1313.82, 19.60, 16.51, 15.93},
                                            {19.59, 1315.25, 15.88, 16.11},
                                            {16.58, 15.98, 1314.42, 19.68},
                                            {16.08, 16.12, 19.68, 1313.65}}),
                     latency(kLatDisabled,
                             {{2.25, 15.80, 18.08, 18.31},
                              {15.96, 2.32, 15.05, 17.37},
                              {20.15, 17.57, 2.30, 12.26},
                              {11.77, 15.19, 18.46, 2.34}},
                             {{2.87, 8.28, 7.52, 7.53},
                              {8.29, 2.81, 7.65, 7.19},
                              {7.47, 7.64, 2.48, 6.92},
                              {7.59, 10.22, 7.60, 2.59}}),
                     latency(kLatWrites,
                             {{2.25, 1.92, 2.00, 1.99},
                              {1.92, 2.31, 1.99, 2.02},
                              {2.00, 1.99, 2.31, 1.93},
                              {2.02, 1.98, 1.91, 2.33}},
                             {{2.92, 2.31, 2.19, 2.15},
                              {2.38, 2.94, 2.16, 2.21},
                              {2.22, 1.99, 2.59, 2.31},
                              {2.23, 2.03, 2.14, 2.54}})}}},
  };
  return kCases;
}

// Eight-GPU fixtures: devices, connectivity, titles and shapes whole, cells sampled.
struct Cell {
  std::size_t matrix;
  std::size_t row;  // CPU-block rows follow the GPU rows: row 8 is "CPU 0"
  std::size_t column;
  double value;
};

struct SampledCase {
  std::string file;
  std::vector<P2pDevice> devices;
  std::vector<std::vector<int>> connectivity;
  std::vector<std::string> titles;
  std::vector<Cell> cells;
};

std::vector<P2pDevice> eight(const std::string& name, const std::vector<std::string>& buses) {
  std::vector<P2pDevice> out;
  for (std::size_t i = 0; i < buses.size(); ++i) {
    out.push_back(device(static_cast<int>(i), name, buses[i]));
  }
  return out;
}

std::vector<std::vector<int>> connectivity(std::size_t n, bool all) {
  std::vector<std::vector<int>> out(n, std::vector<int>(n, all ? 1 : 0));
  for (std::size_t i = 0; i < n; ++i) out[i][i] = 1;
  return out;
}

const std::vector<SampledCase>& sampled_cases() {
  static const std::vector<SampledCase> kCases = {
      {"burn-in-sheet_8xh100-hbm3_nvswitch.txt",
       eight("NVIDIA H100 80GB HBM3", {"19", "3b", "4c", "5d", "9b", "bb", "cb", "db"}),
       connectivity(8, true),
       {kUniDisabled, kUniWrites, kBiDisabled, kBiEnabled, kLatDisabled, kLatWrites},
       {{0, 0, 0, 2841.07},
        {0, 1, 0, 37.11},
        {0, 7, 7, 2884.50},
        {1, 0, 1, 365.30},
        {1, 2, 2, 2887.50},
        {1, 3, 4, 393.10},
        {2, 7, 0, 51.73},
        {3, 0, 1, 739.22},
        {3, 1, 0, 774.45},
        {3, 7, 7, 2945.94},
        {4, 4, 0, 19.23},
        {4, 15, 7, 2.02},
        {5, 0, 1, 3.34},
        {5, 11, 4, 2.29}}},
      // A modified copy of the sample run with --p2p_read: "(P2P Reads)" matrices too; the
      // connectivity rows have a tab after their label; no GPU can reach another.
      {"gpu-micro-readme_8xtitan-rtx_modified-p2p-reads_no-peer-access.txt",
       eight("TITAN RTX", {"1a", "1b", "3d", "3e", "88", "89", "b1", "b2"}),
       connectivity(8, false),
       {kUniDisabled, kUniWrites, kUniReads, kBiDisabled, kBiEnabled, kLatDisabled, kLatWrites,
        kLatReads},
       {{0, 0, 0, 563.00},
        {0, 0, 1, 9.93},
        {2, 4, 5, 10.01},
        {4, 7, 7, 554.61},
        {5, 0, 1, 25.52},
        {5, 8, 1, 25.82},
        {7, 7, 7, 2.85},
        {7, 15, 7, 3.59}}},
  };
  return kCases;
}

std::string error_of(std::string_view text) {
  try {
    parse_p2p_bandwidth(text);
  } catch (const ParseError& e) {
    return e.what();
  }
  return "(parsed)";
}

std::string crlf(const std::string& text) {
  std::string out;
  for (char c : text) out += c == '\n' ? std::string("\r\n") : std::string(1, c);
  return out;
}

TEST(P2pBandwidthFixtures, SmallRunsParseWhole) {
  for (const auto& c : whole_cases()) {
    EXPECT_EQ(parse_p2p_bandwidth(read_fixture("p2p_bandwidth", c.file)), c.expected) << c.file;
  }
}

TEST(P2pBandwidthFixtures, EightGpuRunsParseToTheirShapesAndSampledCells) {
  for (const auto& c : sampled_cases()) {
    auto r = parse_p2p_bandwidth(read_fixture("p2p_bandwidth", c.file));
    EXPECT_EQ(r.devices, c.devices) << c.file;
    EXPECT_EQ(r.connectivity, c.connectivity) << c.file;
    std::vector<std::string> titles;
    for (const auto& m : r.matrices) {
      titles.push_back(m.title);
      bool latency = m.unit == "us";
      EXPECT_EQ(m.columns, labels(8)) << c.file << " " << m.title;
      auto rows = labels(8);
      if (latency) {
        for (const auto& l : labels(8, "CPU ")) rows.push_back(l);
      }
      EXPECT_EQ(m.rows, rows) << c.file << " " << m.title;
      ASSERT_EQ(m.cells.size(), rows.size()) << c.file;
      for (const auto& row : m.cells) EXPECT_EQ(row.size(), 8u) << c.file;
    }
    EXPECT_EQ(titles, c.titles) << c.file;
    for (const auto& cell : c.cells) {
      ASSERT_LT(cell.matrix, r.matrices.size()) << c.file;
      EXPECT_EQ(r.matrices[cell.matrix].cells.at(cell.row).at(cell.column), cell.value)
          << c.file << " matrix " << cell.matrix << " [" << cell.row << "][" << cell.column << "]";
    }
  }
}

// A fixture added without expectations fails here rather than going untested.
TEST(P2pBandwidthFixtures, EveryFixtureFileHasExpectations) {
  std::set<std::string> expected;
  for (const auto& c : whole_cases()) expected.insert(c.file);
  for (const auto& c : sampled_cases()) expected.insert(c.file);
  std::set<std::string> present;
  for (const auto& entry : std::filesystem::directory_iterator(fixture_dir("p2p_bandwidth"))) {
    present.insert(entry.path().filename().string());
  }
  EXPECT_EQ(present, expected);
}

TEST(P2pBandwidthFixtures, FindTakesTheFirstMatrixByTitlePrefix) {
  auto h100 =
      parse_p2p_bandwidth(read_fixture("p2p_bandwidth", "burn-in-sheet_8xh100-hbm3_nvswitch.txt"));
  const auto* uni = h100.find("Unidirectional P2P=Enabled Bandwidth");
  ASSERT_NE(uni, nullptr);
  EXPECT_EQ(uni->title, kUniWrites);
  EXPECT_EQ(uni->cells[0][1], 365.30);
  EXPECT_EQ(h100.find("P2P=Enabled Latency")->title, kLatWrites);
  EXPECT_EQ(h100.find("Unidirectional P2P=Enabled Bandwidth (P2P Reads)"), nullptr);

  auto titan = parse_p2p_bandwidth(read_fixture(
      "p2p_bandwidth", "gpu-micro-readme_8xtitan-rtx_modified-p2p-reads_no-peer-access.txt"));
  ASSERT_NE(titan.find("Unidirectional P2P=Enabled Bandwidth (P2P Reads)"), nullptr);
  EXPECT_EQ(titan.find("Unidirectional P2P=Enabled Bandwidth (P2P Reads)")->cells[0][0], 550.50);
}

// Synthetic: a capture saved with Windows line ends reads the same.
TEST(P2pBandwidthEdges, CrLfLineEnds) {
  for (const auto& c : whole_cases()) {
    EXPECT_EQ(parse_p2p_bandwidth(crlf(read_fixture("p2p_bandwidth", c.file))), c.expected)
        << c.file;
  }
}

// Synthetic: two runs of one machine pasted together keep one device list and one
// connectivity matrix, and every matrix in order.
TEST(P2pBandwidthEdges, TwoRunsOfOneMachine) {
  const auto& c = whole_cases().at(0);
  auto text = read_fixture("p2p_bandwidth", c.file);
  auto r = parse_p2p_bandwidth(text + text);
  EXPECT_EQ(r.devices, c.expected.devices);
  EXPECT_EQ(r.connectivity, c.expected.connectivity);
  ASSERT_EQ(r.matrices.size(), 12u);
  EXPECT_EQ(r.matrices[6], c.expected.matrices[0]);
}

// Synthetic: N/A cells, a CPU block without the blank line before it, a device line without
// pciBusID, other lines around the output, and a latency matrix without a CPU block.
TEST(P2pBandwidthEdges, HandMadeShapes) {
  auto r = parse_p2p_bandwidth(
      "some log line (x)\n"
      "Device: 0, Some GPU\n"
      "Device: 1, Some GPU, pciBusID: 1A, pciDeviceID: 0, pciDomainID:0\n"
      "Device: not a number, ignored\n"
      "P2P=Enabled Latency Matrix (us)\n"
      "   GPU     0      1\n"
      "     0   1.5    N/A\n"
      "     1   N/A    2\n"
      "   CPU     0      1\n"
      "     0   1e0    3.25\n"
      "     1   0      4\n"
      "     2 more text\n");
  EXPECT_EQ(r.devices, (std::vector<P2pDevice>{{.index = 0, .name = "Some GPU", .pci_bus_id = {}},
                                               device(1, "Some GPU", "1A")}));
  EXPECT_TRUE(r.connectivity.empty());
  ASSERT_EQ(r.matrices.size(), 1u);
  EXPECT_EQ(r.matrices[0].unit, "us");
  EXPECT_EQ(r.matrices[0].rows, (std::vector<std::string>{"0", "1", "CPU 0", "CPU 1"}));
  EXPECT_EQ(r.matrices[0].cells,
            (Cells{{1.5, std::nullopt}, {std::nullopt, 2}, {1, 3.25}, {0, 4}}));

  auto no_cpu = parse_p2p_bandwidth(
      "P2P=Enabled Latency Matrix (us)\n"
      "   D\\D     0\n"
      "     0   4.00\n");
  EXPECT_EQ(no_cpu.matrices.at(0).rows, (std::vector<std::string>{"0"}));
  EXPECT_EQ(no_cpu.matrices[0].cells, (Cells{{4.0}}));
}

// Synthetic: no matrix is no result.
TEST(P2pBandwidthErrors, NoMatrixIsNoResult) {
  for (const std::string& text : std::vector<std::string>{
           "",
           "\n\r\n",
           "[P2P (Peer-to-Peer) GPU Bandwidth Latency Test]\n"
           "Device: 0, NVIDIA H100 80GB HBM3, pciBusID: 18, pciDeviceID: 0, pciDomainID:0\n",
           "P2P Connectivity Matrix\n     D\\D     0\n     0       1\n",
           "Unidirectional P2P=Enabled Bandwidth (GB/s) without the word\n",
       }) {
    EXPECT_EQ(error_of(text),
              "no matrix: not p2pBandwidthLatencyTest output, or the run stopped before its first "
              "matrix")
        << text;
  }
}

// Synthetic: broken output is refused naming its line.
TEST(P2pBandwidthErrors, BrokenOutputIsRefused) {
  const std::string title = std::string(kUniDisabled) + "\n";
  const std::string header = "   D\\D     0      1\n";
  const std::string row0 = "     0 900.00  20.00\n";
  struct Case {
    std::string text;
    std::string error;
  };
  for (const auto& c : std::vector<Case>{
           {title + header + "     0 1.0  2.0  3.0\n",
            "line 3: a matrix row has 3 cells for 2 columns"},
           {title + header + "     0 1.0\n", "line 3: a matrix row has 1 cells for 2 columns"},
           {title + header + "     0 1.0  fast\n",
            "line 3: a matrix cell is neither a number nor N/A"},
           {title + header + "     0 1.0  nan\n",
            "line 3: a matrix cell is neither a number nor N/A"},
           {title + header + "     0 1.0  -2\n",
            "line 3: a matrix value is outside 0 to 1e7, not one a GPU measures"},
           {title + header + "     0 1.0  1e7\n",
            "line 3: a matrix value is outside 0 to 1e7, not one a GPU measures"},
           {title + header + "     1 1.0  2.0\n",
            "line 3: a matrix row is labelled 1 where row 0 was due"},
           {title + header + row0 + "     1 1.0  2.0\n     2 1.0  2.0\n",
            "line 5: a matrix has more rows than columns"},
           {title + header + row0,
            "line 3: 'Unidirectional P2P=Disabled Bandwidth Matrix (GB/s)' has 1 rows for 2 "
            "columns; the run did not finish"},
           {title + header + row0 + "\n" + title,
            "line 5: 'Unidirectional P2P=Disabled Bandwidth Matrix (GB/s)' has 1 rows for 2 "
            "columns; the run did not finish"},
           {title + row0, "line 2: a matrix title is not followed by its column header"},
           {title, "line 1: the output ends after a matrix title, before its column header"},
           {title + "   D\\D     0      2\n", "line 2: a matrix header's columns are not 0 to N-1"},
           {title + header + row0 + "     1 1.0  2.0\n   CPU     0\n",
            "line 5: a CPU block's columns are not its matrix's"},
           {title + header + row0 + "     1 1.0  2.0\n   CPU  0  1\n     0 1.0  2.0\n",
            "line 6: 'Unidirectional P2P=Disabled Bandwidth Matrix (GB/s)' (CPU block) has 1 rows "
            "for 2 columns; the run did not finish"},
           {title + header + row0 +
                "     1 1.0  2.0\n   CPU  0  1\n     0 1  2\n     1 1  2\n"
                "   CPU  0  1\n",
            "line 8: a matrix has a second CPU block"},
           {"Device: 0, A, pciBusID: 1\n" + title + header,
            "line 3: a matrix has 2 columns for 1 devices listed"},
           {title + header + row0 + "     1 1.0  2.0\nDevice: 0, A, pciBusID: 1\n",
            "'Unidirectional P2P=Disabled Bandwidth Matrix (GB/s)' has 2 columns for 1 devices "
            "listed"},
           {"P2P Connectivity Matrix\n D\\D 0\n 0 1\nDevice: 0, A\nDevice: 1, A\n" + title +
                header + row0 + "     1 1.0  2.0\n",
            "the connectivity matrix has 1 columns for 2 devices listed"},
           {"Device: 1, A, pciBusID: 1\n", "line 1: device 1 is listed before device 0"},
           {"Device: 0, A, pciBusID: 1\nDevice: 0, B, pciBusID: 1\n",
            "line 2: device 0 is listed twice, differently"},
           {"Device: 0, A, pciBusID: xyz\n", "line 1: a device's pciBusID is not a hex number"},
           {"Device: 0, , pciBusID: 1\n", "line 1: a device line has no name"},
           {"Device: 256, A\n", "line 1: a device index is outside 0 to 255"},
           {"Device: 0, " + std::string(161, 'A') + "\n",
            "line 1: a device name is longer than 160 bytes"},
           {"P2P Connectivity Matrix\n     D\\D     0     1\n     0       1     2\n",
            "line 3: a connectivity value is not 0 or 1"},
           {"P2P Connectivity Matrix\n     D\\D     0     1\n     0       1     1     1\n",
            "line 3: a connectivity row has 3 cells for 2 columns"},
           {"P2P Connectivity Matrix\n     D\\D     0     1\n     1       1     1\n",
            "line 3: a connectivity row is labelled 1 where row 0 was due"},
           {"P2P Connectivity Matrix\n     D\\D     0     1\n     0       1     1\n" + title,
            "line 4: the connectivity matrix has 1 rows for 2 columns; the run did not finish"},
           {"P2P Connectivity Matrix\n D\\D 0\n 0 1\nP2P Connectivity Matrix\n D\\D 0\n 0 0\n",
            "line 6: a second connectivity matrix differs from the first; runs of two machines?"},
           {"P2P=" + std::string(150, 'x') + " Matrix (GB/s)\n",
            "line 1: a matrix title is longer than 160 bytes"},
       }) {
    EXPECT_EQ(error_of(c.text), c.error) << c.text;
  }
}

std::string square(std::size_t n, const std::string& title = kUniDisabled) {
  std::string text = title + "\n D\\D";
  for (std::size_t i = 0; i < n; ++i) text += " " + std::to_string(i);
  text += "\n";
  for (std::size_t r = 0; r < n; ++r) {
    text += " " + std::to_string(r);
    for (std::size_t i = 0; i < n; ++i) text += " 9999999.99";
    text += "\n";
  }
  return text;
}

// Synthetic: the bounds on GPUs, matrices and size, just inside and just past them.
TEST(P2pBandwidthErrors, LimitsBoundTheWork) {
  auto widest = parse_p2p_bandwidth(square(kMaxP2pGpus));
  EXPECT_EQ(widest.matrices.at(0).cells.size(), kMaxP2pGpus);
  EXPECT_EQ(widest.matrices[0].cells[255][255], 9999999.99);
  EXPECT_EQ(error_of(square(kMaxP2pGpus + 1)), "line 2: a matrix has more than 256 columns");

  std::string many;
  for (std::size_t i = 0; i < kMaxP2pMatrices; ++i) many += square(1);
  EXPECT_EQ(parse_p2p_bandwidth(many).matrices.size(), kMaxP2pMatrices);
  EXPECT_EQ(error_of(many + square(1)), "line 49: more than 16 matrices, more than two runs print");

  std::string title = "P2P=" + std::string(142, 'x') + " Matrix (GB/s)";
  ASSERT_EQ(title.size(), kMaxP2pTextBytes);
  EXPECT_EQ(parse_p2p_bandwidth(square(1, title)).matrices.at(0).title, title);

  EXPECT_THROW(parse_p2p_bandwidth(std::string(kMaxToolOutputBytes + 1, '\n')), ParseError);
}

}  // namespace p2p_bandwidth_test
}  // namespace gpurent::burn_in
