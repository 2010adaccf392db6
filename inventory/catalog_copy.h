// What a booking reads of the catalog — the GPU models, the images and the price list — kept
// in memory while this replica hears the catalog's announcements, so that a booking reads
// none of it from the database: the catalog changes a few times a day, bookings come
// hundreds a second (docs/PERFORMANCE.md, "Booking storm").
//
// Each read answers as the stores would in the caller's transaction, or reads the stores in
// it when the copy cannot say so: while the listener is not connected (announcements sent
// meanwhile are lost), and for a price asked at an instant before the price list's last
// change (OpenPrices::covers). A change reaches the copy through changed(): on every replica
// from the catalog's announcements (a trigger on gpu_models, images and prices:
// migrations 0004 and 0021) and on reconnection, and on the replica that made it right
// after its commit, before its answer. A copy built while a change was announced is used
// by the read that built it but not kept: it may predate the change.
#pragma once

#include "core/db_pool.h"
#include "core/snapshot_cache.h"
#include "inventory/catalog_store.h"
#include "inventory/price_store.h"

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace gpurent::inventory {

class CatalogCopy {
 public:
  // `listening` says whether announcements are arriving (the listener is connected).
  CatalogCopy(CatalogStore& catalog, PriceStore& prices, std::function<bool()> listening)
      : catalog_(catalog), prices_(prices), listening_(std::move(listening)) {}
  CatalogCopy(const CatalogCopy&) = delete;
  CatalogCopy& operator=(const CatalogCopy&) = delete;

  // As CatalogStore's and PriceStore's reads of the same names.
  std::vector<GpuModelRecord> gpu_models(Tx& tx);
  std::optional<GpuModelRecord> gpu_model(Tx& tx, const std::string& name);
  std::optional<ImageRecord> image(Tx& tx, const std::string& id);
  std::optional<PriceRecord> price_at(Tx& tx, const std::string& gpu_model, int gpu_count,
                                      Timestamp at);

  // The catalog changed: the next read loads it again. Any thread.
  void changed();

  struct Stats {
    std::uint64_t loads = 0;      // reads that loaded the catalog (three statements)
    std::uint64_t from_copy = 0;  // reads answered from memory
    std::uint64_t direct = 0;  // reads that went to the stores (not listening, or an old instant)
  };
  Stats stats() const;

 private:
  struct Snapshot {
    std::vector<GpuModelRecord> models;                   // by name, as CatalogStore::gpu_models
    std::unordered_map<std::string, ImageRecord> images;  // every image, by id
    OpenPrices prices;
  };
  // The copy, loaded with `tx` when there is none; null while not listening.
  std::shared_ptr<const Snapshot> copy(Tx& tx);

  CatalogStore& catalog_;
  PriceStore& prices_;
  std::function<bool()> listening_;
  SnapshotCache<Snapshot> cache_;
  std::atomic<std::uint64_t> direct_{0};
};

}  // namespace gpurent::inventory
