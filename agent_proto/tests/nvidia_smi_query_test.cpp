// Tests the `nvidia-smi --query-gpu` CSV reader against every captured fixture and against
// hand-made tables: units, N/A forms, field subsets and orders, CRLF, short rows, garbage.
#include "agent_proto/nvidia_smi_query.h"
#include "agent_proto/tests/printers.h"
#include "tests/support/paths.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace gpurent::agent_proto {

namespace nvidia_smi_query_test {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::filesystem::path fixture_dir() {
  return std::filesystem::path(gpurent::testing::source_dir()) /
         "agent_proto/tests/fixtures/query-gpu";
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in) << "missing fixture " << path;
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

std::string parse_error(std::string_view text) {
  try {
    parse_query_gpu_csv(text);
  } catch (const QueryGpuParseError& e) {
    return e.what();
  }
  return "";
}

std::string parse_error(std::string_view text, const std::vector<std::string>& fields) {
  try {
    parse_query_gpu_csv(text, fields);
  } catch (const QueryGpuParseError& e) {
    return e.what();
  }
  return "";
}

bool is_printable_ascii(std::string_view s) {
  for (char c : s) {
    if (c < 0x20 || c > 0x7e) return false;
  }
  return true;
}

// ---- Captured fixtures ----

struct FixtureCase {
  std::string file;
  std::string name;
  double temperature;
  std::optional<double> limit;  // temperature + T.Limit margin
  double power;
  std::optional<int> utilization;  // [N/A] in MIG mode
  std::int64_t memory_used;
  std::int64_t memory_total;
  std::optional<std::int64_t> ecc_dbe;
  std::optional<bool> remap_pending;
  std::vector<std::string> reasons;
  int sm_clock;  // clocks.current.sm: idle clocks, but an L40S reports its boost
};

const std::vector<FixtureCase> kFixtures = {
    {"linux-x86_64__nvidia-geforce-rtx-2080-super__595.71.05.query-gpu-idle.csv",
     "NVIDIA GeForce RTX 2080 SUPER",
     40,
     std::nullopt,
     39.32,
     0,
     214,
     8192,
     std::nullopt,
     std::nullopt,
     {"sw_power_cap"},
     765},
    {"linux-x86_64__nvidia-geforce-rtx-2080-super__610.57.04.query-gpu-idle.csv",
     "NVIDIA GeForce RTX 2080 SUPER",
     33,
     std::nullopt,
     39.17,
     0,
     211,
     8192,
     std::nullopt,
     std::nullopt,
     {"gpu_idle"},
     765},
    {"linux-x86_64__nvidia-geforce-rtx-4080-super__595.71.05.query-gpu-idle.csv",
     "NVIDIA GeForce RTX 4080 SUPER",
     43,
     std::nullopt,
     26.20,
     0,
     596,
     16376,
     std::nullopt,
     std::nullopt,
     {"gpu_idle"},
     210},
    {"linux-x86_64__nvidia-h100-80gb-hbm3__590.48.01.query-gpu-idle.csv",
     "NVIDIA H100 80GB HBM3",
     41,
     87,
     69.85,
     0,
     0,
     81559,
     0,
     false,
     {"gpu_idle"},
     345},
    {"linux-x86_64__nvidia-h100-mig__590.48.01.query-gpu-idle.csv",
     "NVIDIA H100 80GB HBM3",
     42,
     87,
     71.15,
     std::nullopt,
     59,
     81559,
     0,
     std::nullopt,
     {"gpu_idle"},
     345},
    {"linux-x86_64__nvidia-h200-mig__590.48.01.query-gpu-idle.csv",
     "NVIDIA H200",
     28,
     87,
     78.28,
     std::nullopt,
     55,
     143771,
     0,
     std::nullopt,
     {"gpu_idle"},
     345},
    {"linux-x86_64__nvidia-h200__590.48.01.query-gpu-idle.csv",
     "NVIDIA H200",
     28,
     87,
     77.71,
     0,
     0,
     143771,
     0,
     false,
     {"gpu_idle"},
     345},
    {"linux-x86_64__nvidia-l40s__595.80.query-gpu-idle.csv",
     "NVIDIA L40S",
     63,
     88,
     144.97,
     100,
     0,
     46068,
     0,
     false,
     {},
     2520},
    {"windows-x86_64__nvidia-geforce-rtx-2080-super__591.86.query-gpu-idle.csv",
     "NVIDIA GeForce RTX 2080 SUPER",
     40,
     std::nullopt,
     38.92,
     0,
     702,
     8192,
     std::nullopt,
     std::nullopt,
     {"gpu_idle"},
     300},
    {"windows-x86_64__nvidia-geforce-rtx-2080-super__610.62.query-gpu-idle.csv",
     "NVIDIA GeForce RTX 2080 SUPER",
     40,
     std::nullopt,
     39.25,
     0,
     797,
     8192,
     std::nullopt,
     std::nullopt,
     {"gpu_idle"},
     300},
};

TEST(QueryGpuFixtures, EveryCaptureIsCovered) {
  std::size_t csv_files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(fixture_dir())) {
    if (entry.path().extension() != ".csv") continue;
    ++csv_files;
    bool listed = false;
    for (const auto& c : kFixtures) listed = listed || c.file == entry.path().filename();
    EXPECT_TRUE(listed) << entry.path().filename() << " has no expectations";
  }
  EXPECT_EQ(csv_files, kFixtures.size());
}

TEST(QueryGpuFixtures, ReadsEachCapture) {
  for (const auto& c : kFixtures) {
    SCOPED_TRACE(c.file);
    auto gpus = parse_query_gpu_csv(read_file(fixture_dir() / c.file));
    ASSERT_EQ(gpus.size(), 1u);
    const auto& g = gpus[0];
    EXPECT_EQ(g.index, 0);
    EXPECT_EQ(g.name, c.name);
    EXPECT_EQ(g.uuid, "GPU-00000000-0000-0000-0000-000000000000");
    ASSERT_TRUE(g.pci_bus_id);
    EXPECT_EQ(g.pci_bus_id->substr(0, 9), "00000000:");
    EXPECT_EQ(g.temperature_c, c.temperature);
    EXPECT_EQ(g.shutdown_temperature_c, c.limit);
    EXPECT_EQ(g.power_w, c.power);
    EXPECT_TRUE(g.power_limit_w && *g.power_limit_w >= 250);
    EXPECT_EQ(g.utilization_pct, c.utilization);
    EXPECT_EQ(g.memory_used_mib, c.memory_used);
    EXPECT_EQ(g.memory_total_mib, c.memory_total);
    EXPECT_EQ(g.ecc_volatile_dbe, c.ecc_dbe);
    EXPECT_EQ(g.ecc_aggregate_dbe, c.ecc_dbe);
    EXPECT_EQ(g.remapped_rows_pending, c.remap_pending);
    EXPECT_EQ(g.remapped_rows_failure, c.remap_pending);
    EXPECT_EQ(g.throttle_reasons, c.reasons);
    EXPECT_EQ(g.sm_clock_mhz, c.sm_clock);
    // None of the captures has retired-page counts ([N/A] on every driver).
    EXPECT_FALSE(g.retired_pages_sbe || g.retired_pages_dbe || g.retired_pages_pending);
    EXPECT_FALSE(g.nvlink_crc_errors || g.nvlink_links_down || g.pcie_replays);
    EXPECT_EQ(gpu_telemetry_from_json(to_json(g), "g"), g);
  }
}

TEST(QueryGpuFixtures, CrlfAndDoubledCapturesReadTheSame) {
  auto text = read_file(fixture_dir() / kFixtures[3].file);
  auto once = parse_query_gpu_csv(text);
  std::string crlf;
  for (char c : text) crlf += c == '\n' ? std::string("\r\n") : std::string(1, c);
  EXPECT_EQ(parse_query_gpu_csv(crlf), once);
  EXPECT_EQ(parse_query_gpu_csv("\xef\xbb\xbf" + crlf), once);
}

TEST(QueryGpuFixtures, ATruncatedCaptureIsRefusedNeverCrashes) {
  for (const auto& c : kFixtures) {
    auto text = read_file(fixture_dir() / c.file);
    for (std::size_t cut : {text.size() / 3, text.size() / 2, text.size() - 40}) {
      auto message = parse_error(text.substr(0, cut));
      if (message.empty()) continue;  // a cut at a line end is a header with no rows
      EXPECT_TRUE(is_printable_ascii(message)) << message;
      EXPECT_LT(message.size(), 400u) << message;
    }
  }
}

// ---- Hand-made tables ----

TEST(QueryGpuCsv, UnitsInHeaderAndValues) {
  auto gpus = parse_query_gpu_csv(
      "index, power.draw [W], utilization.gpu [%], memory.used [MiB], temperature.gpu\n"
      "0, 70.50 W, 99 %, 1024 MiB, 81\n"
      "1, 312.25 W, 3 %, 0 MiB, 45\n");
  ASSERT_EQ(gpus.size(), 2u);
  EXPECT_EQ(gpus[0].power_w, 70.5);
  EXPECT_EQ(gpus[0].utilization_pct, 99);
  EXPECT_EQ(gpus[0].memory_used_mib, 1024);
  EXPECT_EQ(gpus[1].index, 1);
  EXPECT_EQ(gpus[1].power_w, 312.25);
  EXPECT_EQ(gpus[1].temperature_c, 45);
}

TEST(QueryGpuCsv, NounitsAnyOrderAndSubset) {
  auto gpus = parse_query_gpu_csv(
      "memory.total, temperature.gpu, index, name\n"
      "81559, 41, 3, NVIDIA H100 80GB HBM3\n");
  ASSERT_EQ(gpus.size(), 1u);
  EXPECT_EQ(gpus[0].index, 3);
  EXPECT_EQ(gpus[0].memory_total_mib, 81559);
  EXPECT_EQ(gpus[0].name, "NVIDIA H100 80GB HBM3");
  EXPECT_FALSE(gpus[0].power_w);
}

TEST(QueryGpuCsv, EveryNotAvailableFormLeavesTheFieldAbsent) {
  for (auto na : {"[N/A]", "N/A", "[Not Supported]", "[Unknown Error]",
                  "[Requested functionality has been deprecated]", "[Function Not Found]",
                  "[Insufficient Permissions]", ""}) {
    auto gpus = parse_query_gpu_csv(std::string("index, power.draw [W], retired_pages.pending\n") +
                                    "0, " + na + ", " + na + "\n");
    ASSERT_EQ(gpus.size(), 1u) << na;
    EXPECT_FALSE(gpus[0].power_w) << na;
    EXPECT_FALSE(gpus[0].retired_pages_pending) << na;
  }
}

TEST(QueryGpuCsv, ExtraSpacesAndTabsAreTrimmed) {
  auto gpus =
      parse_query_gpu_csv("  index ,\tname ,temperature.gpu  \n   0 ,  NVIDIA L40S\t, 63  \n");
  ASSERT_EQ(gpus.size(), 1u);
  EXPECT_EQ(gpus[0].name, "NVIDIA L40S");
  EXPECT_EQ(gpus[0].temperature_c, 63);
}

TEST(QueryGpuCsv, WithoutAnIndexColumnRowsAreNumbered) {
  auto gpus = parse_query_gpu_csv("name\nA\n\nB\n");
  ASSERT_EQ(gpus.size(), 2u);
  EXPECT_EQ(gpus[0].index, 0);
  EXPECT_EQ(gpus[1].index, 1);
}

TEST(QueryGpuCsv, HeaderOnlyIsANodeWithoutGpus) {
  EXPECT_TRUE(parse_query_gpu_csv("index, name\n").empty());
}

TEST(QueryGpuCsv, EccRetirementAndRemapping) {
  auto gpus = parse_query_gpu_csv(
      "index, ecc.errors.corrected.volatile.total, ecc.errors.uncorrected.volatile.total, "
      "ecc.errors.uncorrected.aggregate.total, retired_pages.sbe, retired_pages.double_bit.count, "
      "retired_pages.pending, remapped_rows.correctable, remapped_rows.uncorrectable, "
      "remapped_rows.pending, remapped_rows.failure\n"
      "0, 12, 1, 7, 3, 2, Yes, 5, 1, Yes, No\n");
  ASSERT_EQ(gpus.size(), 1u);
  const auto& g = gpus[0];
  EXPECT_EQ(g.ecc_volatile_sbe, 12);
  EXPECT_EQ(g.ecc_volatile_dbe, 1);
  EXPECT_EQ(g.ecc_aggregate_dbe, 7);
  EXPECT_EQ(g.retired_pages_sbe, 3);
  EXPECT_EQ(g.retired_pages_dbe, 2);
  EXPECT_EQ(g.retired_pages_pending, true);
  EXPECT_EQ(g.remapped_rows_correctable, 5);
  EXPECT_EQ(g.remapped_rows_uncorrectable, 1);
  EXPECT_EQ(g.remapped_rows_pending, true);
  EXPECT_EQ(g.remapped_rows_failure, false);
}

TEST(QueryGpuCsv, TotalEccWinsOverDeviceMemoryWhateverTheOrder) {
  auto gpus = parse_query_gpu_csv(
      "ecc.errors.uncorrected.volatile.total, ecc.errors.uncorrected.volatile.device_memory\n"
      "4, 1\n");
  EXPECT_EQ(gpus[0].ecc_volatile_dbe, 4);
  gpus = parse_query_gpu_csv(
      "ecc.errors.uncorrected.volatile.device_memory, ecc.errors.uncorrected.volatile.total\n"
      "1, [N/A]\n");
  EXPECT_EQ(gpus[0].ecc_volatile_dbe, 1);
}

TEST(QueryGpuCsv, ThrottleReasonColumnsOldAndNewNames) {
  auto gpus = parse_query_gpu_csv(
      "clocks_throttle_reasons.hw_thermal_slowdown, clocks_event_reasons.sw_power_cap, "
      "clocks_event_reasons.hw_thermal_slowdown, clocks_event_reasons.gpu_idle, "
      "clocks_event_reasons.supported, clocks_event_reasons.active\n"
      "Active, Active, Active, Not Active, 0x00000000000001FF, 0x0000000000000044\n");
  EXPECT_THAT(gpus[0].throttle_reasons, ElementsAre("hw_thermal_slowdown", "sw_power_cap"));
}

TEST(QueryGpuCsv, TheActiveBitmaskIsDecodedWhenNoReasonColumns) {
  auto gpus = parse_query_gpu_csv("clocks_event_reasons.active\n0x00000000000000E8\n");
  EXPECT_THAT(gpus[0].throttle_reasons,
              ElementsAre("hw_slowdown", "sw_thermal_slowdown", "hw_thermal_slowdown",
                          "hw_power_brake_slowdown"));
  gpus = parse_query_gpu_csv("clocks_throttle_reasons.active\n0x0\n");
  EXPECT_TRUE(gpus[0].throttle_reasons.empty());
}

TEST(QueryGpuCsv, PowerDrawPrefersTheInstantaneousField) {
  auto gpus = parse_query_gpu_csv(
      "power.draw.average [W], power.draw [W], power.draw.instant [W]\n1.00 W, [N/A], 3.00 W\n");
  EXPECT_EQ(gpus[0].power_w, 3.0);
}

TEST(QueryGpuCsv, UnknownColumnsAreIgnored) {
  auto gpus = parse_query_gpu_csv("fan.speed [%], index, pstate, vbios_version\n37 %, 0, P8, x\n");
  ASSERT_EQ(gpus.size(), 1u);
  EXPECT_EQ(to_json(gpus[0]), nlohmann::json({{"index", 0}}));
}

// ---- Without header (the agent's own query) ----

TEST(QueryGpuNoHeader, ReadsWithTheGivenFields) {
  std::vector<std::string> fields = {"index", "uuid", "temperature.gpu", "power.draw",
                                     "remapped_rows.pending"};
  auto gpus =
      parse_query_gpu_csv("0, GPU-a, 41, 69.85, No\r\n1, GPU-b, 45, 120.00, Yes\r\n", fields);
  ASSERT_EQ(gpus.size(), 2u);
  EXPECT_EQ(gpus[1].uuid, "GPU-b");
  EXPECT_EQ(gpus[1].power_w, 120.0);
  EXPECT_EQ(gpus[1].remapped_rows_pending, true);
  // Units in the values are read too, should the agent leave out `nounits`.
  EXPECT_EQ(parse_query_gpu_csv("0, GPU-a, 41, 69.85 W, No\n", fields)[0].power_w, 69.85);
}

TEST(QueryGpuNoHeader, EmptyOutputIsNoGpus) {
  EXPECT_TRUE(parse_query_gpu_csv("", {"index"}).empty());
  EXPECT_TRUE(parse_query_gpu_csv("\r\n\n", {"index"}).empty());
}

TEST(QueryGpuNoHeader, AnEmptyFieldListIsAProgrammingError) {
  EXPECT_THROW(parse_query_gpu_csv("0\n", {}), std::invalid_argument);
}

TEST(QueryGpuNoHeader, AShortRowNamesTheLineAndCounts) {
  auto message = parse_error("0, 41\n1\n", {"index", "temperature.gpu"});
  EXPECT_THAT(message, HasSubstr("line 2 has 1 cell but the query has 2 fields"));
}

TEST(QueryGpuNoHeader, NvidiaSmisOwnErrorIsQuoted) {
  auto message =
      parse_error("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n",
                  {"index", "name"});
  EXPECT_THAT(message, HasSubstr("NVIDIA-SMI has failed"));
}

// ---- Refusals ----

TEST(QueryGpuCsv, RefusesWhatIsNotATable) {
  struct Case {
    std::string text;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {"", "the output is empty"},
      {"\n \r\n", "the output is empty"},
      {"No devices were found\n", "not a --query-gpu header: 'No devices were found'"},
      {"Field \"bogus\" is not a valid field to query.\n", "not a --query-gpu header"},
      {"0, NVIDIA H100, 41\n", "not a --query-gpu header"},
      {"index, name, temperature.gpu\n0, H100\n", "line 2 has 2 cells but the query has 3 fields"},
      {"index, name\n0, H100, 41\n", "line 2 has 3 cells but the query has 2 fields"},
      {"index, temperature.gpu\n0, hot\n", "line 2, field temperature.gpu: 'hot' is not a number"},
      {"index, temperature.gpu\n0, nan\n", "'nan' is not a number"},
      {"index, temperature.gpu\n0, 250\n", "temperature_c: must be from -50 to 200"},
      {"index, utilization.gpu [%]\n0, 101 %\n", "a percentage from 0 to 100"},
      {"index, memory.used [MiB]\n0, 1.5 MiB\n", "'1.5 MiB' is not an integer"},
      {"index, memory.used [MiB]\n0, -5 MiB\n", "memory_used_mib: must be from 0"},
      {"index, power.draw [W]\n0, 70 W W\n", "a number with a unit"},
      {"index, remapped_rows.pending\n0, Maybe\n", "'Maybe' is not Yes or No"},
      {"index, clocks_event_reasons.sw_power_cap\n0, On\n", "not Active or Not Active"},
      {"index, clocks_event_reasons.active\n0, 12\n", "not a hexadecimal bitmask"},
      {"index\n-1\n", "a GPU index from 0 to 1023"},
      {"index\n0\n0\n", "line 3: GPU index 0 appears twice"},
      {"index, name\n0, H\xc3\xa9\n", "printable ASCII"},
      {"index, name\n0, " + std::string(129, 'x') + "\n", "at most 128 characters"},
  };
  for (const auto& c : cases) {
    auto message = parse_error(c.text);
    EXPECT_THAT(message, HasSubstr(c.expected)) << c.text;
    EXPECT_TRUE(is_printable_ascii(message)) << message;
  }
}

TEST(QueryGpuCsv, RefusesOversizedOutput) {
  std::string text = "index\n" + std::string(kMaxQueryGpuTextBytes, '\n');
  EXPECT_THAT(parse_error(text), HasSubstr("at most"));
  std::string rows = "index\n";
  for (std::size_t i = 0; i <= kMaxQueryGpuRows; ++i) rows += "0\n";
  EXPECT_THAT(parse_error(rows), HasSubstr("more than 1024 GPU rows"));
}

TEST(QueryGpuCsv, ErrorQuotesAreShortAndPrintable) {
  auto message = parse_error(std::string("\x1b[31m") + std::string(500, 'E') + "\x01\n");
  EXPECT_TRUE(is_printable_ascii(message)) << message;
  EXPECT_LT(message.size(), 200u);
}

}  // namespace nvidia_smi_query_test
}  // namespace gpurent::agent_proto
