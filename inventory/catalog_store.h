// The catalog: GPU models (seeded by migration) and images with driver/CUDA compatibility.
#pragma once

#include "core/audit.h"
#include "core/clock.h"
#include "core/db_pool.h"
#include "inventory/records.h"

#include <optional>
#include <string>
#include <vector>

namespace gpurent::inventory {

struct NewImage {
  std::string name;
  std::string os;
  std::string driver_version;  // "550.54.14"
  std::string cuda_version;    // "12.4"
  std::vector<std::string> frameworks;
};

class CatalogStore {
 public:
  explicit CatalogStore(const Clock& clock) : clock_(clock) {}

  // Every GPU model, by name.
  std::vector<GpuModelRecord> gpu_models(Tx& tx);
  std::optional<GpuModelRecord> gpu_model(Tx& tx, const std::string& name);

  // Images by name; deprecated ones only when asked (customers see active images only).
  std::vector<ImageRecord> images(Tx& tx, bool include_deprecated);
  std::optional<ImageRecord> image(Tx& tx, const std::string& id);

  // Validates the versions (invalid_request naming the field), checks that the driver can run
  // that CUDA release (incompatible_image with details.reason) and that the name is free
  // (conflict), then inserts the image with an `image.created` audit row.
  ImageRecord create_image(Tx& tx, const NewImage& image, const Actor& actor);

  // Marks an image deprecated (kept for the rentals that use it; no longer offered). Nullopt
  // for an unknown image; deprecating twice is invalid_state.
  std::optional<ImageRecord> deprecate_image(Tx& tx, const std::string& id, const Actor& actor);

 private:
  const Clock& clock_;
};

}  // namespace gpurent::inventory
