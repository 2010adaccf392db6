#include "inventory/image_compat.h"

#include "inventory/compatibility.h"

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

}  // namespace gpurent::inventory
