// Platform administration of what is sold: images (/v1/admin/images, …/{id}/deprecate)
// and the price list (GET/PUT /v1/admin/prices).
#pragma once

#include "api/auth.h"
#include "api/handlers/catalog_handlers.h"
#include "api/router.h"
#include "core/db_pool.h"
#include "inventory/catalog_copy.h"
#include "inventory/catalog_store.h"
#include "inventory/price_store.h"

namespace gpurent::http {

struct CatalogAdminRoutesState {
  PgPool* pool = nullptr;
  inventory::CatalogStore* catalog = nullptr;
  inventory::PriceStore* prices = nullptr;
  // Dropped after each change on this replica; the database notifies the others.
  CatalogCache* cache = nullptr;
  inventory::CatalogCopy* copy = nullptr;  // likewise
};

void add_catalog_admin_routes(Router& router, CatalogAdminRoutesState& state);

}  // namespace gpurent::http
