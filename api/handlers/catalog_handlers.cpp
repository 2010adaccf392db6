// Catalog routes: authenticate, then answer from the snapshot; pages are cut from it too.
#include "api/handlers/catalog_handlers.h"

#include "api/handlers/inventory_json.h"
#include "api/handlers/json_values.h"
#include "api/handlers/query_params.h"
#include "api/responses.h"
#include "core/crypto.h"
#include "core/error.h"
#include "inventory/image_compat.h"

#include <algorithm>
#include <utility>

namespace gpurent::http {
namespace {

std::shared_ptr<const std::string> first_page_body(const SortedItems& items) {
  nlohmann::json array = nlohmann::json::array();
  for (const auto& [_, item] : items) array.push_back(item);
  nlohmann::json body = {{"items", std::move(array)}, {"next_cursor", nullptr}};
  return std::make_shared<const std::string>(body.dump());
}

// A cursor is "k" and the hex of the last item's sort key: opaque to clients, and anything
// else is refused like any list's bad cursor.
std::string make_cursor(const std::string& key) {
  std::string out = "k";  // appended, not `"k" + …`: GCC 12 -O3 warns falsely on that
  out.append(crypto::to_hex(reinterpret_cast<const std::uint8_t*>(key.data()), key.size()));
  return out;
}

std::string key_of_cursor(const std::string& cursor) {
  auto bad = [] { return Error::invalid_field("cursor", "is not a cursor from this list"); };
  if (cursor.size() < 3 || cursor.size() > 513 || cursor[0] != 'k' || cursor.size() % 2 == 0) {
    throw bad();
  }
  std::string key;
  for (std::size_t i = 1; i < cursor.size(); i += 2) {
    auto nibble = [&](char c) {
      if (c >= '0' && c <= '9') return c - '0';
      if (c >= 'a' && c <= 'f') return c - 'a' + 10;
      throw bad();
    };
    key.push_back(static_cast<char>(nibble(cursor[i]) * 16 + nibble(cursor[i + 1])));
  }
  return key;
}

Response shared_body_response(std::shared_ptr<const std::string> body) {
  Response r;
  r.shared_body = std::move(body);
  return r;
}

}  // namespace

Response page_of_sorted(const SortedItems& items, const QueryParams& query) {
  auto cursor = query.cursor();
  auto it = items.begin();
  if (cursor) {
    std::string after = key_of_cursor(*cursor);
    it = std::upper_bound(items.begin(), items.end(), after,
                          [](const std::string& c, const auto& item) { return c < item.first; });
  }
  nlohmann::json out = nlohmann::json::array();
  std::optional<std::string> next;
  int limit = query.limit();
  for (; it != items.end(); ++it) {
    if (static_cast<int>(out.size()) == limit) {
      next = make_cursor(std::prev(it)->first);
      break;
    }
    out.push_back(it->second);
  }
  return list_response(200, std::move(out), next);
}

CatalogDocuments build_catalog_documents(PgPool& pool, inventory::CatalogStore& store) {
  // One connection and no transaction: a transaction would cost a BEGIN and a COMMIT and
  // still give each statement a snapshot of its own (READ COMMITTED). The two reads need no
  // common one: every catalog change, once committed, notifies every replica, which drops
  // its documents, so a build that straddled a change is dropped like one made just before.
  auto [models, images] = pool.read("catalog_documents", [&](Tx& tx) {
    auto gpu_models = store.gpu_models(tx);
    return std::make_pair(std::move(gpu_models), store.images(tx, false));
  });
  CatalogDocuments docs;
  for (const auto& m : models) docs.gpu_models.emplace_back(m.name, gpu_model_json(m));
  for (const auto& i : images) {
    docs.images.emplace_back(ascii_lower(i.name),
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
                  [&state](const Request& req, const Principal&) {
                    QueryParams query(req, {"limit", "cursor"});
                    auto docs = state.cache->get();
                    if (req.query.empty()) return shared_body_response(docs->gpu_models_body);
                    return page_of_sorted(docs->gpu_models, query);
                  },
              // From memory nearly always: answered on the network thread, and on a worker
              // only when the snapshot or the caller's credential must be read first.
              .execution = Execution::kInlineUnlessBlocked,
              .summary = "The GPU model catalog: specs, bf16/fp8 support and NVLink, by name.",
              .tag = "catalog"});

  router.add({.method = Method::kGet,
              .pattern = "/v1/images",
              .handler =
                  [&state](const Request& req, const Principal&) {
                    QueryParams query(req, {"limit", "cursor"});
                    auto docs = state.cache->get();
                    if (req.query.empty()) return shared_body_response(docs->images_body);
                    return page_of_sorted(docs->images, query);
                  },
              .execution = Execution::kInlineUnlessBlocked,
              .summary = "Active images with their driver, CUDA release, frameworks and the GPU "
                         "models they run on.",
              .tag = "catalog"});
}

}  // namespace gpurent::http
