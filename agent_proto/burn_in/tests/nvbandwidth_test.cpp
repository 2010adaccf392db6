// Tests the nvbandwidth parser on real outputs (fixtures/nvbandwidth, provenance in
// fixtures/README.md) and on hand-made edges: N/A cells, bidirectional sums, broken matrices.
#include "agent_proto/burn_in/nvbandwidth.h"
#include "agent_proto/burn_in/tests/fixture_text.h"

#include <gtest/gtest.h>

namespace gpurent::burn_in {
namespace nvbandwidth_test {

using testing::read_fixture;

std::vector<std::string> names(const NvbandwidthResult& r) {
  std::vector<std::string> out;
  for (const auto& c : r.test_cases) out.push_back(c.name);
  return out;
}

TEST(NvbandwidthFixtures, SingleA10TwoRuns) {
  auto r = parse_nvbandwidth(read_fixture("nvbandwidth", "blog-cxl_1xa10_v0.5.txt"));
  EXPECT_EQ(names(r),
            (std::vector<std::string>{"host_to_device_memcpy_ce", "host_to_device_memcpy_sm"}));
  EXPECT_EQ(r.version, "v0.5");
  EXPECT_EQ(r.driver_version, "550.54.15");
  const auto& m = r.test_cases[0].matrices.at(0);
  EXPECT_EQ(m.title, "memcpy CE CPU(row) -> GPU(column) bandwidth (GB/s)");
  EXPECT_EQ(m.unit, "GB/s");
  EXPECT_EQ(m.columns, (std::vector<std::string>{"0"}));
  EXPECT_EQ(m.rows, (std::vector<std::string>{"0"}));
  EXPECT_EQ(m.cells, (std::vector<std::vector<std::optional<double>>>{{25.17}}));
  EXPECT_EQ(r.test_cases[0].sum, 25.17);
  EXPECT_EQ(r.test_cases[1].sum, 25.25);
}

TEST(NvbandwidthFixtures, EightH100RunsSeparatedByMarkers) {
  auto r = parse_nvbandwidth(read_fixture("nvbandwidth", "burn-in-sheet_8xh100-hbm3_v0.10.txt"));
  EXPECT_EQ(names(r), (std::vector<std::string>{
                          "device_to_device_latency_sm", "device_to_device_memcpy_read_ce",
                          "device_to_device_memcpy_write_ce", "device_to_host_memcpy_ce",
                          "host_to_device_memcpy_ce"}));
  const auto& latency = r.test_cases[0].matrices.at(0);
  EXPECT_EQ(latency.unit, "ns");
  EXPECT_EQ(latency.cells.size(), 8u);
  for (std::size_t i = 0; i < 8; ++i) {
    ASSERT_EQ(latency.cells[i].size(), 8u);
    EXPECT_EQ(latency.cells[i][i], std::nullopt);  // N/A on the diagonal
  }
  EXPECT_EQ(latency.cells[0][1], 826.42);
  EXPECT_EQ(r.test_cases[0].sum, 46287.84);
  EXPECT_EQ(r.test_cases[1].sum, 22126.64);
  const auto& h2d = r.test_cases[4];
  EXPECT_EQ(h2d.matrices.at(0).rows.size(), 1u);
  EXPECT_EQ(h2d.matrices.at(0).columns.size(), 8u);
  EXPECT_EQ(h2d.matrices.at(0).cells[0][7], 55.33);
  EXPECT_EQ(h2d.sum, 442.87);
  EXPECT_EQ(r.driver_version, "595.71.05");
}

TEST(NvbandwidthFixtures, SevenGpusBidirectionalCasesUseTheirTotal) {
  auto r = parse_nvbandwidth(read_fixture("nvbandwidth", "burn-in-notes_7-gpus_v0.10.txt"));
  ASSERT_EQ(r.test_cases.size(), 8u);
  const auto& read = r.test_cases[6];
  EXPECT_EQ(read.name, "device_to_device_bidirectional_memcpy_read_ce");
  ASSERT_EQ(read.matrices.size(), 3u);
  EXPECT_EQ(read.matrices[0].sum_name, "device_to_device_bidirectional_memcpy_read_ce_read1");
  EXPECT_EQ(read.matrices[0].sum, 31945.78);
  EXPECT_EQ(read.matrices[2].title, "memcpy CE GPU(row) <-> GPU(column) Total bandwidth (GB/s)");
  EXPECT_EQ(read.sum, 63869.90);
  EXPECT_EQ(r.test_cases[7].sum, 64669.78);
  EXPECT_EQ(r.test_cases[4].matrices[0].cells[6][6], std::nullopt);
  EXPECT_EQ(r.test_cases[4].matrices[0].cells[6][5], 766.21);
  EXPECT_EQ(r.test_cases[3].sum, 340.60);
}

// Synthetic: indented output, a test case with a sum but no matrix, a case with neither (a
// waived test) dropped.
// device_local_copy's matrix has one row and a GPU per column ("memcpy local GPU(column)").
TEST(NvbandwidthFixtures, LocalCopiesOfOneAndEightGpus) {
  auto laptop = parse_nvbandwidth(read_fixture(
      "nvbandwidth", "windows-run_1xrtx3050-laptop_v0.8_all-tests-with-local-copy.txt"));
  const NvbandwidthTestCase* local = nullptr;
  for (const auto& c : laptop.test_cases) {
    if (c.name == "device_local_copy") local = &c;
  }
  ASSERT_NE(local, nullptr);
  ASSERT_EQ(local->matrices.size(), 1u);
  EXPECT_EQ(local->matrices[0].title, "memcpy local GPU(column) bandwidth (GB/s)");
  EXPECT_EQ(local->matrices[0].cells, (std::vector<std::vector<std::optional<double>>>{{84.33}}));
  EXPECT_EQ(local->sum, 84.33);

  auto h20 = parse_nvbandwidth(
      read_fixture("nvbandwidth", "nvbandwidth-48_8xh20-3e_v0.8_device-local-copy.txt"));
  ASSERT_FALSE(h20.test_cases.empty());
  EXPECT_EQ(h20.test_cases[0].name, "device_local_copy");
  const auto& m = h20.test_cases[0].matrices.at(0);
  EXPECT_EQ(m.rows, (std::vector<std::string>{"0"}));
  ASSERT_EQ(m.cells.at(0).size(), 8u);
  EXPECT_EQ(m.cells[0][0], 1116.30);
  EXPECT_EQ(m.cells[0][6], 1117.17);
  EXPECT_EQ(h20.test_cases[0].sum, 8930.99);
}

TEST(NvbandwidthEdges, SumOnlyAndWaivedCases) {
  auto r = parse_nvbandwidth(
      "    Running host_to_device_memcpy_ce.\n"
      "    SUM host_to_device_memcpy_ce 55.23\n"
      "Running device_to_device_memcpy_read_ce.\n"
      "Waived.\n"
      "Running device_to_host_memcpy_ce.\n"
      "memcpy CE CPU(row) <- GPU(column) bandwidth (GB/s)\n"
      "           0         1\n"
      " 0     N/A     52.10\n");
  EXPECT_EQ(names(r),
            (std::vector<std::string>{"host_to_device_memcpy_ce", "device_to_host_memcpy_ce"}));
  EXPECT_EQ(r.test_cases[0].sum, 55.23);
  EXPECT_EQ(r.test_cases[1].sum, std::nullopt);
  EXPECT_EQ(r.test_cases[1].matrices[0].cells[0][1], 52.10);
}

// A capture saved with Windows line ends reads the same.
TEST(NvbandwidthEdges, CrLfLineEnds) {
  auto text = read_fixture("nvbandwidth", "burn-in-notes_7-gpus_v0.10.txt");
  std::string crlf;
  for (char c : text) crlf += c == '\n' ? std::string("\r\n") : std::string(1, c);
  EXPECT_EQ(parse_nvbandwidth(crlf), parse_nvbandwidth(text));
}

TEST(NvbandwidthErrors, BrokenOutputIsRefused) {
  const std::string title = "memcpy CE CPU(row) -> GPU(column) bandwidth (GB/s)\n";
  for (const std::string& text : std::vector<std::string>{
           "",
           "nvbandwidth Version: v0.5\nERROR: cudaErrorNoDevice\n",
           "Running host_to_device_memcpy_ce.\n",
           "Running x.\n" + title + "  0  1\n 0  1.0  2.0  3.0\n",  // a row too long
           "Running x.\n" + title + "  0  1\n 0  1.0\n",            // a row too short
           "Running x.\n" + title + "  0  1\n 0  1.0  fast\n",      // a cell not a number
           "Running x.\nSUM x\n",
           "Running x.\nSUM x lots\n",
           "Running x.\nSUM x inf\n",
       }) {
    EXPECT_THROW(parse_nvbandwidth(text), ParseError) << text;
  }
}

TEST(NvbandwidthErrors, LimitsBoundTheWork) {
  std::string many;
  for (std::size_t i = 0; i <= kMaxNvbandwidthTestCases; ++i) many += "Running x.\nSUM x 1\n";
  EXPECT_THROW(parse_nvbandwidth(many), ParseError);
  std::string wide = "Running x.\nmemcpy CE CPU(row) -> GPU(column) bandwidth (GB/s)\n";
  for (std::size_t i = 0; i <= kMaxNvbandwidthMatrixSide; ++i) wide += " " + std::to_string(i);
  EXPECT_THROW(parse_nvbandwidth(wide + "\n"), ParseError);
  EXPECT_THROW(parse_nvbandwidth(std::string(kMaxToolOutputBytes + 1, '\n')), ParseError);
}

}  // namespace nvbandwidth_test
}  // namespace gpurent::burn_in
