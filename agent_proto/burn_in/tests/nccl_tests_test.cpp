// Tests the nccl-tests parser on real all_reduce_perf outputs (fixtures/nccl, provenance in
// fixtures/README.md) and on hand-made edges: older table layouts, MPI tags, unfinished runs,
// malformed rows.
#include "agent_proto/burn_in/nccl_tests.h"
#include "agent_proto/burn_in/tests/fixture_text.h"

#include <gtest/gtest.h>

namespace gpurent::burn_in {
namespace nccl_tests_test {

using testing::read_fixture;

TEST(NcclFixtures, EveryRealRunParses) {
  struct Case {
    std::string file;
    std::size_t devices;
    std::size_t rows;
    double avg;
    std::string model;
  };
  const std::vector<Case> cases = {
      {"readme-single-node_8xh100-hbm3.txt", 8, 4, 448.212, "NVIDIA H100 80GB HBM3"},
      {"k8s-mpijob-2-nodes_16xh100-hbm3.txt", 16, 5, 194.675, "NVIDIA H100 80GB HBM3"},
      {"mpi-tagged-output_1xrtx5090-2-ranks.txt", 2, 8, 1.57614, "NVIDIA GeForce RTX 5090"},
  };
  for (const auto& c : cases) {
    auto r = parse_nccl_perf(read_fixture("nccl", c.file));
    EXPECT_EQ(r.devices.size(), c.devices) << c.file;
    EXPECT_EQ(r.rows.size(), c.rows) << c.file;
    EXPECT_DOUBLE_EQ(r.avg_bus_bandwidth_gbps, c.avg) << c.file;
    EXPECT_EQ(r.out_of_bounds_values, 0) << c.file;
    EXPECT_EQ(r.wrong_total(), 0) << c.file;
    ASSERT_FALSE(r.devices.empty()) << c.file;
    EXPECT_EQ(r.devices.back().model, c.model) << c.file;
    for (const auto& row : r.rows) {
      EXPECT_EQ(row.type, "float") << c.file;
      EXPECT_EQ(row.redop, "sum") << c.file;
      EXPECT_EQ(row.root, -1) << c.file;
    }
  }
}

TEST(NcclFixtures, SingleNodeH100RowsAndDevices) {
  auto r = parse_nccl_perf(read_fixture("nccl", "readme-single-node_8xh100-hbm3.txt"));
  EXPECT_EQ(r.rows[0], (NcclRow{268435456,
                                67108864,
                                "float",
                                "sum",
                                -1,
                                {1119.8, 239.71, 419.49, 0},
                                {1117.4, 240.24, 420.42, 0}}));
  EXPECT_DOUBLE_EQ(r.rows[3].out_of_place.busbw_gbps, 470.73);
  EXPECT_DOUBLE_EQ(r.rows[3].in_place.busbw_gbps, 470.63);
  EXPECT_EQ(r.devices[7], (NcclDevice{7, 0, 1623025, "host", 7, "0xdf", "NVIDIA H100 80GB HBM3"}));
}

TEST(NcclFixtures, TwoNodesKeepEachRanksHost) {
  auto r = parse_nccl_perf(read_fixture("nccl", "k8s-mpijob-2-nodes_16xh100-hbm3.txt"));
  EXPECT_EQ(r.devices[8].host, "nccl-tests-h100-worker-1");
  EXPECT_EQ(r.devices[8].device, 0);
  EXPECT_EQ(r.devices[15].rank, 15);
  EXPECT_EQ(r.rows.back().size_bytes, 8589934592);
  EXPECT_EQ(r.rows.back().count, 2147483648);
  EXPECT_DOUBLE_EQ(r.rows.back().out_of_place.time_us, 81958);
}

TEST(NcclFixtures, OlderLayoutWithoutRootOrDevices) {
  auto r = parse_nccl_perf(
      read_fixture("nccl", "deepops-slurm-validation_superpod-dgx-2h_no-root-column.txt"));
  EXPECT_TRUE(r.devices.empty());
  ASSERT_EQ(r.rows.size(), 31u);
  EXPECT_DOUBLE_EQ(r.avg_bus_bandwidth_gbps, 16.2513);
  EXPECT_EQ(r.out_of_bounds_values, 0);
  const auto& last = r.rows.back();
  EXPECT_EQ(last.size_bytes, 8589934592);
  EXPECT_EQ(last.redop, "sum");
  EXPECT_EQ(last.root, std::nullopt);
  EXPECT_DOUBLE_EQ(last.out_of_place.busbw_gbps, 81.53);
  EXPECT_DOUBLE_EQ(last.in_place.busbw_gbps, 81.57);
  EXPECT_EQ(last.out_of_place.wrong, std::nullopt);  // "N/A": not checked
}

TEST(NcclFixtures, MpiTagsAreStrippedAndStderrSkipped) {
  auto r = parse_nccl_perf(read_fixture("nccl", "mpi-tagged-output_1xrtx5090-2-ranks.txt"));
  EXPECT_EQ(r.devices[1].bus_id, "0000:02:00");
  EXPECT_EQ(r.devices[1].pid, 2994448);
  EXPECT_DOUBLE_EQ(r.rows[5].out_of_place.time_us, 14977.1);
}

// Synthetic: the layouts before root and before redop, "N/A" and fractional error columns,
// a device line without a group, OK/FAILED after the average.
TEST(NcclLayouts, OlderTablesAndMarkers) {
  auto r = parse_nccl_perf(
      "#   Rank  0 Pid   1320 on ip-172-31-20-228 device  0 [0x00] Tesla V100-SXM2-16GB\n"
      "     1310720000     327680000   float     sum   1251.2   1.05   1.05  0e+00   1250.0   "
      "1.05   1.05  0e+00\n"
      "       65536          8192   float    16.57    1.98    1.98  0e+00    13.83    2.37    2.37 "
      " "
      "0e+00\n"
      "     8     2   float   sum   -1   12.9  0.00  0.00   N/A   12.8  0.00  0.00   N/A\n"
      "# Out of bounds values : 3 FAILED\n"
      "# Avg bus bandwidth    : 6.6972 OK\n");
  ASSERT_EQ(r.rows.size(), 3u);
  EXPECT_EQ(r.devices[0].group, std::nullopt);
  EXPECT_EQ(r.devices[0].model, "Tesla V100-SXM2-16GB");
  EXPECT_EQ(r.rows[0].redop, "sum");
  EXPECT_EQ(r.rows[0].root, std::nullopt);
  EXPECT_EQ(r.rows[0].out_of_place.wrong, std::nullopt);
  EXPECT_EQ(r.rows[1].redop, std::nullopt);
  EXPECT_DOUBLE_EQ(r.rows[1].in_place.busbw_gbps, 2.37);
  EXPECT_EQ(r.rows[2].in_place.wrong, std::nullopt);
  EXPECT_EQ(r.out_of_bounds_values, 3);
  EXPECT_DOUBLE_EQ(r.avg_bus_bandwidth_gbps, 6.6972);
}

TEST(NcclLayouts, WrongCountsAddUp) {
  auto r = parse_nccl_perf(
      "  8  2  float  sum  -1  12.9  0.00  0.00  4  12.8  0.00  0.00  1\n"
      "  16  4  float  sum  -1  12.9  0.00  0.00  0  12.8  0.00  0.00  2\n"
      "# Avg bus bandwidth    : 0\n");
  EXPECT_EQ(r.wrong_total(), 7);
  EXPECT_EQ(r.out_of_bounds_values, std::nullopt);
}

TEST(NcclErrors, UnfinishedOrBrokenRunsAreRefused) {
  const std::string row = "  8  2  float  sum  -1  12.9  0.00  0.00  0  12.8  0.00  0.00  0\n";
  for (const std::string& text : std::vector<std::string>{
           "",
           "garbage\n\x01\xff",
           "# nThread 1 nGpus 8\ntest: Test CUDA failure common.cu:941 'system not yet "
           "initialized'\n",
           row,                                   // no average: did not finish
           "# Avg bus bandwidth    : 1.5\n",      // no rows
           row + "# Avg bus bandwidth    : x\n",  // average not a number
           row + "# Avg bus bandwidth    : -1\n",
           row + "# Avg bus bandwidth    : nan\n",
           "  8  2  float  sum  -1  12.9  0.00  abc  0  12.8  0.00  0.00  0\n"
           "# Avg bus bandwidth    : 1\n",  // a bad number in a row
           "  8  2  float  sum  -1  12.9  0.00  0.00  -4  12.8  0.00  0.00  0\n"
           "# Avg bus bandwidth    : 1\n",
           "  8  2  float  sum  x  12.9  0.00  0.00  0  12.8  0.00  0.00  0\n"
           "# Avg bus bandwidth    : 1\n",
           row + "# Out of bounds values : many\n# Avg bus bandwidth    : 1\n",
       }) {
    EXPECT_THROW(parse_nccl_perf(text), ParseError) << text;
  }
}

TEST(NcclErrors, LimitsBoundTheWork) {
  std::string many;
  for (std::size_t i = 0; i <= kMaxNcclRows; ++i) {
    many += "  8  2  float  sum  -1  12.9  0.00  0.00  0  12.8  0.00  0.00  0\n";
  }
  EXPECT_THROW(parse_nccl_perf(many + "# Avg bus bandwidth    : 1\n"), ParseError);
  EXPECT_THROW(parse_nccl_perf(std::string(kMaxToolOutputBytes + 1, ' ')), ParseError);
  // Long names are cut, not refused.
  auto r = parse_nccl_perf("#  Rank  0 Group  0 Pid 1 on " + std::string(500, 'h') +
                           " device  0 [0x1] GPU\n"
                           "  8  2  float  sum  -1  12.9  0.00  0.00  0  12.8  0.00  0.00  0\n"
                           "# Avg bus bandwidth    : 1\n");
  EXPECT_EQ(r.devices[0].host.size(), kMaxNcclNameBytes);
  // A line longer than any the tool prints is skipped unread.
  auto skipped =
      parse_nccl_perf(std::string(kMaxToolLineBytes + 1, '1') +
                      "\n  8  2  float  sum  -1  12.9  0.00  0.00  0  12.8  0.00  0.00  0\n"
                      "# Avg bus bandwidth    : 1\n");
  EXPECT_EQ(skipped.rows.size(), 1u);
}

}  // namespace nccl_tests_test
}  // namespace gpurent::burn_in
