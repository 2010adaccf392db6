// Tests the model choice: which catalog models meet a request's constraints, and the order a
// booking tries them in. The models' facts are those of ../shared/reference/gpus.md.
#include "scheduler/model_choice.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace gpurent::scheduler {
namespace model_choice_test {

inventory::GpuModelRecord model(std::string name, std::string architecture, int vram_gb, bool bf16,
                                bool fp8) {
  inventory::GpuModelRecord m;
  m.name = std::move(name);
  m.architecture = std::move(architecture);
  m.vram_gb = vram_gb;
  m.bf16 = bf16;
  m.fp8 = fp8;
  return m;
}

// name, architecture, memory, bf16, fp8; price per day for one GPU in minor units.
const std::vector<PricedModel> kCatalog = {
    {model("H200-SXM5-141GB", "Hopper", 141, true, true), 850000},
    {model("H100-SXM5-80GB", "Hopper", 80, true, true), 650000},
    {model("A100-SXM4-80GB", "Ampere", 80, true, false), 420000},
    {model("A100-PCIE-40GB", "Ampere", 40, true, false), 300000},
    {model("L40S-48GB", "Ada", 48, true, true), 260000},
    {model("RTX4090-24GB", "Ada", 24, true, true), 100000},
    {model("L4-24GB", "Ada", 24, true, true), 100000},
    {model("V100-SXM2-32GB", "Volta", 32, false, false), 150000},
};

std::vector<std::string> names(const std::vector<PricedModel>& models) {
  std::vector<std::string> out;
  for (const auto& m : models) out.push_back(m.model.name);
  return out;
}

struct Case {
  const char* what;
  ModelConstraints constraints;
  std::vector<std::string> expected;  // in the order a booking tries them
};

class ModelsMeeting : public ::testing::TestWithParam<Case> {};

TEST_P(ModelsMeeting, FiltersAndOrdersCheapestFirst) {
  const auto& c = GetParam();
  EXPECT_EQ(names(models_meeting(c.constraints, kCatalog)), c.expected) << c.what;
}

INSTANTIATE_TEST_SUITE_P(
    Constraints, ModelsMeeting,
    ::testing::Values(
        // At one price the smaller memory comes first, then the name: L4 and RTX 4090 both
        // 24 GB at 1,000.00 a day.
        Case{"no constraint: every model, cheapest first",
             {},
             {"L4-24GB", "RTX4090-24GB", "V100-SXM2-32GB", "L40S-48GB", "A100-PCIE-40GB",
              "A100-SXM4-80GB", "H100-SXM5-80GB", "H200-SXM5-141GB"}},
        Case{"at least 80 GB",
             {.min_vram_gb = 80},
             {"A100-SXM4-80GB", "H100-SXM5-80GB", "H200-SXM5-141GB"}},
        Case{"at least 80 GB with fp8: Ampere drops out",
             {.min_vram_gb = 80, .fp8 = true},
             {"H100-SXM5-80GB", "H200-SXM5-141GB"}},
        Case{"bf16: Volta drops out",
             {.bf16 = true},
             {"L4-24GB", "RTX4090-24GB", "L40S-48GB", "A100-PCIE-40GB", "A100-SXM4-80GB",
              "H100-SXM5-80GB", "H200-SXM5-141GB"}},
        Case{"architecture, in any case",
             {.architecture = "ampere"},
             {"A100-PCIE-40GB", "A100-SXM4-80GB"}},
        Case{"architecture and memory", {.min_vram_gb = 48, .architecture = "ada"}, {"L40S-48GB"}},
        Case{"exactly the memory asked is enough", {.min_vram_gb = 141}, {"H200-SXM5-141GB"}},
        Case{"more memory than any model", {.min_vram_gb = 142}, {}},
        Case{"an architecture not in the catalog", {.architecture = "Blackwell"}, {}},
        Case{"a prefix of an architecture is not it", {.architecture = "Hop"}, {}}),
    [](const auto& info) { return "case_" + std::to_string(info.index); });

TEST(ModelConstraints, EmptyOnlyWithoutAnyDemand) {
  EXPECT_TRUE(ModelConstraints{}.empty());
  EXPECT_FALSE(ModelConstraints{.min_vram_gb = 1}.empty());
  EXPECT_FALSE(ModelConstraints{.bf16 = true}.empty());
  EXPECT_FALSE(ModelConstraints{.fp8 = true}.empty());
  EXPECT_FALSE(ModelConstraints{.architecture = "Hopper"}.empty());
}

}  // namespace model_choice_test
}  // namespace gpurent::scheduler
