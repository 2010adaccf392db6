// Table tests of the doctor's checks (scheduler/doctor.h): which verdict each finding gives,
// and that only the rental's own GPUs and links count.
#include "scheduler/doctor.h"

#include <gtest/gtest.h>

namespace gpurent::scheduler {
namespace doctor_test {

using burn_in::BurnInFigures;

// An HGX H100's measurements: every pair near 395 GB/s, NCCL near 448.
BurnInFigures hgx() {
  BurnInFigures f{.tools = {"nvbandwidth", "nccl", "nvlink"}, .nccl_bus_gbps = 448};
  for (int a = 0; a < 8; ++a) {
    for (int b = a + 1; b < 8; ++b) f.links.push_back({a, b, 395.0});
    f.nvlink.push_back({.gpu = a, .active = 18, .errors = 0});
  }
  return f;
}

DoctorFacts healthy(std::vector<int> gpus) {
  return {.gpu_indices = std::move(gpus),
          .node_driver = "550.54.15",
          .image_driver = "550.54.15",
          .telemetry = nlohmann::json::array(
              {{{"index", 0}, {"ecc_volatile_dbe", 0}}, {{"index", 1}, {"ecc_volatile_dbe", 0}}}),
          .figures = hgx(),
          .nominal = {.link_gbps = 450, .all_pairs_nvlinked = true}};
}

const DoctorCheck& check(const DoctorReport& r, const std::string& name) {
  for (const auto& c : r.checks) {
    if (c.name == name) return c;
  }
  static const DoctorCheck kNone{"none", "absent", "", ""};
  return kNone;
}

TEST(Doctor, EachCheckGivesItsVerdict) {
  struct Row {
    const char* name;
    std::function<void(DoctorFacts&)> change;
    std::string check, verdict, overall;
  };
  const std::vector<Row> rows{
      {"healthy", [](auto&) {}, "nvlink_p2p", "ok", "ok"},
      {"NCCL not asked for", [](auto&) {}, "nccl", "skipped", "ok"},
      {"NCCL allowed and fast", [](auto& f) { f.allow_busy_gpus = true; }, "nccl", "ok", "ok"},
      {"NCCL allowed and slow",
       [](auto& f) {
         f.allow_busy_gpus = true;
         f.figures.nccl_bus_gbps = 30;
       },
       "nccl", "failed", "failed"},
      {"a link of the rental down",
       [](auto& f) {
         for (auto& l : f.figures.links) {
           if (l.a == 0 && l.b == 1) l.gbps = 24.5;
         }
       },
       "nvlink_p2p", "failed", "failed"},
      {"a link of another tenant's GPUs down: not this rental's business",
       [](auto& f) {
         for (auto& l : f.figures.links) {
           if (l.a == 5 && l.b == 6) l.gbps = 24.5;
         }
       },
       "nvlink_p2p", "ok", "ok"},
      {"every NVLink up", [](auto&) {}, "nvlink_state", "ok", "ok"},
      {"the rental's GPU 1 lost its NVLinks",
       [](auto& f) {
         f.figures.nvlink[1].active = 0;
         f.figures.nvlink[1].all_down = true;
       },
       "nvlink_state", "failed", "failed"},
      {"another tenant's GPU 6 lost two links: not this rental's business",
       [](auto& f) {
         f.figures.nvlink[6].active = 16;
         f.figures.nvlink[6].inactive = {3, 7};
       },
       "nvlink_state", "ok", "ok"},
      {"errors counted on the rental's links", [](auto& f) { f.figures.nvlink[0].errors = 12; },
       "nvlink_state", "warning", "warning"},
      {"no NVLink state reported", [](auto& f) { f.figures.nvlink.clear(); }, "nvlink_state",
       "skipped", "ok"},
      {"another driver branch", [](auto& f) { f.node_driver = "535.104.05"; }, "driver", "failed",
       "failed"},
      {"the same branch, another build", [](auto& f) { f.node_driver = "550.90.07"; }, "driver",
       "warning", "warning"},
      {"an uncorrectable ECC error on the rental's GPU",
       [](auto& f) { f.telemetry[1]["ecc_volatile_dbe"] = 2; }, "ecc", "failed", "failed"},
      {"a pending row remap", [](auto& f) { f.telemetry[0]["remapped_rows_pending"] = true; },
       "ecc", "warning", "warning"},
      {"no telemetry yet", [](auto& f) { f.telemetry = nullptr; }, "ecc", "skipped", "ok"},
      {"a tool's output unreadable",
       [](auto& f) { f.figures.problems.push_back("nvbandwidth.txt: no test case"); }, "tools",
       "warning", "warning"},
  };
  for (const auto& row : rows) {
    auto facts = healthy({0, 1});
    row.change(facts);
    auto r = doctor_checks(facts);
    EXPECT_EQ(check(r, row.check).verdict, row.verdict) << row.name;
    EXPECT_EQ(r.verdict, row.overall) << row.name;
  }
}

TEST(Doctor, AFailedLinkIsNamedWithItsFigureAndWhatToDo) {
  auto facts = healthy({0, 1, 2, 3});
  for (auto& l : facts.figures.links) {
    if (l.a == 1 || l.b == 1) l.gbps = 24.5;
  }
  auto c = check(doctor_checks(facts), "nvlink_p2p");
  EXPECT_EQ(c.verdict, "failed");
  for (const char* link : {"gpu0-gpu1", "gpu1-gpu2", "gpu1-gpu3"}) {
    EXPECT_NE(c.detail.find(link), std::string::npos) << link << " in " << c.detail;
  }
  EXPECT_EQ(c.detail.find("gpu0-gpu2"), std::string::npos) << c.detail;
  EXPECT_NE(c.advice.find("PCIe"), std::string::npos);
}

TEST(Doctor, OneGpuHasNoLinksToCheck) {
  auto r = doctor_checks(healthy({0}));
  EXPECT_EQ(check(r, "nvlink_p2p").verdict, "skipped");
  EXPECT_EQ(r.verdict, "ok");
}

}  // namespace doctor_test
}  // namespace gpurent::scheduler
