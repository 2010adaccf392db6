// The demo fleet's contents. Prices are per GPU per day in roubles, times the GPU count.
#include "inventory/demo_fleet.h"

#include "core/money.h"
#include "inventory/node_state.h"

namespace gpurent::inventory {
namespace {

struct DemoNode {
  const char* hostname;
  const char* gpu_model;
  int gpu_count;
  const char* interconnect;
  const char* cpu_model;
  int cpu_cores;
  int ram_gb;
  int disk_gb;
};

constexpr DemoNode kNodes[] = {
    {"hgx-h100-01", "H100-SXM5-80GB", 8, "nvswitch", "2x Xeon Platinum 8480+", 112, 2048, 30720},
    {"hgx-h100-02", "H100-SXM5-80GB", 8, "nvswitch", "2x Xeon Platinum 8480+", 112, 2048, 30720},
    {"hgx-h200-01", "H200-SXM5-141GB", 8, "nvswitch", "2x Xeon Platinum 8568Y+", 96, 3072, 30720},
    {"hgx-a100-01", "A100-SXM4-80GB", 8, "nvswitch", "2x EPYC 7763", 128, 2048, 15360},
    {"pcie-a100-01", "A100-PCIe-80GB", 4, "nvlink-pairs", "2x EPYC 7543", 64, 1024, 7680},
    {"l40s-01", "L40S-48GB", 8, "pcie", "2x EPYC 9354", 64, 1024, 7680},
    {"l4-01", "L4-24GB", 4, "pcie", "EPYC 9124", 16, 256, 3840},
    {"rtx4090-01", "RTX4090-24GB", 8, "pcie", "2x EPYC 7443", 48, 512, 3840},
};

// Roubles per GPU per day, and the GPU counts each model is rented in.
struct DemoPrice {
  const char* gpu_model;
  long long roubles_per_gpu;
  std::vector<int> counts;
};

const std::vector<DemoPrice>& demo_prices() {
  static const std::vector<DemoPrice> kPrices = {
      {"H200-SXM5-141GB", 8500, {1, 2, 4, 8}}, {"H100-SXM5-80GB", 6500, {1, 2, 4, 8}},
      {"A100-SXM4-80GB", 4000, {1, 2, 4, 8}},  {"A100-PCIe-80GB", 3200, {1, 2, 4}},
      {"L40S-48GB", 2600, {1, 2, 4, 8}},       {"L4-24GB", 1000, {1, 2, 4}},
      {"RTX4090-24GB", 1300, {1, 2, 4, 8}},
  };
  return kPrices;
}

// One image per driver/CUDA generation; each driver is at least its CUDA release's minimum.
const std::vector<NewImage>& demo_images() {
  static const std::vector<NewImage> kImages = {
      {"ubuntu22.04-cuda11.8-pytorch2.3", "Ubuntu 22.04", "535.104.05", "11.8", {"PyTorch 2.3"}},
      {"ubuntu22.04-cuda12.2-pytorch2.3", "Ubuntu 22.04", "535.104.05", "12.2", {"PyTorch 2.3"}},
      {"ubuntu22.04-cuda12.4-pytorch2.5", "Ubuntu 22.04", "550.54.15", "12.4", {"PyTorch 2.5"}},
      {"ubuntu24.04-cuda12.8-pytorch2.7", "Ubuntu 24.04", "570.124.06", "12.8", {"PyTorch 2.7"}},
      {"ubuntu24.04-cuda13.0-pytorch2.9", "Ubuntu 24.04", "580.65.06", "13.0", {"PyTorch 2.9"}},
  };
  return kImages;
}

}  // namespace

bool seed_demo_fleet(PgPool& pool, const DemoFleetStores& stores, const Actor& actor) {
  return pool.transact("demo_fleet_seed", [&](Tx& tx) {
    if (!stores.sites->list(tx, 1, std::nullopt).items.empty()) return false;
    auto site = stores.sites->create(tx, "Moscow DC1", "ru-central", "Europe/Moscow", actor);
    for (const auto& n : kNodes) {
      NewNode node{.site_id = site.id,
                   .hostname = n.hostname,
                   .gpu_model = n.gpu_model,
                   .gpu_count = n.gpu_count,
                   .interconnect = n.interconnect,
                   .cpu_model = n.cpu_model,
                   .cpu_cores = n.cpu_cores,
                   .ram_gb = n.ram_gb,
                   .disk_gb = n.disk_gb,
                   .labels = {{"demo", "true"}}};
      auto created = stores.nodes->create(tx, node, actor);
      const auto& id = created.node.node.id;
      stores.nodes->transition(tx, id, NodeAction::kEnrolled, "demo fleet: simulated agent",
                               std::nullopt);
      stores.nodes->set_health(tx, id, Health::kOk);
    }
    for (const auto& image : demo_images()) stores.catalog->create_image(tx, image, actor);
    std::vector<PriceEntry> prices;
    for (const auto& p : demo_prices()) {
      for (int count : p.counts) {
        prices.push_back({p.gpu_model, count,
                          Money(p.roubles_per_gpu * 100 * count, stores.prices->currency())});
      }
    }
    stores.prices->replace(tx, prices, actor);
    return true;
  });
}

std::vector<DemoAgentSeat> demo_agent_seats(PgPool& pool, const DemoFleetStores& stores,
                                            const Actor& actor) {
  static constexpr Statement kDemoNodes = {
      "demo_fleet_agent_nodes",
      "SELECT n.id, n.gpu_count, n.interconnect,"
      " CASE n.interconnect WHEN 'nvswitch' THEN m.nvswitch_link_kind"
      " WHEN 'nvlink-pairs' THEN m.bridge_link_kind END"
      " FROM nodes n JOIN gpu_models m ON m.name = n.gpu_model"
      " WHERE n.labels ->> 'demo' = 'true' AND n.state <> $1::text ORDER BY n.hostname"};
  return pool.transact("demo_fleet_agents", [&](Tx& tx) {
    std::vector<DemoAgentSeat> out;
    for (const auto& row : tx.exec(kDemoNodes, std::string(to_string(NodeState::kRetired)))) {
      std::string id = row[0].as<std::string>();
      auto token = stores.nodes->issue_enrollment_token(tx, id, actor);
      if (!token) continue;
      out.push_back({id, token->enrollment_token, row[1].as<int>(), row[2].as<std::string>(),
                     row[3].is_null() ? "" : row[3].as<std::string>()});
    }
    return out;
  });
}

}  // namespace gpurent::inventory
