// CatalogCopy: the catalog a booking reads, from memory while announcements arrive.
#include "inventory/catalog_copy.h"

#include <algorithm>

namespace gpurent::inventory {

std::shared_ptr<const CatalogCopy::Snapshot> CatalogCopy::copy(Tx& tx) {
  if (!listening_()) {
    direct_.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  // Kept only if announcements still arrive once it is loaded (and nothing was announced
  // meanwhile: SnapshotCache::get_with).
  return cache_.get_with(
      [&] {
        Snapshot built;
        built.models = catalog_.gpu_models(tx);
        for (auto& image : catalog_.images(tx, true)) {
          std::string id = image.id;
          built.images.emplace(std::move(id), std::move(image));
        }
        built.prices = prices_.open(tx);
        return built;
      },
      listening_);
}

std::vector<GpuModelRecord> CatalogCopy::gpu_models(Tx& tx) {
  if (auto c = copy(tx)) return c->models;
  return catalog_.gpu_models(tx);
}

std::optional<GpuModelRecord> CatalogCopy::gpu_model(Tx& tx, const std::string& name) {
  auto c = copy(tx);
  if (!c) return catalog_.gpu_model(tx, name);
  auto it = std::find_if(c->models.begin(), c->models.end(),
                         [&](const GpuModelRecord& m) { return m.name == name; });
  return it == c->models.end() ? std::nullopt : std::optional<GpuModelRecord>(*it);
}

std::optional<ImageRecord> CatalogCopy::image(Tx& tx, const std::string& id) {
  auto c = copy(tx);
  if (!c) return catalog_.image(tx, id);
  auto it = c->images.find(id);
  return it == c->images.end() ? std::nullopt : std::optional<ImageRecord>(it->second);
}

std::optional<PriceRecord> CatalogCopy::price_at(Tx& tx, const std::string& gpu_model,
                                                 int gpu_count, Timestamp at) {
  auto c = copy(tx);
  if (c && c->prices.covers(at)) return c->prices.at(gpu_model, gpu_count, at);
  if (c) direct_.fetch_add(1, std::memory_order_relaxed);
  return prices_.price_at(tx, gpu_model, gpu_count, at);
}

void CatalogCopy::changed() {
  cache_.invalidate();
}

CatalogCopy::Stats CatalogCopy::stats() const {
  return {cache_.misses(), cache_.hits(), direct_.load(std::memory_order_relaxed)};
}

}  // namespace gpurent::inventory
