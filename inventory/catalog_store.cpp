// CatalogStore: named, parameterised statements over gpu_models and images.
#include "inventory/catalog_store.h"

#include "core/error.h"
#include "core/id.h"
#include "core/sql.h"
#include "inventory/compatibility.h"

namespace gpurent::inventory {
namespace {

#define MODEL_COLUMNS                                                                    \
  "name, vendor, architecture, compute_capability, vram_gb, memory_type,"                \
  " memory_bandwidth_gbps, nvlink_connection, nvlink_generation, nvlink_bandwidth_gbps," \
  " nvswitch_link_kind, bridge_link_kind, bf16, fp8, tdp_w"
#define IMAGE_COLUMNS                                                                  \
  "id, name, os, driver_version, cuda_version, frameworks::text, status, " SQL_MICROS( \
      "created_at") ", " SQL_MICROS("deprecated_at")

constexpr Statement kModels = {"catalog_models",
                               "SELECT " MODEL_COLUMNS " FROM gpu_models ORDER BY name"};
constexpr Statement kModel = {"catalog_model",
                              "SELECT " MODEL_COLUMNS " FROM gpu_models WHERE name = $1"};
constexpr Statement kImagesActive = {
    "catalog_images_active",
    "SELECT " IMAGE_COLUMNS " FROM images WHERE status = 'active' ORDER BY lower(name), id"};
constexpr Statement kImagesAll = {"catalog_images_all",
                                  "SELECT " IMAGE_COLUMNS " FROM images ORDER BY lower(name), id"};
constexpr Statement kImage = {"catalog_image",
                              "SELECT " IMAGE_COLUMNS " FROM images WHERE id = $1"};
constexpr Statement kInsertImage = {
    "catalog_insert_image",
    "INSERT INTO images (id, name, os, driver_version, cuda_version, frameworks, status,"
    " created_at) VALUES ($1, $2, $3, $4, $5, $6::jsonb, 'active', $7)"
    " ON CONFLICT DO NOTHING RETURNING " IMAGE_COLUMNS};
constexpr Statement kLockImage = {"catalog_lock_image",
                                  "SELECT status FROM images WHERE id = $1 FOR UPDATE"};
constexpr Statement kDeprecateImage = {
    "catalog_deprecate_image",
    "UPDATE images SET status = 'deprecated', deprecated_at = $2 WHERE id = $1"
    " RETURNING " IMAGE_COLUMNS};

GpuModelRecord model_from(const pqxx::row& row) {
  GpuModelRecord m;
  m.name = row[0].as<std::string>();
  m.vendor = row[1].as<std::string>();
  m.architecture = row[2].as<std::string>();
  m.compute_capability = row[3].as<std::string>();
  m.vram_gb = row[4].as<int>();
  m.memory_type = row[5].as<std::string>();
  m.memory_bandwidth_gbps = optional_field<int>(row[6]);
  m.nvlink_connection = row[7].as<std::string>();
  m.nvlink_generation = optional_field<int>(row[8]);
  m.nvlink_bandwidth_gbps = optional_field<int>(row[9]);
  m.nvswitch_link_kind = optional_field<std::string>(row[10]);
  m.bridge_link_kind = optional_field<std::string>(row[11]);
  m.bf16 = row[12].as<bool>();
  m.fp8 = row[13].as<bool>();
  m.tdp_w = row[14].as<int>();
  return m;
}

ImageRecord image_from(const pqxx::row& row) {
  ImageRecord i;
  i.id = row[0].as<std::string>();
  i.name = row[1].as<std::string>();
  i.os = row[2].as<std::string>();
  i.driver_version = row[3].as<std::string>();
  i.cuda_version = row[4].as<std::string>();
  for (const auto& f : nlohmann::json::parse(row[5].as<std::string>())) {
    i.frameworks.push_back(f.get<std::string>());
  }
  i.status = row[6].as<std::string>();
  i.created_at = read_timestamp(row[7]);
  i.deprecated_at = read_optional_timestamp(row[8]);
  return i;
}

nlohmann::json image_audit_details(const ImageRecord& i) {
  return {{"name", i.name},
          {"os", i.os},
          {"driver_version", i.driver_version},
          {"cuda_version", i.cuda_version}};
}

}  // namespace

std::vector<GpuModelRecord> CatalogStore::gpu_models(Tx& tx) {
  std::vector<GpuModelRecord> out;
  for (const auto& row : tx.exec(kModels)) out.push_back(model_from(row));
  return out;
}

std::optional<GpuModelRecord> CatalogStore::gpu_model(Tx& tx, const std::string& name) {
  auto rows = tx.exec(kModel, name);
  return rows.empty() ? std::nullopt : std::optional<GpuModelRecord>(model_from(rows[0]));
}

std::vector<ImageRecord> CatalogStore::images(Tx& tx, bool include_deprecated) {
  std::vector<ImageRecord> out;
  for (const auto& row : tx.exec(include_deprecated ? kImagesAll : kImagesActive)) {
    out.push_back(image_from(row));
  }
  return out;
}

std::optional<ImageRecord> CatalogStore::image(Tx& tx, const std::string& id) {
  auto rows = tx.exec(kImage, id);
  return rows.empty() ? std::nullopt : std::optional<ImageRecord>(image_from(rows[0]));
}

ImageRecord CatalogStore::create_image(Tx& tx, const NewImage& image, const Actor& actor) {
  auto driver = parse_version(image.driver_version);
  if (!driver) throw Error::invalid_field("driver_version", "must be a version such as 550.54.14");
  auto cuda = parse_version(image.cuda_version);
  if (!cuda || cuda->parts.size() < 2) {
    throw Error::invalid_field("cuda_version", "must be a CUDA release such as 12.4");
  }
  if (!min_driver_for_cuda(*cuda)) {
    throw Error::invalid_field("cuda_version", "is not a CUDA release this platform knows");
  }
  if (auto verdict = driver_runs_cuda(*driver, *cuda); !verdict) {
    throw Error(ErrorCode::kIncompatibleImage, "The image's driver cannot run its CUDA release.",
                {{"reason", verdict.reason}});
  }
  auto now = clock_.now();
  auto rows =
      tx.exec(kInsertImage, new_id(id_prefix::kImage), image.name, image.os, image.driver_version,
              image.cuda_version, nlohmann::json(image.frameworks).dump(), sql_timestamp(now));
  if (rows.empty()) {
    throw Error(ErrorCode::kConflict, "An image with this name already exists.",
                {{"field", "name"}});
  }
  ImageRecord record = image_from(rows[0]);
  write_audit(tx, now, actor,
              {.org_id = std::nullopt,
               .action = "image.created",
               .target = record.id,
               .details = image_audit_details(record)});
  return record;
}

std::optional<ImageRecord> CatalogStore::deprecate_image(Tx& tx, const std::string& id,
                                                         const Actor& actor) {
  auto locked = tx.exec(kLockImage, id);
  if (locked.empty()) return std::nullopt;
  if (locked[0][0].as<std::string>() == "deprecated") {
    throw Error(ErrorCode::kInvalidState, "The image is already deprecated.",
                {{"status", "deprecated"}});
  }
  auto now = clock_.now();
  ImageRecord out = image_from(tx.exec(kDeprecateImage, id, sql_timestamp(now))[0]);
  write_audit(tx, now, actor,
              {.org_id = std::nullopt,
               .action = "image.deprecated",
               .target = id,
               .details = image_audit_details(out)});
  return out;
}

}  // namespace gpurent::inventory
