// Tests the sizing formulas on public facts: bytes per parameter, KV cache sizes that follow
// from the models' published shapes, Adam's 16 bytes a parameter, SDXL's 8-12 GB.
#include "advisor/sizing.h"

#include "core/error.h"

#include <gtest/gtest.h>

#include <string>

namespace gpurent::advisor {
namespace sizing_test {

SizingRequest preset(const std::string& name, Precision p, Task t) {
  return {.preset = name, .precision = p, .task = t};
}
SizingRequest params(double billion, Precision p, Task t) {
  return {.params_billion = billion, .precision = p, .task = t};
}

TEST(Sizing, SeventyBillionInFp16NeedsAbout140GbForWeightsAlone) {
  auto e = estimate(params(70, Precision::kFp16, Task::kInference));
  EXPECT_DOUBLE_EQ(e.breakdown.weights_gb, 140.0);
  EXPECT_GT(e.total_gb(), 141.0) << "more than one H200 holds, let alone one 80 GB GPU";
  auto llama = estimate(preset("llama-2-70b", Precision::kFp16, Task::kInference));
  EXPECT_NEAR(llama.breakdown.weights_gb, 137.96, 0.01);
  EXPECT_GT(llama.total_gb(), 141.0);
}

struct BytesCase {
  Precision precision;
  double weights_gb;  // of a 10B model
};

class WeightsByPrecision : public ::testing::TestWithParam<BytesCase> {};

TEST_P(WeightsByPrecision, AreParametersTimesBytes) {
  auto e = estimate(params(10, GetParam().precision, Task::kInference));
  EXPECT_DOUBLE_EQ(e.breakdown.weights_gb, GetParam().weights_gb)
      << to_string(GetParam().precision);
}

INSTANTIATE_TEST_SUITE_P(
    Table, WeightsByPrecision,
    ::testing::Values(BytesCase{Precision::kFp32, 40}, BytesCase{Precision::kBf16, 20},
                      BytesCase{Precision::kFp16, 20}, BytesCase{Precision::kFp8, 10},
                      BytesCase{Precision::kInt8, 10}, BytesCase{Precision::kInt4, 5}));

struct KvCase {
  const char* preset;
  Precision precision;
  int context;
  int batch;
  double kv_gb;  // 2 · layers · kv_heads · head_dim · bytes · tokens · batch
};

class KvCache : public ::testing::TestWithParam<KvCase> {};

TEST_P(KvCache, FollowsThePublishedShapes) {
  const auto& c = GetParam();
  SizingRequest r = preset(c.preset, c.precision, Task::kInference);
  r.context_tokens = c.context;
  r.batch_size = c.batch;
  EXPECT_NEAR(estimate(r).breakdown.kv_cache_gb, c.kv_gb, 1e-6) << c.preset;
}

INSTANTIATE_TEST_SUITE_P(
    Table, KvCache,
    ::testing::Values(
        // Multi-head attention: 32 layers × 32 heads × 128 × 2 (K and V) × 2 bytes = 512 KiB
        // a token.
        KvCase{"llama-2-7b", Precision::kFp16, 4096, 1, 2.0 * 32 * 32 * 128 * 2 * 4096 / 1e9},
        // Grouped-query attention, 8 KV heads: an eighth of the query heads' cache.
        KvCase{"llama-2-70b", Precision::kFp16, 4096, 1, 2.0 * 80 * 8 * 128 * 2 * 4096 / 1e9},
        KvCase{"llama-3-8b", Precision::kBf16, 8192, 4, 2.0 * 32 * 8 * 128 * 2 * 8192 * 4 / 1e9},
        // fp8 caches keys and values in one byte; int4 weights still cache in 16 bits.
        KvCase{"mistral-7b", Precision::kFp8, 32768, 1, 2.0 * 32 * 8 * 128 * 1 * 32768 / 1e9},
        KvCase{"qwen2-72b", Precision::kInt4, 4096, 2, 2.0 * 80 * 8 * 128 * 2 * 4096 * 2 / 1e9},
        KvCase{"llama-2-13b", Precision::kFp32, 2048, 1, 2.0 * 40 * 40 * 128 * 4 * 2048 / 1e9}));

TEST(Sizing, FullFineTuneWithAdamInMixedPrecisionIsSixteenBytesAParameter) {
  auto e = estimate(preset("llama-2-7b", Precision::kBf16, Task::kFullFinetune));
  const auto& b = e.breakdown;
  EXPECT_NEAR(b.weights_gb, 6.74 * 2, 1e-9);     // bf16 weights
  EXPECT_NEAR(b.gradients_gb, 6.74 * 2, 1e-9);   // bf16 gradients
  EXPECT_NEAR(b.optimizer_gb, 6.74 * 12, 1e-9);  // fp32 master copy + two Adam moments
  EXPECT_NEAR(b.weights_gb + b.gradients_gb + b.optimizer_gb, 6.74 * 16, 1e-9);
  EXPECT_GT(e.total_gb(), 80.0) << "does not fit one 80 GB GPU";
  // Sharded over two GPUs, each holds half the states plus its own activations.
  EXPECT_LT(e.per_gpu_gb(2), 80.0);
  // fp32 training is 16 bytes as well: 4 + 4 + 8.
  auto fp32 = estimate(params(1, Precision::kFp32, Task::kFullFinetune));
  EXPECT_NEAR(fp32.breakdown.weights_gb + fp32.breakdown.gradients_gb + fp32.breakdown.optimizer_gb,
              16.0, 1e-9);
}

TEST(Sizing, PretrainingKeepsMoreActivationsThanFineTuning) {
  auto tune = estimate(preset("llama-3-8b", Precision::kBf16, Task::kFullFinetune));
  auto pre = estimate(preset("llama-3-8b", Precision::kBf16, Task::kPretrain));
  EXPECT_DOUBLE_EQ(tune.breakdown.optimizer_gb, pre.breakdown.optimizer_gb);
  // 34·s·b·h per block, every block kept: 32 × 34 × 4096 × 4096 bytes.
  EXPECT_NEAR(pre.breakdown.activations_gb, 32.0 * 34 * 4096 * 4096 / 1e9, 1e-9);
  // Checkpointed: each block's input (2·s·b·h), and one block recomputed.
  EXPECT_NEAR(tune.breakdown.activations_gb, (32.0 * 2 + 34) * 4096 * 4096 / 1e9, 1e-9);
}

TEST(Sizing, LoraTrainsASmallAdapterOnFrozenWeightsAndQloraHoldsThemInFourBits) {
  auto lora = estimate(preset("llama-2-70b", Precision::kBf16, Task::kLora));
  auto qlora = estimate(preset("llama-2-70b", Precision::kInt4, Task::kQlora));
  double adapter = 68.98 * kAdapterFraction;
  EXPECT_NEAR(lora.adapter_params_billion, adapter, 1e-9);
  EXPECT_NEAR(lora.breakdown.weights_gb, 68.98 * 2 + adapter * 4, 1e-9);
  EXPECT_NEAR(lora.breakdown.gradients_gb, adapter * 4, 1e-9);
  EXPECT_NEAR(lora.breakdown.optimizer_gb, adapter * 8, 1e-9);
  EXPECT_NEAR(qlora.breakdown.weights_gb, 68.98 * 0.5 + adapter * 4, 1e-9);
  // QLoRA's point: a 70B model fine-tuned on one 80 GB GPU (Dettmers et al. 2023 used 48 GB
  // for 65B).
  EXPECT_LT(qlora.total_gb(), 80.0);
  EXPECT_GT(lora.total_gb(), 141.0);
}

TEST(Sizing, SdxlInferenceNeedsEightToTwelveGb) {
  auto e = estimate(preset("sdxl", Precision::kFp16, Task::kInference));
  EXPECT_DOUBLE_EQ(e.breakdown.weights_gb, 7.0);
  EXPECT_DOUBLE_EQ(e.breakdown.kv_cache_gb, 0.0);
  EXPECT_GE(e.total_gb(), 8.0);
  EXPECT_LE(e.total_gb(), 12.0);
}

TEST(Sizing, WhisperLargeInFp32NeedsAboutTenGb) {
  auto e = estimate(preset("whisper-large", Precision::kFp32, Task::kInference));
  EXPECT_NEAR(e.total_gb(), 10.0, 2.0);
}

TEST(Sizing, AnUnnamedModelsShapeFollowsItsParameterCount) {
  // 7B: 4096 wide, 32 layers, as Llama 2 7B and Mistral 7B are.
  auto e = estimate(params(7, Precision::kBf16, Task::kInference));
  EXPECT_TRUE(e.shape_estimated);
  EXPECT_EQ(e.hidden_size, 4096);
  EXPECT_EQ(e.layers, 32);
  EXPECT_EQ(e.kv_heads, 8);
  EXPECT_EQ(e.context_tokens, kDefaultContext);
  auto named = estimate(preset("mistral-7b", Precision::kBf16, Task::kInference));
  EXPECT_FALSE(named.shape_estimated);
  EXPECT_EQ(named.context_tokens, 4096) << "the default context, not the model's 32k";
}

TEST(Sizing, SplittingOverGpusSharesTheStatesButNotTheFixedCosts) {
  auto e = estimate(params(70, Precision::kFp16, Task::kInference));
  EXPECT_DOUBLE_EQ(e.per_gpu_gb(1), e.total_gb());
  EXPECT_LT(e.per_gpu_gb(2), 80.0);
  EXPECT_GT(e.per_gpu_gb(2), e.total_gb() / 2);
  EXPECT_GT(e.per_gpu_gb(8), kFixedOverheadGb + kCollectiveOverheadGb);
}

struct Refused {
  const char* what;
  SizingRequest request;
  const char* field;
};

class RefusedRequests : public ::testing::TestWithParam<Refused> {};

TEST_P(RefusedRequests, NameTheField) {
  const auto& c = GetParam();
  try {
    estimate(c.request);
    FAIL() << c.what << ": sized";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidRequest) << c.what;
    EXPECT_EQ(e.details().value("field", ""), c.field) << c.what << ": " << e.what();
    EXPECT_TRUE(e.details().contains("reason")) << c.what;
  }
}

SizingRequest with_context(SizingRequest r, int tokens) {
  r.context_tokens = tokens;
  return r;
}

INSTANTIATE_TEST_SUITE_P(
    Table, RefusedRequests,
    ::testing::Values(
        Refused{"neither preset nor size", {.precision = Precision::kFp16}, "model_params_billion"},
        Refused{"both", {.preset = "sdxl", .params_billion = 3}, "preset"},
        Refused{"unknown preset", preset("gpt-5", Precision::kFp16, Task::kInference), "preset"},
        Refused{"zero", params(0, Precision::kFp16, Task::kInference), "model_params_billion"},
        Refused{"huge", params(2001, Precision::kFp16, Task::kInference), "model_params_billion"},
        Refused{"negative", params(-7, Precision::kFp16, Task::kInference), "model_params_billion"},
        Refused{"context longer than Llama 2 reads",
                with_context(preset("llama-2-7b", Precision::kFp16, Task::kInference), 4097),
                "context_tokens"},
        Refused{"context for an image model",
                with_context(preset("sdxl", Precision::kFp16, Task::kInference), 77),
                "context_tokens"},
        Refused{"full fine-tune of int4 weights", params(7, Precision::kInt4, Task::kFullFinetune),
                "precision"},
        Refused{"pre-training in int8", params(7, Precision::kInt8, Task::kPretrain), "precision"},
        Refused{"qlora in bf16", params(7, Precision::kBf16, Task::kQlora), "precision"}));

TEST(Sizing, NamesParseBothWays) {
  for (auto p : {Precision::kFp32, Precision::kBf16, Precision::kFp16, Precision::kFp8,
                 Precision::kInt8, Precision::kInt4}) {
    EXPECT_EQ(parse_precision(to_string(p)), p);
  }
  for (auto t :
       {Task::kInference, Task::kLora, Task::kQlora, Task::kFullFinetune, Task::kPretrain}) {
    EXPECT_EQ(parse_task(to_string(t)), t);
  }
  EXPECT_FALSE(parse_precision("FP16"));
  EXPECT_FALSE(parse_task("finetune"));
  EXPECT_GE(presets().size(), 10u);
  for (const auto& p : presets()) EXPECT_EQ(find_preset(p.name), &p);
}

}  // namespace sizing_test
}  // namespace gpurent::advisor
