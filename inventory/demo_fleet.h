// The demo fleet `make run` starts with: one site with every kind of node the product
// rents, images for each driver/CUDA generation, and a price list in the platform currency.
#pragma once

#include "core/audit.h"
#include "core/db_pool.h"
#include "inventory/catalog_store.h"
#include "inventory/node_store.h"
#include "inventory/price_store.h"
#include "inventory/site_store.h"

#include <string>
#include <vector>

namespace gpurent::inventory {

struct DemoFleetStores {
  SiteStore* sites = nullptr;
  NodeStore* nodes = nullptr;
  CatalogStore* catalog = nullptr;
  PriceStore* prices = nullptr;
};

// Seeds the fleet once, in one transaction: a failed seed leaves nothing half-made, and a
// database that already has a site is left as it is (restarts keep what admins changed).
// The nodes stand in for simulated agents: they are moved to `available` with health `ok`
// through the state machine, with a reason saying so. `actor` is who the audit rows name.
// Returns true when it seeded.
bool seed_demo_fleet(PgPool& pool, const DemoFleetStores& stores, const Actor& actor);

// What a simulated agent needs to serve one demo node (`gpurent-agent run --backend
// simulated`): the node, a fresh single-use enrolment token (used only when the agent has no
// certificate yet; unused ones expire), and the shape its hello must report.
struct DemoAgentSeat {
  std::string node_id;
  std::string token;
  int gpu_count = 0;
  std::string interconnect;  // nvswitch | nvlink-pairs | pcie
  std::string nvlink_kind;   // "NV18", …; empty for PCIe nodes
};

// One seat per node labelled demo that is not retired, by hostname.
std::vector<DemoAgentSeat> demo_agent_seats(PgPool& pool, const DemoFleetStores& stores,
                                            const Actor& actor);

}  // namespace gpurent::inventory
