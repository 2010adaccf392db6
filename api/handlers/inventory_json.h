// How inventory records print in API responses (API.md "Catalog" and "Administration").
#pragma once

#include "inventory/node_store.h"
#include "inventory/records.h"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace gpurent::http {

nlohmann::json gpu_model_json(const inventory::GpuModelRecord& m);
nlohmann::json image_json(const inventory::ImageRecord& i,
                          const std::vector<std::string>& compatible_gpu_models);
nlohmann::json site_json(const inventory::SiteRecord& s);
// A node as lists show it (no GPUs, matrix or history).
nlohmann::json node_json(const inventory::NodeRecord& n);
// A node with `gpus`, `topology`, `health`, `telemetry`, `rentals` and `events`.
nlohmann::json node_detail_json(const inventory::NodeDetail& d);
nlohmann::json price_json(const inventory::PriceRecord& p);

}  // namespace gpurent::http
