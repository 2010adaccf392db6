// Tests the choice of rentals for a sized workload on public facts: the GPU models of
// ../shared/reference/gpus.md (memory, compute capability, bf16/fp8), offered in the shapes
// the demo fleet rents.
#include "advisor/recommend.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

namespace gpurent::advisor {
namespace recommend_test {

inventory::GpuModelRecord gpu(std::string name, std::string cc, int vram, bool bf16, bool fp8) {
  inventory::GpuModelRecord m;
  m.name = std::move(name);
  m.compute_capability = std::move(cc);
  m.vram_gb = vram;
  m.bf16 = bf16;
  m.fp8 = fp8;
  return m;
}

// The reference table: name, compute capability, memory, bf16, fp8.
const std::vector<inventory::GpuModelRecord> kCatalog = {
    gpu("H200-SXM5-141GB", "9.0", 141, true, true), gpu("H100-SXM5-80GB", "9.0", 80, true, true),
    gpu("H100-PCIe-80GB", "9.0", 80, true, true),   gpu("H100-NVL-94GB", "9.0", 94, true, true),
    gpu("A100-SXM4-80GB", "8.0", 80, true, false),  gpu("A100-PCIe-80GB", "8.0", 80, true, false),
    gpu("A100-SXM4-40GB", "8.0", 40, true, false),  gpu("L40S-48GB", "8.9", 48, true, true),
    gpu("RTX6000Ada-48GB", "8.9", 48, true, true),  gpu("L4-24GB", "8.9", 24, true, true),
    gpu("RTX4090-24GB", "8.9", 24, true, true),     gpu("T4-16GB", "7.5", 16, false, false),
    gpu("V100-SXM2-32GB", "7.0", 32, false, false),
};

const Timestamp kNow = Timestamp(std::chrono::seconds(1'800'000'000));

// Every model on sale: per GPU and day (roubles), its node shape and the counts it rents.
std::vector<Offering> fleet() {
  struct Shape {
    const char* model;
    long long roubles_per_gpu;
    const char* interconnect;
    std::vector<int> counts;
  };
  const std::vector<Shape> shapes = {
      {"H200-SXM5-141GB", 8500, "nvswitch", {1, 2, 4, 8}},
      {"H100-SXM5-80GB", 6500, "nvswitch", {1, 2, 4, 8}},
      {"H100-PCIe-80GB", 5000, "pcie", {1, 2, 4, 8}},
      {"H100-NVL-94GB", 5500, "nvlink-pairs", {1, 2, 4}},
      {"A100-SXM4-80GB", 4000, "nvswitch", {1, 2, 4, 8}},
      {"A100-PCIe-80GB", 3200, "nvlink-pairs", {1, 2, 4}},
      {"A100-SXM4-40GB", 2500, "nvswitch", {1, 2, 4, 8}},
      {"L40S-48GB", 2600, "pcie", {1, 2, 4, 8}},
      {"RTX6000Ada-48GB", 2400, "pcie", {1, 2, 4}},
      {"L4-24GB", 1000, "pcie", {1, 2, 4}},
      {"RTX4090-24GB", 1300, "pcie", {1, 2, 4, 8}},
      {"T4-16GB", 500, "pcie", {1, 2, 4}},
      {"V100-SXM2-32GB", 800, "nvswitch", {1, 2, 4, 8}},
  };
  std::vector<Offering> out;
  for (const auto& s : shapes) {
    for (int n : s.counts) {
      out.push_back({.gpu_model = s.model,
                     .gpu_count = n,
                     .interconnect = s.interconnect,
                     .price_per_day = Money(s.roubles_per_gpu * 100 * n, "RUB"),
                     .available_now = true,
                     .earliest_start = kNow,
                     .site = "Moscow"});
    }
  }
  return out;
}

Advice advise_for(const SizingRequest& r) {
  return advise(estimate(r), kCatalog, fleet(), 100);
}

const Recommendation* find(const Advice& a, const std::string& model) {
  for (const auto& r : a.recommendations) {
    if (r.gpu_model == model) return &r;
  }
  return nullptr;
}
const Exclusion* excluded(const Advice& a, const std::string& model) {
  for (const auto& x : a.excluded) {
    if (x.gpu_model == model) return &x;
  }
  return nullptr;
}

// Must show 1: 70B in fp16 is ~140 GB of weights: no single 80 GB GPU; two A100/H100 80 GB,
// or H200s (one cannot hold the weights with the KV cache and the runtime beside them).
TEST(Advice, SeventyBillionFp16IsOfferedOnTwo80GbGpusOrH200sAndNeverOne80GbGpu) {
  for (auto request :
       {SizingRequest{
            .params_billion = 70, .precision = Precision::kFp16, .task = Task::kInference},
        SizingRequest{
            .preset = "llama-2-70b", .precision = Precision::kFp16, .task = Task::kInference}}) {
    auto a = advise_for(request);
    SCOPED_TRACE(request.preset.value_or("70B"));
    ASSERT_FALSE(a.recommendations.empty());
    for (const auto& r : a.recommendations) {
      EXPECT_FALSE(r.gpu_count == 1 && r.vram_per_gpu_gb <= 94) << r.gpu_model << ": " << r.why;
      EXPECT_GE(r.gpu_count * r.vram_per_gpu_gb, 140) << r.gpu_model;
    }
    for (const char* model : {"H100-SXM5-80GB", "A100-SXM4-80GB"}) {
      const auto* r = find(a, model);
      ASSERT_NE(r, nullptr) << model;
      EXPECT_EQ(r->gpu_count, 2) << model;
      EXPECT_TRUE(r->sharding_required);
      EXPECT_EQ(r->booking_interconnect, "nvlink");
      const auto* x = excluded(a, model);
      ASSERT_NE(x, nullptr) << "says why one is not enough";
      EXPECT_EQ(x->gpu_count, 1);
      EXPECT_NE(x->why.find("too small"), std::string::npos) << x->why;
    }
    const auto* h200 = find(a, "H200-SXM5-141GB");
    ASSERT_NE(h200, nullptr);
    EXPECT_GE(h200->gpu_count, 1);
    EXPECT_LE(h200->gpu_count, 2);
    EXPECT_TRUE(a.sharding_required) << "no GPU of the catalog holds it alone";
  }
}

// Must show 2: SDXL inference (8-12 GB) fits one 24 GB card.
TEST(Advice, SdxlInferenceFitsOne24GbCard) {
  auto a = advise_for({.preset = "sdxl", .precision = Precision::kFp16, .task = Task::kInference});
  for (const char* model : {"L4-24GB", "RTX4090-24GB"}) {
    const auto* r = find(a, model);
    ASSERT_NE(r, nullptr) << model;
    EXPECT_EQ(r->gpu_count, 1);
    EXPECT_FALSE(r->sharding_required);
    EXPECT_GE(r->required_per_gpu_gb, 8.0);
    EXPECT_LE(r->required_per_gpu_gb, 12.0);
  }
  EXPECT_FALSE(a.sharding_required);
  // Every recommendation is a single GPU: none needs more.
  for (const auto& r : a.recommendations) EXPECT_EQ(r.gpu_count, 1) << r.gpu_model;
}

// Must show 3: full fine-tuning of a 7B model with Adam in mixed precision (~16 bytes a
// parameter, ~108 GB) does not fit one 80 GB GPU; 80 GB GPUs are offered in sharded,
// NVLink-connected sets, and PCIe-only sets are not recommended for it.
TEST(Advice, FullFineTuneOf7bNeedsShardingOverNvlinkConnectedGpus) {
  auto a = advise_for(
      {.preset = "llama-2-7b", .precision = Precision::kBf16, .task = Task::kFullFinetune});
  for (const auto& r : a.recommendations) {
    if (r.vram_per_gpu_gb <= 80) {
      EXPECT_GT(r.gpu_count, 1) << r.gpu_model;
      EXPECT_TRUE(r.sharding_required) << r.gpu_model;
      EXPECT_EQ(r.booking_interconnect, "nvlink") << r.gpu_model;
      EXPECT_TRUE(r.interconnect == "nvswitch" || r.interconnect == "nvlink-pairs")
          << r.gpu_model << " " << r.interconnect;
      EXPECT_NE(r.why.find("sharded"), std::string::npos) << r.why;
    }
  }
  for (const char* model : {"H100-SXM5-80GB", "A100-SXM4-80GB", "A100-PCIe-80GB"}) {
    const auto* r = find(a, model);
    ASSERT_NE(r, nullptr) << model;
    EXPECT_EQ(r->gpu_count, 2) << model;
    const auto* x = excluded(a, model);
    ASSERT_NE(x, nullptr) << model;
    EXPECT_EQ(x->gpu_count, 1) << "one 80 GB GPU is too small";
  }
  // The L40S would hold its share on 4 GPUs, but they have no NVLink.
  EXPECT_EQ(find(a, "L40S-48GB"), nullptr);
  EXPECT_EQ(find(a, "H100-PCIe-80GB"), nullptr) << "its node shape is PCIe only";
  bool said_nvlink = false;
  for (const auto& x : a.excluded) {
    if (x.gpu_model == "L40S-48GB") said_nvlink |= x.why.find("NVLink") != std::string::npos;
  }
  EXPECT_TRUE(said_nvlink);
}

// Must show 4 and 5, for every model of the catalog: fp8 only at compute capability 8.9 or
// newer, bf16 never below 8.0 (T4, V100).
struct PrecisionCase {
  const char* model;
  bool bf16;
  bool fp8;
};

class PrecisionSupport : public ::testing::TestWithParam<PrecisionCase> {};

TEST_P(PrecisionSupport, FollowsComputeCapability) {
  const auto& c = GetParam();
  auto it = std::find_if(kCatalog.begin(), kCatalog.end(),
                         [&](const auto& m) { return m.name == c.model; });
  ASSERT_NE(it, kCatalog.end());
  EXPECT_EQ(!precision_unsupported(*it, Precision::kBf16), c.bf16);
  EXPECT_EQ(!precision_unsupported(*it, Precision::kFp8), c.fp8);
  for (auto p : {Precision::kFp32, Precision::kFp16, Precision::kInt8, Precision::kInt4}) {
    EXPECT_FALSE(precision_unsupported(*it, p)) << to_string(p);
  }
  // A catalog flag that disagrees with the capability never widens the rule.
  auto flagged = *it;
  flagged.bf16 = flagged.fp8 = true;
  EXPECT_EQ(!precision_unsupported(flagged, Precision::kFp8), c.fp8);
  EXPECT_EQ(!precision_unsupported(flagged, Precision::kBf16), c.bf16);
}

INSTANTIATE_TEST_SUITE_P(
    Table, PrecisionSupport,
    ::testing::Values(
        PrecisionCase{"H200-SXM5-141GB", true, true}, PrecisionCase{"H100-SXM5-80GB", true, true},
        PrecisionCase{"H100-PCIe-80GB", true, true}, PrecisionCase{"H100-NVL-94GB", true, true},
        PrecisionCase{"A100-SXM4-80GB", true, false}, PrecisionCase{"A100-PCIe-80GB", true, false},
        PrecisionCase{"A100-SXM4-40GB", true, false}, PrecisionCase{"L40S-48GB", true, true},
        PrecisionCase{"RTX6000Ada-48GB", true, true}, PrecisionCase{"L4-24GB", true, true},
        PrecisionCase{"RTX4090-24GB", true, true}, PrecisionCase{"T4-16GB", false, false},
        PrecisionCase{"V100-SXM2-32GB", false, false}));

TEST(Advice, Fp8IsOnlyOfferedOnComputeCapability89AndNewer) {
  auto a =
      advise_for({.params_billion = 7, .precision = Precision::kFp8, .task = Task::kInference});
  ASSERT_FALSE(a.recommendations.empty());
  for (const auto& r : a.recommendations) {
    auto it = std::find_if(kCatalog.begin(), kCatalog.end(),
                           [&](const auto& m) { return m.name == r.gpu_model; });
    EXPECT_GE(compute_capability(*it), 89) << r.gpu_model;
  }
  for (const char* model :
       {"A100-SXM4-80GB", "A100-PCIe-80GB", "A100-SXM4-40GB", "T4-16GB", "V100-SXM2-32GB"}) {
    const auto* x = excluded(a, model);
    ASSERT_NE(x, nullptr) << model;
    EXPECT_NE(x->why.find("fp8 needs compute capability 8.9"), std::string::npos) << x->why;
  }
}

TEST(Advice, Bf16IsNeverOfferedOnT4OrV100) {
  // A small model both would hold in memory (fully fine-tuned: ~10 GB): only the precision
  // keeps them out.
  for (Task task : {Task::kInference, Task::kLora, Task::kFullFinetune}) {
    auto a = advise_for({.params_billion = 0.5, .precision = Precision::kBf16, .task = task});
    EXPECT_EQ(find(a, "T4-16GB"), nullptr);
    EXPECT_EQ(find(a, "V100-SXM2-32GB"), nullptr);
    ASSERT_NE(excluded(a, "T4-16GB"), nullptr);
    EXPECT_NE(excluded(a, "V100-SXM2-32GB")->why.find("bf16"), std::string::npos);
    // The same job in fp16 runs on them.
    auto fp16 = advise_for({.params_billion = 0.5, .precision = Precision::kFp16, .task = task});
    EXPECT_NE(find(fp16, "T4-16GB"), nullptr) << to_string(task);
    EXPECT_NE(find(fp16, "V100-SXM2-32GB"), nullptr) << to_string(task);
  }
}

TEST(Advice, CheapestFirstThenEarliestStartAndTheBestSiteOfAShape) {
  auto e = estimate({.params_billion = 1, .precision = Precision::kFp16, .task = Task::kInference});
  std::vector<inventory::GpuModelRecord> models = {kCatalog[9], kCatalog[10], kCatalog[11]};
  Timestamp later = kNow + std::chrono::hours(48);
  std::vector<Offering> offers = {
      // L4 at two sites: the one free sooner is chosen.
      {"L4-24GB", 1, "pcie", Money(100000, "RUB"), false, later, "Kazan"},
      {"L4-24GB", 1, "pcie", Money(100000, "RUB"), true, kNow, "Moscow"},
      // The RTX 4090 costs the same as the L4 but starts later: after it.
      {"RTX4090-24GB", 1, "pcie", Money(100000, "RUB"), false, later, "Moscow"},
      // The T4 is cheapest, though fully booked for the horizon: still first, with no start.
      {"T4-16GB", 1, "pcie", Money(50000, "RUB"), false, std::nullopt, "Moscow"},
  };
  auto a = advise(e, models, offers);
  ASSERT_EQ(a.recommendations.size(), 3u);
  EXPECT_EQ(a.recommendations[0].gpu_model, "T4-16GB");
  EXPECT_FALSE(a.recommendations[0].earliest_start);
  EXPECT_EQ(a.recommendations[1].gpu_model, "L4-24GB");
  EXPECT_EQ(a.recommendations[1].site, "Moscow");
  EXPECT_TRUE(a.recommendations[1].available_now);
  EXPECT_EQ(a.recommendations[2].gpu_model, "RTX4090-24GB");
  EXPECT_EQ(a.recommendations[2].booking_interconnect, "any");
  // At most `limit`.
  EXPECT_EQ(advise(e, models, offers, 1).recommendations.size(), 1u);
}

TEST(Advice, ModelsNotOnSaleAreExcludedAndNothingFitsSaysSo) {
  auto e =
      estimate({.params_billion = 1000, .precision = Precision::kFp16, .task = Task::kInference});
  auto a = advise(e, kCatalog, {});
  EXPECT_TRUE(a.recommendations.empty());
  ASSERT_EQ(a.excluded.size(), kCatalog.size());
  EXPECT_NE(excluded(a, "L4-24GB")->why.find("not on sale"), std::string::npos);
  // 2 TB of weights: even 8 H200s are too small.
  auto all = advise(e, kCatalog, fleet());
  EXPECT_TRUE(all.recommendations.empty());
  const auto* x = excluded(all, "H200-SXM5-141GB");
  ASSERT_NE(x, nullptr);
  EXPECT_EQ(x->gpu_count, 8);
  EXPECT_NE(x->why.find("too small"), std::string::npos);
}

TEST(Advice, InferenceMaySpanPcieGpusButPrefersNvlinkAtOneStart) {
  // 30B in fp16 (~67 GB): two 48 GB PCIe cards hold it for inference.
  auto a =
      advise_for({.params_billion = 30, .precision = Precision::kFp16, .task = Task::kInference});
  const auto* l40s = find(a, "L40S-48GB");
  ASSERT_NE(l40s, nullptr);
  EXPECT_EQ(l40s->gpu_count, 2);
  EXPECT_EQ(l40s->booking_interconnect, "any");
  EXPECT_NE(l40s->why.find("PCIe"), std::string::npos);
  // The same shape offered as NVLink pairs and as PCIe, both free now: the NVLink one.
  auto e =
      estimate({.params_billion = 30, .precision = Precision::kFp16, .task = Task::kInference});
  auto b = advise(e, {kCatalog[5]},
                  {{"A100-PCIe-80GB", 1, "pcie", Money(1000, "RUB"), true, kNow, "A"},
                   {"A100-PCIe-80GB", 1, "nvlink-pairs", Money(1000, "RUB"), true, kNow, "B"}});
  ASSERT_EQ(b.recommendations.size(), 1u);
  EXPECT_EQ(b.recommendations[0].site, "A") << "one GPU: any node shape is as good";
}

}  // namespace recommend_test
}  // namespace gpurent::advisor
