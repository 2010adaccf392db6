// Which GPU models an image runs on, from the pure compatibility rules.
#pragma once

#include "inventory/compatibility.h"
#include "inventory/records.h"

#include <string>
#include <vector>

namespace gpurent::inventory {

// The names of the models in `models` that `image` runs on (driver meets the CUDA release's
// minimum, the release builds for the model's compute capability, the driver branch
// supports its architecture), in the order of `models`.
std::vector<std::string> compatible_gpu_models(const ImageRecord& image,
                                               const std::vector<GpuModelRecord>& models);

// Whether `image` runs on `model`, with the first rule that fails as the reason (the 422
// incompatible_image a booking answers).
Verdict image_runs_on(const ImageRecord& image, const GpuModelRecord& model);

}  // namespace gpurent::inventory
