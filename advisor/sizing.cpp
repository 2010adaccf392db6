// The sizing formulas and the named models (docs/advisor.md explains both).
#include "advisor/sizing.h"

#include "core/error.h"

#include <algorithm>
#include <cmath>

namespace gpurent::advisor {
namespace {

constexpr double kGb = 1e9;

// Sources, per model: the parameter count from the model card or paper, the shapes from the
// model's published config.json (num_hidden_layers, hidden_size, num_key_value_heads,
// hidden_size / num_attention_heads, max_position_embeddings).
//  - Llama 2 (7B 6.74B, 13B 13.02B, 70B 68.98B): Touvron et al. 2023, "Llama 2: Open
//    Foundation and Fine-Tuned Chat Models", Table 1 (4k context; GQA on 70B only);
//    meta-llama/Llama-2-{7b,13b,70b}-hf config.json.
//  - Llama 3 (8B 8.03B, 70B 70.55B): meta-llama/Meta-Llama-3-{8B,70B} model card and
//    config.json (8k context, GQA with 8 KV heads on both).
//  - Mistral 7B v0.1 (7.24B): Jiang et al. 2023 "Mistral 7B", Table 1; config.json
//    (32 layers, 4096 wide, 8 KV heads, max_position_embeddings 32768).
//  - Mixtral 8x7B (46.7B in all, 12.9B active per token; every expert stays in memory):
//    Jiang et al. 2024 "Mixtral of Experts", Table 1; config.json.
//  - Qwen2 72B (72.7B): Qwen2 Technical Report (Yang et al. 2024), Table 1 (80 layers, 8192
//    wide, 64 query / 8 KV heads); config.json; 32k context without YaRN.
//  - SDXL base 1.0 (3.5B: a 2.6B UNet, text encoders of 0.8B, a VAE of 84M): Podell et al.
//    2023 "SDXL", section 2.1, and Stability AI's release note. 1024x1024 generation keeps
//    about 2.5 GB of activations per image at 16 bits with memory-efficient attention (what
//    diffusers reports as 8-12 GB for the whole pipeline in fp16).
//  - Whisper large (1.55B; 32+32 layers, 1280 wide): Radford et al. 2022 "Robust Speech
//    Recognition via Large-Scale Weak Supervision", Table 1; openai/whisper README gives
//    "~10 GB" of VRAM for large (its fp32 default), which 2 GB per item of 30 s audio at 16
//    bits reproduces.
const std::vector<ModelPreset> kPresets = {
    {"llama-2-7b", "Llama 2 7B", ModelKind::kLanguage, 6.74, 32, 4096, 32, 128, 4096},
    {"llama-2-13b", "Llama 2 13B", ModelKind::kLanguage, 13.02, 40, 5120, 40, 128, 4096},
    {"llama-2-70b", "Llama 2 70B", ModelKind::kLanguage, 68.98, 80, 8192, 8, 128, 4096},
    {"llama-3-8b", "Llama 3 8B", ModelKind::kLanguage, 8.03, 32, 4096, 8, 128, 8192},
    {"llama-3-70b", "Llama 3 70B", ModelKind::kLanguage, 70.55, 80, 8192, 8, 128, 8192},
    {"mistral-7b", "Mistral 7B", ModelKind::kLanguage, 7.24, 32, 4096, 8, 128, 32768},
    {"mixtral-8x7b", "Mixtral 8x7B", ModelKind::kLanguage, 46.7, 32, 4096, 8, 128, 32768},
    {"qwen2-72b", "Qwen2 72B", ModelKind::kLanguage, 72.71, 80, 8192, 8, 128, 32768},
    {"sdxl", "Stable Diffusion XL 1.0", ModelKind::kDiffusion, 3.5, 0, 0, 0, 0, 0, 2.5, 6.0},
    {"whisper-large", "Whisper large", ModelKind::kSpeech, 1.55, 0, 0, 0, 0, 0, 2.0, 4.0},
};

std::string preset_names() {
  std::string out;
  for (const auto& p : kPresets) {
    if (!out.empty()) out += ", ";
    out += p.name;
  }
  return out;
}

// Bytes per value of what the GPU computes with: weight-only quantisation (int8/int4)
// still computes and caches in 16 bits; fp8 keeps its KV cache in fp8.
double compute_bytes(Precision p) {
  return p == Precision::kFp32 ? 4.0 : 2.0;
}
double kv_bytes(Precision p) {
  if (p == Precision::kFp32) return 4.0;
  return p == Precision::kFp8 ? 1.0 : 2.0;
}

// Shapes of an unnamed language model from its parameter count: a dense transformer has
// about 12·L·h² parameters, and public models keep h/L near 128 (Llama 2 7B: 4096/32,
// 13B: 5120/40), so h ≈ ∛(128·P/12), rounded down to a multiple of 128 (the formula leaves
// out the embeddings, a few percent of P). Attention is assumed
// grouped with 8 KV heads of 128 (Llama 3, Mistral, Qwen2, Llama 2 70B); an older
// multi-head model (Llama 2 7B/13B) caches up to 4× more: name its preset.
void estimate_shape(Estimate& e) {
  double h = std::cbrt(128.0 * e.params_billion * kGb / 12.0);
  e.hidden_size = std::max(128, static_cast<int>(std::floor(h / 128.0)) * 128);
  e.layers = e.hidden_size / 128;
  e.head_dim = 128;
  e.kv_heads = std::min(8, e.hidden_size / 128);
  e.shape_estimated = true;
}

// Activations in bytes at 16 bits for a transformer of `layers` blocks: Korthikanti et al.
// 2022 ("Reducing Activation Recomputation in Large Transformer Models", eq. 1) count
// s·b·h·(34 + 5·a·s/h) bytes per block; FlashAttention never stores the a·s² scores, which
// leaves 34·s·b·h. With gradient checkpointing a block keeps only its 16-bit input (2·s·b·h)
// and one block at a time is recomputed in full.
double block_activation_bytes(const Estimate& e) {
  return 34.0 * e.context_tokens * e.batch_size * e.hidden_size;
}
double checkpointed_activation_bytes(const Estimate& e) {
  return 2.0 * e.context_tokens * e.batch_size * e.hidden_size * e.layers +
         block_activation_bytes(e);
}

void check_precision_for_task(const SizingRequest& r) {
  bool full = r.task == Task::kFullFinetune || r.task == Task::kPretrain;
  if (full && (r.precision == Precision::kInt8 || r.precision == Precision::kInt4)) {
    throw Error::invalid_field("precision",
                               "full fine-tuning and pre-training update every weight, which "
                               "needs fp32, bf16, fp16 or fp8; quantised (int8/int4) weights "
                               "are trained through LoRA adapters (task lora or qlora)");
  }
  if (r.task == Task::kQlora && r.precision != Precision::kInt4) {
    throw Error::invalid_field("precision",
                               "qlora keeps the frozen weights in 4 bits: use int4 (or task lora)");
  }
}

}  // namespace

std::optional<Precision> parse_precision(std::string_view text) {
  if (text == "fp32") return Precision::kFp32;
  if (text == "bf16") return Precision::kBf16;
  if (text == "fp16") return Precision::kFp16;
  if (text == "fp8") return Precision::kFp8;
  if (text == "int8") return Precision::kInt8;
  if (text == "int4") return Precision::kInt4;
  return std::nullopt;
}

std::optional<Task> parse_task(std::string_view text) {
  if (text == "inference") return Task::kInference;
  if (text == "lora") return Task::kLora;
  if (text == "qlora") return Task::kQlora;
  if (text == "full_finetune") return Task::kFullFinetune;
  if (text == "pretrain") return Task::kPretrain;
  return std::nullopt;
}

std::string_view to_string(Precision p) {
  switch (p) {
    case Precision::kFp32:
      return "fp32";
    case Precision::kBf16:
      return "bf16";
    case Precision::kFp16:
      return "fp16";
    case Precision::kFp8:
      return "fp8";
    case Precision::kInt8:
      return "int8";
    case Precision::kInt4:
      return "int4";
  }
  return "?";
}

std::string_view to_string(Task t) {
  switch (t) {
    case Task::kInference:
      return "inference";
    case Task::kLora:
      return "lora";
    case Task::kQlora:
      return "qlora";
    case Task::kFullFinetune:
      return "full_finetune";
    case Task::kPretrain:
      return "pretrain";
  }
  return "?";
}

double bytes_per_parameter(Precision p) {
  switch (p) {
    case Precision::kFp32:
      return 4.0;
    case Precision::kBf16:
    case Precision::kFp16:
      return 2.0;
    case Precision::kFp8:
    case Precision::kInt8:
      return 1.0;
    case Precision::kInt4:
      return 0.5;
  }
  return 4.0;
}

const std::vector<ModelPreset>& presets() {
  return kPresets;
}

const ModelPreset* find_preset(std::string_view name) {
  for (const auto& p : kPresets) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

double Estimate::per_gpu_gb(int gpus) const {
  gpus = std::max(gpus, 1);
  const auto& b = breakdown;
  double share = training()
                     ? (b.weights_gb + b.gradients_gb + b.optimizer_gb) / gpus + b.activations_gb
                     : (b.weights_gb + b.kv_cache_gb + b.activations_gb) / gpus;
  double overhead = kFixedOverheadGb + (gpus > 1 ? kCollectiveOverheadGb : 0.0);
  return share * (1.0 + kFragmentation) + overhead;
}

Estimate estimate(const SizingRequest& r) {
  if (r.preset && r.params_billion) {
    throw Error::invalid_field("preset",
                               "cannot be given with model_params_billion: name one or the other");
  }
  check_precision_for_task(r);
  Estimate e;
  e.precision = r.precision;
  e.task = r.task;
  const ModelPreset* preset = nullptr;
  if (r.preset) {
    preset = find_preset(*r.preset);
    if (!preset) {
      throw Error::invalid_field("preset", "is not a model we know; one of " + preset_names());
    }
    e.preset = std::string(preset->name);
    e.kind = preset->kind;
    e.params_billion = preset->params_billion;
    e.layers = preset->layers;
    e.hidden_size = preset->hidden_size;
    e.kv_heads = preset->kv_heads;
    e.head_dim = preset->head_dim;
  } else if (r.params_billion) {
    if (!(*r.params_billion >= 0.01 && *r.params_billion <= 2000)) {
      throw Error::invalid_field("model_params_billion", "must be 0.01 to 2000");
    }
    e.params_billion = *r.params_billion;
    estimate_shape(e);
  } else {
    throw Error::invalid_field("model_params_billion", "is required (or preset)");
  }

  const bool language = e.kind == ModelKind::kLanguage;
  if (r.context_tokens) {
    if (!language) {
      throw Error::invalid_field(
          "context_tokens", "does not apply to " + e.preset + ", which reads no token context");
    }
    if (preset && *r.context_tokens > preset->max_context) {
      throw Error::invalid_field(
          "context_tokens",
          e.preset + " reads at most " + std::to_string(preset->max_context) + " tokens");
    }
  }
  if (language) {
    int model_max = preset ? preset->max_context : kDefaultContext;
    e.context_tokens = r.context_tokens.value_or(std::min(kDefaultContext, model_max));
  }
  e.batch_size = r.batch_size.value_or(1);

  const double params = e.params_billion * kGb;
  const double act_scale = compute_bytes(e.precision) / 2.0;  // the formulas are at 16 bits
  auto& b = e.breakdown;
  switch (e.task) {
    case Task::kInference: {
      b.weights_gb = params * bytes_per_parameter(e.precision) / kGb;
      if (language) {
        // Keys and values for every token of every sequence in every layer.
        b.kv_cache_gb = 2.0 * e.layers * e.kv_heads * e.head_dim * kv_bytes(e.precision) *
                        e.context_tokens * e.batch_size / kGb;
        // A forward pass holds one block's activations at a time.
        b.activations_gb = block_activation_bytes(e) * act_scale / kGb;
      } else {
        b.activations_gb = preset->inference_activation_gb * e.batch_size * act_scale;
      }
      break;
    }
    case Task::kLora:
    case Task::kQlora: {
      // The base stays frozen in its precision; only the adapter trains, in fp32 with Adam:
      // 4 bytes of weights, 4 of gradients and 8 of moments per adapter parameter.
      double adapter = params * kAdapterFraction;
      e.adapter_params_billion = adapter / kGb;
      b.weights_gb = (params * bytes_per_parameter(e.precision) + adapter * 4.0) / kGb;
      b.gradients_gb = adapter * 4.0 / kGb;
      b.optimizer_gb = adapter * 8.0 / kGb;
      b.activations_gb = language ? checkpointed_activation_bytes(e) * act_scale / kGb
                                  : preset->training_activation_gb * e.batch_size * act_scale;
      break;
    }
    case Task::kFullFinetune:
    case Task::kPretrain: {
      // Adam in mixed precision (Rajbhandari et al. 2019, ZeRO, section 3.1): 16-bit weights
      // and gradients (2 + 2 bytes) and an fp32 master copy with two fp32 moments (12
      // bytes): 16 bytes a parameter. In fp32 the same 16: 4 + 4 + 8. fp8 training
      // (Transformer Engine) keeps the same 16-bit and fp32 copies, computing in fp8.
      bool fp32 = e.precision == Precision::kFp32;
      b.weights_gb = params * (fp32 ? 4.0 : 2.0) / kGb;
      b.gradients_gb = params * (fp32 ? 4.0 : 2.0) / kGb;
      b.optimizer_gb = params * (fp32 ? 8.0 : 12.0) / kGb;
      if (e.task == Task::kFullFinetune) {
        // Fine-tuning recipes checkpoint activations.
        b.activations_gb = language ? checkpointed_activation_bytes(e) * act_scale / kGb
                                    : preset->training_activation_gb * e.batch_size * act_scale;
      } else {
        // Pre-training keeps every block's activations to run at full speed.
        b.activations_gb = language
                               ? block_activation_bytes(e) * e.layers * act_scale / kGb
                               : preset->training_activation_gb * 3.0 * e.batch_size * act_scale;
      }
      break;
    }
  }
  double rest = b.weights_gb + b.kv_cache_gb + b.gradients_gb + b.optimizer_gb + b.activations_gb;
  b.overhead_gb = kFixedOverheadGb + kFragmentation * rest;
  return e;
}

}  // namespace gpurent::advisor
