// The catalog any authenticated caller reads: GET /v1/gpu-models and GET /v1/images, served
// from an in-memory snapshot that every replica drops when the catalog changes.
#pragma once

#include "api/auth.h"
#include "api/router.h"
#include "core/db_pool.h"
#include "core/snapshot_cache.h"
#include "inventory/catalog_store.h"

#include <nlohmann/json.hpp>

#include <memory>
#include <string>
#include <vector>

namespace gpurent::http {

// The catalog as responses print it: items with their sort keys (for pages) and the whole
// first page already serialised, which is what nearly every request asks for.
class QueryParams;

// Items with the keys they are sorted by (byte order), for lists cut from memory.
using SortedItems = std::vector<std::pair<std::string, nlohmann::json>>;

// The page of `items` that ?limit= and ?cursor= ask for. The cursor encodes the sort key of
// the last item of the previous page, so a boundary survives the list being rebuilt.
Response page_of_sorted(const SortedItems& items, const QueryParams& query);

struct CatalogDocuments {
  SortedItems gpu_models;  // key: name
  SortedItems images;      // key: lower-case name
  std::shared_ptr<const std::string> gpu_models_body;
  std::shared_ptr<const std::string> images_body;
};

// Reads the store and applies the compatibility rules: what one cache miss costs.
CatalogDocuments build_catalog_documents(PgPool& pool, inventory::CatalogStore& store);

using CatalogCache = SnapshotCache<CatalogDocuments>;

struct CatalogRoutesState {
  CatalogCache* cache = nullptr;
};

void add_catalog_routes(Router& router, CatalogRoutesState& state);

}  // namespace gpurent::http
