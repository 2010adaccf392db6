// Choosing rentals for a sized workload (docs/advisor.md "Choosing").
#include "advisor/recommend.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <tuple>

namespace gpurent::advisor {
namespace {

std::string gb(double value) {
  char out[32];
  std::snprintf(out, sizeof out, "%.1f GB", value);
  return out;
}

std::string interconnect_words(const Offering& o) {
  if (o.gpu_count == 1) return "";
  if (o.interconnect == "nvswitch") return "; NVSwitch links every GPU pair";
  if (o.interconnect == "nvlink-pairs") {
    return o.gpu_count == 2 ? "; the two GPUs are an NVLink-bridged pair"
                            : "; NVLink bridges pairs only, the rest talk over PCIe";
  }
  return "; the GPUs talk over PCIe (no NVLink)";
}

std::string precision_words(const inventory::GpuModelRecord& m, Precision p) {
  std::string cc = " (compute capability " + m.compute_capability + ")";
  switch (p) {
    case Precision::kBf16:
      return "computes in bf16" + cc;
    case Precision::kFp8:
      return "computes in fp8" + cc;
    case Precision::kFp32:
      return "fp32 runs on every GPU";
    case Precision::kFp16:
      return "fp16 runs on every GPU";
    case Precision::kInt8:
    case Precision::kInt4:
      return std::string(to_string(p)) + " weights are dequantised to 16 bits on any GPU";
  }
  return "";
}

std::string why_fits(const Estimate& e, const inventory::GpuModelRecord& m, const Offering& o,
                     double per_gpu) {
  std::string out = std::to_string(o.gpu_count) + " × " + std::to_string(m.vram_gb) + " GB: ";
  if (o.gpu_count == 1) {
    out += "needs about " + gb(per_gpu) + " of " + std::to_string(m.vram_gb) + " GB";
  } else if (e.training()) {
    out += "about " + gb(per_gpu) + " per GPU with weights, gradients and optimizer state " +
           "sharded (FSDP / ZeRO-3), since one GPU would need " + gb(e.total_gb());
  } else {
    out += "about " + gb(per_gpu) + " per GPU with the weights and KV cache split by tensor " +
           "parallelism, since one GPU would need " + gb(e.total_gb());
  }
  out += "; " + precision_words(m, e.precision) + interconnect_words(o);
  if (e.training() && o.gpu_count > 1) {
    out += ", which sharded training's all-gathers and reduce-scatters need";
  }
  return out + ".";
}

// Among offerings of one shape (several sites or node shapes): the one to book. Training
// over several GPUs only considers NVLink-connected ones; otherwise NVLink goes first.
std::optional<Offering> pick(const std::vector<const Offering*>& same_count, bool need_nvlink) {
  std::optional<Offering> best;
  auto key = [](const Offering& o) {
    return std::make_tuple(!o.earliest_start.has_value(),
                           o.earliest_start.value_or(Timestamp::max()), !nvlink_connected(o),
                           o.price_per_day.amount_minor(), o.site, o.interconnect);
  };
  for (const auto* o : same_count) {
    if (need_nvlink && !nvlink_connected(*o)) continue;
    if (!best || key(*o) < key(*best)) best = *o;
  }
  return best;
}

}  // namespace

int compute_capability(const inventory::GpuModelRecord& model) {
  int major = 0, minor = 0;
  if (std::sscanf(model.compute_capability.c_str(), "%d.%d", &major, &minor) != 2) return 0;
  return major * 10 + minor;
}

std::optional<std::string> precision_unsupported(const inventory::GpuModelRecord& model,
                                                 Precision p) {
  int cc = compute_capability(model);
  if (p == Precision::kBf16 && (cc < 80 || !model.bf16)) {
    return "bf16 needs compute capability 8.0 or newer (Ampere and later); " + model.name +
           " has " + model.compute_capability;
  }
  if (p == Precision::kFp8 && (cc < 89 || !model.fp8)) {
    return "fp8 needs compute capability 8.9 or newer (Ada, Hopper); " + model.name + " has " +
           model.compute_capability;
  }
  return std::nullopt;
}

bool nvlink_connected(const Offering& o) {
  return o.gpu_count == 1 || o.interconnect == "nvswitch" ||
         (o.interconnect == "nvlink-pairs" && o.gpu_count == 2);
}

Advice advise(const Estimate& e, const std::vector<inventory::GpuModelRecord>& models,
              const std::vector<Offering>& offerings, std::size_t limit) {
  Advice advice;
  std::vector<inventory::GpuModelRecord> sorted = models;
  std::sort(sorted.begin(), sorted.end(),
            [](const auto& a, const auto& b) { return a.name < b.name; });
  int largest_capable = 0;
  for (const auto& m : sorted) {
    if (auto why = precision_unsupported(m, e.precision)) {
      advice.excluded.push_back({m.name, std::nullopt, *why});
      continue;
    }
    largest_capable = std::max(largest_capable, m.vram_gb);
    std::map<int, std::vector<const Offering*>> by_count;
    for (const auto& o : offerings) {
      if (o.gpu_model == m.name && o.gpu_count > 0) by_count[o.gpu_count].push_back(&o);
    }
    if (by_count.empty()) {
      advice.excluded.push_back({m.name, std::nullopt, m.name + " is not on sale"});
      continue;
    }
    std::optional<Exclusion> too_small;
    std::optional<Exclusion> no_nvlink;
    bool recommended = false;
    for (const auto& [count, same] : by_count) {
      double per_gpu = e.per_gpu_gb(count);
      if (per_gpu > m.vram_gb) {
        too_small = Exclusion{m.name, count,
                              std::to_string(count) + " × " + std::to_string(m.vram_gb) +
                                  " GB is too small: needs about " + gb(per_gpu) +
                                  (count > 1 ? " per GPU" : "") + ", has " +
                                  std::to_string(m.vram_gb) + " GB"};
        continue;
      }
      bool need_nvlink = e.training() && count > 1;
      auto chosen = pick(same, need_nvlink);
      if (!chosen) {
        no_nvlink = Exclusion{m.name, count,
                              std::to_string(count) + " × " + m.name +
                                  " would fit only without NVLink; training sharded over " +
                                  "several GPUs exchanges its weights and gradients every " +
                                  "step, which PCIe slows down too much to recommend"};
        continue;
      }
      advice.recommendations.push_back(
          {.gpu_model = m.name,
           .gpu_count = count,
           .interconnect = chosen->interconnect,
           .booking_interconnect = count > 1 && nvlink_connected(*chosen) ? "nvlink" : "any",
           .price_per_day = chosen->price_per_day,
           .available_now = chosen->available_now,
           .earliest_start = chosen->earliest_start,
           .earliest_date = chosen->earliest_date,
           .site = chosen->site,
           .vram_per_gpu_gb = m.vram_gb,
           .required_per_gpu_gb = per_gpu,
           .sharding_required = count > 1,
           .why = why_fits(e, m, *chosen, per_gpu)});
      recommended = true;
      break;
    }
    // The count below the one recommended (or the largest tried) says why fewer GPUs do not
    // do: "1 × 80 GB is too small".
    if (too_small) advice.excluded.push_back(*too_small);
    if (!recommended && no_nvlink) advice.excluded.push_back(*no_nvlink);
  }
  advice.sharding_required = e.per_gpu_gb(1) > largest_capable;
  std::stable_sort(advice.recommendations.begin(), advice.recommendations.end(),
                   [](const Recommendation& a, const Recommendation& b) {
                     auto key = [](const Recommendation& r) {
                       return std::make_tuple(
                           r.price_per_day.amount_minor(), !r.earliest_start.has_value(),
                           r.earliest_start.value_or(Timestamp::max()), r.gpu_count, r.gpu_model);
                     };
                     return key(a) < key(b);
                   });
  if (advice.recommendations.size() > limit) advice.recommendations.resize(limit);
  return advice;
}

}  // namespace gpurent::advisor
