// How much GPU memory a workload needs: named models with their public shapes, and the
// documented formulas for inference, LoRA/QLoRA, full fine-tuning and pre-training
// (docs/advisor.md). Pure rules over plain values, table-tested in tests/sizing_test.cpp.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpurent::advisor {

enum class Precision { kFp32, kBf16, kFp16, kFp8, kInt8, kInt4 };
// qlora is lora with the frozen weights in 4 bits (Dettmers et al. 2023).
enum class Task { kInference, kLora, kQlora, kFullFinetune, kPretrain };

std::optional<Precision> parse_precision(std::string_view text);
std::optional<Task> parse_task(std::string_view text);
std::string_view to_string(Precision p);
std::string_view to_string(Task t);

// Bytes one parameter takes stored in that precision (int4: 0.5; the quantisers' per-group
// scales, about 3 % more, are left out).
double bytes_per_parameter(Precision p);

enum class ModelKind { kLanguage, kDiffusion, kSpeech };

// A well-known model: its parameter count and, for language models, the shapes the KV cache
// and activations follow. The numbers are the models' published ones (sizing.cpp cites each).
struct ModelPreset {
  std::string_view name;  // "llama-2-70b"
  std::string_view title;
  ModelKind kind = ModelKind::kLanguage;
  double params_billion = 0;
  int layers = 0;       // transformer blocks
  int hidden_size = 0;  // model width
  int kv_heads = 0;     // key/value heads (fewer than the query heads with GQA)
  int head_dim = 0;     // width of one head
  int max_context = 0;  // tokens; 0 for models that read no token context
  // Models that are not language models (no KV cache): working memory per batch item at 16
  // bits, at inference and in training with gradient checkpointing.
  double inference_activation_gb = 0;
  double training_activation_gb = 0;
};

const std::vector<ModelPreset>& presets();
const ModelPreset* find_preset(std::string_view name);

struct SizingRequest {
  std::optional<std::string> preset;
  std::optional<double> params_billion;
  Precision precision = Precision::kBf16;
  Task task = Task::kInference;
  std::optional<int> context_tokens;
  std::optional<int> batch_size;
};

// GB here are 10^9 bytes: a 70B model at 2 bytes a parameter is 140 GB.
struct Breakdown {
  double weights_gb = 0;      // the weights as stored (LoRA: frozen base + adapter)
  double kv_cache_gb = 0;     // inference of language models
  double gradients_gb = 0;    // training: one per trained parameter
  double optimizer_gb = 0;    // Adam's two moments, and the fp32 master copy in mixed precision
  double activations_gb = 0;  // what the forward pass keeps (and the backward pass reads)
  double overhead_gb = 0;     // CUDA context, library workspaces, allocator fragmentation

  double total() const {
    return weights_gb + kv_cache_gb + gradients_gb + optimizer_gb + activations_gb + overhead_gb;
  }
};

struct Estimate {
  std::string preset;  // empty when sized from a parameter count alone
  ModelKind kind = ModelKind::kLanguage;
  double params_billion = 0;
  // The shapes used: the preset's, or estimated from the parameter count (shape_estimated).
  int layers = 0;
  int hidden_size = 0;
  int kv_heads = 0;
  int head_dim = 0;
  bool shape_estimated = false;
  int context_tokens = 0;  // 0 for models that read no token context
  int batch_size = 1;
  Precision precision = Precision::kBf16;
  Task task = Task::kInference;
  double adapter_params_billion = 0;  // LoRA/QLoRA
  Breakdown breakdown;                // the whole job on one GPU

  bool training() const { return task != Task::kInference; }
  double total_gb() const { return breakdown.total(); }
  // What each of `gpus` GPUs must hold when the job is split over them: inference splits
  // weights, KV cache and activations (tensor parallelism); training shards weights,
  // gradients and optimizer state (FSDP / ZeRO-3) while each GPU keeps the activations of
  // its own micro-batch. Each GPU pays its own overhead, plus collective buffers when
  // gpus > 1. per_gpu_gb(1) == total_gb().
  double per_gpu_gb(int gpus) const;
};

// Resolves the model and applies the formulas. Throws Error(invalid_request) naming the
// field for a request that cannot be sized: both or neither of preset and params_billion,
// an unknown preset, a parameter count outside 0.01..2000 billion, a context longer than the
// model reads or given for a model that reads none, full fine-tuning or pre-training in
// int8/int4, qlora in anything but int4.
Estimate estimate(const SizingRequest& request);

// The memory constants of docs/advisor.md, for tests and the docs to agree on.
inline constexpr double kFixedOverheadGb = 1.0;       // per GPU: CUDA context and workspaces
inline constexpr double kCollectiveOverheadGb = 0.5;  // per GPU when the job spans several
inline constexpr double kFragmentation = 0.05;        // of what the GPU holds besides
inline constexpr double kAdapterFraction = 0.01;      // LoRA rank 16 on every linear layer
inline constexpr int kDefaultContext = 4096;

}  // namespace gpurent::advisor
