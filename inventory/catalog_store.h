// The catalog: GPU models (seeded by migration) and images with driver/CUDA compatibility.
#pragma once

#include "core/clock.h"
#include "core/db_pool.h"
#include "inventory/admin_audit.h"
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
  CatalogStore(PgPool& pool, const Clock& clock) : pool_(pool), clock_(clock) {}

  // Every GPU model, by name.
  std::vector<GpuModelRecord> gpu_models();
  std::optional<GpuModelRecord> gpu_model(const std::string& name);

  // Images by name; deprecated ones only when asked (customers see active images only).
  std::vector<ImageRecord> images(bool include_deprecated);
  std::optional<ImageRecord> image(const std::string& id);

  // Validates the versions (400 naming the field), checks that the driver can run that CUDA
  // release (422 incompatible_image with details.reason) and that the name is free (409),
  // then inserts the image with an `image.created` audit row.
  ImageRecord create_image(const NewImage& image, const AdminActor& actor, const AuditContext& ctx);

  // Marks an image deprecated (kept for the rentals that use it; no longer offered). Nullopt
  // for an unknown image; deprecating twice is 409 invalid_state.
  std::optional<ImageRecord> deprecate_image(const std::string& id, const AdminActor& actor,
                                             const AuditContext& ctx);

 private:
  PgPool& pool_;
  const Clock& clock_;
};

}  // namespace gpurent::inventory
