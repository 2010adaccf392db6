// Image and price admin routes: read and check the request, then one transaction (or, for
// reads, one connection) each.
#include "api/handlers/catalog_admin_handlers.h"

#include "api/handlers/inventory_json.h"
#include "api/handlers/json_values.h"
#include "api/handlers/query_params.h"
#include "api/json_body.h"
#include "api/responses.h"
#include "core/error.h"
#include "core/id.h"
#include "core/money.h"
#include "inventory/image_compat.h"

#include <algorithm>
#include <cstdio>
#include <utility>

namespace gpurent::http {
namespace {

constexpr std::size_t kMaxFrameworks = 20;
constexpr std::size_t kMaxPrices = 1000;

// This replica's catalog documents and bookings' copy forget the catalog once the change has
// committed (the Idempotency-Key's unit may still be open): a rebuild before the commit would
// keep the catalog without it. The other replicas hear it from the database.
void catalog_changed(CatalogAdminRoutesState& state) {
  state.pool->after_commit([&state] {
    state.cache->invalidate();
    if (state.copy) state.copy->changed();
  });
}

Error no_such_image() {
  return Error(ErrorCode::kNotFound, "No such image.");
}

std::vector<std::string> read_frameworks(const nlohmann::json* value) {
  std::vector<std::string> out;
  if (!value) return out;
  if (!value->is_array() || value->size() > kMaxFrameworks) {
    throw Error::invalid_field("frameworks", "must be an array of at most 20 strings");
  }
  for (std::size_t i = 0; i < value->size(); ++i) {
    std::string field = "frameworks[" + std::to_string(i) + "]";
    if (!(*value)[i].is_string()) throw Error::invalid_field(field, "must be a string");
    out.push_back(printable_text(field, (*value)[i].get<std::string>(), 64));
  }
  return out;
}

inventory::NewImage read_new_image(const nlohmann::json& body) {
  JsonObjectReader in(body);
  inventory::NewImage i;
  i.name = printable_text("name", in.required_string("name", 100), 100);
  i.os = printable_text("os", in.required_string("os", 100), 100);
  i.driver_version = in.required_string("driver_version", 32);
  i.cuda_version = in.required_string("cuda_version", 32);
  i.frameworks = read_frameworks(in.optional_value("frameworks"));
  in.finish();
  return i;
}

// The body is the list itself, as GET prints its items, or {"items": [...]}.
std::vector<inventory::PriceEntry> read_price_list(const nlohmann::json& body) {
  const nlohmann::json* list = &body;
  if (body.is_object()) {
    JsonObjectReader in(body);
    list = in.optional_value("items");
    in.optional_value("next_cursor");  // so a whole GET body can be PUT back
    in.finish();
    if (!list) throw Error::invalid_field("items", "is required");
  }
  if (!list->is_array()) throw Error::invalid_field("items", "must be an array of prices");
  if (list->size() > kMaxPrices)
    throw Error::invalid_field("items", "must have at most 1000 prices");
  std::vector<inventory::PriceEntry> out;
  for (std::size_t i = 0; i < list->size(); ++i) {
    std::string prefix = "items[" + std::to_string(i) + "].";
    JsonObjectReader in((*list)[i], prefix);
    auto model = in.required_string("gpu_model", 64);
    auto count = static_cast<int>(in.required_int("gpu_count", 1, 64));
    const auto* price = in.optional_value("price_per_day");
    if (!price) throw Error::invalid_field(prefix + "price_per_day", "is required");
    in.optional_value("valid_from");  // printed by GET; ignored so a GET body can be PUT back
    in.finish();
    out.push_back({model, count, Money::from_json(*price, prefix + "price_per_day")});
  }
  return out;
}

// Prices sort by model, then count (zero-padded so 8 sorts before 16).
SortedItems sorted_prices(const std::vector<inventory::PriceRecord>& prices) {
  SortedItems items;
  for (const auto& p : prices) {
    char count[8];
    std::snprintf(count, sizeof count, "%03d", p.gpu_count);
    items.emplace_back(p.gpu_model + '\x1f' + count, price_json(p));
  }
  std::sort(items.begin(), items.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  return items;
}

void add_image_routes(Router& router, CatalogAdminRoutesState& state) {
  router.add({.method = Method::kGet,
              .pattern = "/v1/admin/images",
              .handler =
                  [&state](const Request& req, const Principal&) {
                    QueryParams query(req, {"limit", "cursor"});
                    // Two reads, no common snapshot needed: a model changed between them
                    // shifts only which models this one response lists as compatible.
                    auto [models, images] = state.pool->read("catalog_images", [&](Tx& tx) {
                      auto gpu_models = state.catalog->gpu_models(tx);
                      return std::make_pair(std::move(gpu_models), state.catalog->images(tx, true));
                    });
                    SortedItems items;
                    for (const auto& i : images) {
                      items.emplace_back(
                          ascii_lower(i.name),
                          image_json(i, inventory::compatible_gpu_models(i, models)));
                    }
                    std::sort(items.begin(), items.end(),
                              [](const auto& a, const auto& b) { return a.first < b.first; });
                    return page_of_sorted(items, query);
                  },
              .platform_admin = true,
              .summary = "Every image, deprecated ones included (platform admins).",
              .tag = "admin"});

  router.add(
      {.method = Method::kPost,
       .pattern = "/v1/admin/images",
       .handler =
           [&state](const Request& req, const Principal& p) {
             auto image = read_new_image(parse_json_body(req));
             auto [created, models] = state.pool->transact("catalog_create_image", [&](Tx& tx) {
               auto record = state.catalog->create_image(tx, image, actor_of(req, p));
               return std::make_pair(std::move(record), state.catalog->gpu_models(tx));
             });
             // After the commit: a rebuild before it would cache the catalog without the image.
             catalog_changed(state);
             return json_response(
                 201, image_json(created, inventory::compatible_gpu_models(created, models)));
           },
       .platform_admin = true,
       .summary = "Publish an image: {name, os, driver_version, cuda_version, frameworks}; "
                  "422 incompatible_image when the driver cannot run that CUDA release "
                  "(platform admins).",
       .tag = "admin"});

  router.add({.method = Method::kPost,
              .pattern = "/v1/admin/images/{id}/deprecate",
              .handler =
                  [&state](const Request& req, const Principal& p) {
                    std::string id = path_id(req, "id", id_prefix::kImage, no_such_image().what());
                    auto [image, models] =
                        state.pool->transact("catalog_deprecate_image", [&](Tx& tx) {
                          auto record = state.catalog->deprecate_image(tx, id, actor_of(req, p));
                          std::vector<inventory::GpuModelRecord> gpu_models;
                          if (record) gpu_models = state.catalog->gpu_models(tx);
                          return std::make_pair(std::move(record), std::move(gpu_models));
                        });
                    if (!image) throw no_such_image();
                    // After the commit, as for a new image.
                    catalog_changed(state);
                    return json_response(
                        200, image_json(*image, inventory::compatible_gpu_models(*image, models)));
                  },
              .platform_admin = true,
              .summary = "Stop offering an image; rentals that use it keep it (platform admins).",
              .tag = "admin"});
}

}  // namespace

void add_catalog_admin_routes(Router& router, CatalogAdminRoutesState& state) {
  add_image_routes(router, state);

  router.add({.method = Method::kGet,
              .pattern = "/v1/admin/prices",
              .handler =
                  [&state](const Request& req, const Principal&) {
                    QueryParams query(req, {"limit", "cursor"});
                    auto prices = state.pool->read(
                        "price_current", [&](Tx& tx) { return state.prices->current(tx); });
                    return page_of_sorted(sorted_prices(prices), query);
                  },
              .platform_admin = true,
              .summary = "The price list in force: a price per day for each GPU model and "
                         "count (platform admins).",
              .tag = "admin"});

  router.add({.method = Method::kPut,
              .pattern = "/v1/admin/prices",
              .handler =
                  [&state](const Request& req, const Principal& p) {
                    QueryParams query(req, {});
                    auto entries = read_price_list(parse_json_body(req));
                    auto prices = state.pool->transact("price_replace", [&](Tx& tx) {
                      return state.prices->replace(tx, entries, actor_of(req, p));
                    });
                    catalog_changed(state);
                    nlohmann::json items = nlohmann::json::array();
                    for (auto& [_, item] : sorted_prices(prices)) items.push_back(std::move(item));
                    return list_response(200, std::move(items), std::nullopt);
                  },
              .platform_admin = true,
              .summary = "Replace the price list: [{gpu_model, gpu_count, price_per_day}]; "
                         "shapes left out are no longer priced; rentals keep the price they "
                         "were booked at (platform admins).",
              .tag = "admin"});
}

}  // namespace gpurent::http
