// Model choice: filter by the request's constraints, order by price.
#include "scheduler/model_choice.h"

#include <algorithm>
#include <cctype>
#include <tuple>

namespace gpurent::scheduler {
namespace {

bool same_text(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

}  // namespace

bool meets(const inventory::GpuModelRecord& model, const ModelConstraints& c) {
  if (c.min_vram_gb && model.vram_gb < *c.min_vram_gb) return false;
  if (c.bf16 && !model.bf16) return false;
  if (c.fp8 && !model.fp8) return false;
  if (c.architecture && !same_text(model.architecture, *c.architecture)) return false;
  return true;
}

std::vector<PricedModel> models_meeting(const ModelConstraints& constraints,
                                        std::vector<PricedModel> priced) {
  std::erase_if(priced, [&](const PricedModel& p) { return !meets(p.model, constraints); });
  std::sort(priced.begin(), priced.end(), [](const PricedModel& a, const PricedModel& b) {
    return std::tie(a.price_per_day_minor, a.model.vram_gb, a.model.name) <
           std::tie(b.price_per_day_minor, b.model.vram_gb, b.model.name);
  });
  return priced;
}

}  // namespace gpurent::scheduler
