// Catalog routes: authenticate, then answer from the snapshot; pages are cut from it too.
#include "api/handlers/catalog_handlers.h"

#include "api/handlers/inventory_json.h"
#include "api/handlers/query_params.h"
#include "api/responses.h"
#include "inventory/image_compat.h"

#include <algorithm>
#include <cctype>

namespace gpurent::http {
namespace {

using Items = std::vector<std::pair<std::string, nlohmann::json>>;

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::shared_ptr<const std::string> first_page_body(const Items& items) {
  nlohmann::json array = nlohmann::json::array();
  for (const auto& [_, item] : items) array.push_back(item);
  nlohmann::json body = {{"items", std::move(array)}, {"next_cursor", nullptr}};
  return std::make_shared<const std::string>(body.dump());
}

// A page of the snapshot: the items whose key sorts after the cursor (the key of the last
// item of the previous page), so a page boundary survives a rebuild of the snapshot.
Response page_of(const Items& items, const QueryParams& query) {
  auto cursor = query.cursor();
  auto it = items.begin();
  if (cursor) {
    it = std::upper_bound(items.begin(), items.end(), *cursor,
                          [](const std::string& c, const auto& item) { return c < item.first; });
  }
  nlohmann::json out = nlohmann::json::array();
  std::optional<std::string> next;
  int limit = query.limit();
  for (; it != items.end(); ++it) {
    if (static_cast<int>(out.size()) == limit) {
      next = std::prev(it)->first;
      break;
    }
    out.push_back(it->second);
  }
  return list_response(200, std::move(out), next);
}

Response shared_body_response(std::shared_ptr<const std::string> body) {
  Response r;
  r.shared_body = std::move(body);
  return r;
}

}  // namespace

CatalogDocuments build_catalog_documents(inventory::CatalogStore& store) {
  auto models = store.gpu_models();
  auto images = store.images(false);
  CatalogDocuments docs;
  for (const auto& m : models) docs.gpu_models.emplace_back(m.name, gpu_model_json(m));
  for (const auto& i : images) {
    docs.images.emplace_back(lower(i.name),
                             image_json(i, inventory::compatible_gpu_models(i, models)));
  }
  // Byte order, whatever the database's collation: the cursor compares the same way.
  auto by_key = [](const auto& a, const auto& b) { return a.first < b.first; };
  std::sort(docs.gpu_models.begin(), docs.gpu_models.end(), by_key);
  std::sort(docs.images.begin(), docs.images.end(), by_key);
  docs.gpu_models_body = first_page_body(docs.gpu_models);
  docs.images_body = first_page_body(docs.images);
  return docs;
}

void add_catalog_routes(Router& router, CatalogRoutesState& state) {
  router.add({.method = Method::kGet,
              .pattern = "/v1/gpu-models",
              .handler =
                  [&state](const Request& req) {
                    state.auth->authenticate(req);
                    QueryParams query(req, {"limit", "cursor"});
                    auto docs = state.cache->get();
                    if (req.query.empty()) return shared_body_response(docs->gpu_models_body);
                    return page_of(docs->gpu_models, query);
                  },
              .summary = "The GPU model catalog: specs, bf16/fp8 support and NVLink, by name.",
              .tag = "catalog"});

  router.add({.method = Method::kGet,
              .pattern = "/v1/images",
              .handler =
                  [&state](const Request& req) {
                    state.auth->authenticate(req);
                    QueryParams query(req, {"limit", "cursor"});
                    auto docs = state.cache->get();
                    if (req.query.empty()) return shared_body_response(docs->images_body);
                    return page_of(docs->images, query);
                  },
              .summary = "Active images with their driver, CUDA release, frameworks and the GPU "
                         "models they run on.",
              .tag = "catalog"});
}

}  // namespace gpurent::http
