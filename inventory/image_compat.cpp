// Image compatibility over catalog records, from the pure rules in compatibility.h.
#include "inventory/image_compat.h"

namespace gpurent::inventory {

std::vector<std::string> compatible_gpu_models(const ImageRecord& image,
                                               const std::vector<GpuModelRecord>& models) {
  std::vector<std::string> out;
  auto driver = parse_version(image.driver_version);
  auto cuda = parse_version(image.cuda_version);
  if (!driver || !cuda) return out;
  for (const auto& m : models) {
    auto arch = parse_architecture(m.architecture);
    auto cc = parse_compute_capability(m.compute_capability);
    if (!arch || !cc) continue;
    if (image_runs_on(*driver, *cuda, GpuFacts{m.name, *arch, *cc})) out.push_back(m.name);
  }
  return out;
}

Verdict image_runs_on(const ImageRecord& image, const GpuModelRecord& model) {
  auto driver = parse_version(image.driver_version);
  auto cuda = parse_version(image.cuda_version);
  auto arch = parse_architecture(model.architecture);
  auto cc = parse_compute_capability(model.compute_capability);
  if (!driver || !cuda || !arch || !cc) {
    return {false, "The image's or the GPU model's versions are not ones the rules know."};
  }
  return image_runs_on(*driver, *cuda, GpuFacts{model.name, *arch, *cc});
}

}  // namespace gpurent::inventory
