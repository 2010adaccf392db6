// The demo fleet against a real PostgreSQL: every node shape the issue lists, available and
// healthy, images for each driver/CUDA generation that run on the fleet, prices in RUB, and
// a second start that leaves everything as it is; a seed that fails part-way leaves nothing.
#include "inventory/demo_fleet.h"

#include "core/error.h"
#include "inventory/image_compat.h"
#include "inventory/tests/inventory_fixture.h"

#include <gtest/gtest.h>

#include <map>

namespace gpurent::inventory {
namespace demo_fleet_pgtest {

class DemoFleetTest : public InventoryTest {
 protected:
  void SetUp() override {
    // The fleet seeds an empty database, so no site of the fixture's.
    admin_.user_id = create_platform_admin();
  }
  DemoFleetStores stores() { return {&sites_, &nodes_, &catalog_, &prices_}; }
};

TEST_F(DemoFleetTest, SeedsEveryShapeOnceAvailableAndHealthy) {
  ASSERT_TRUE(seed_demo_fleet(pool_, stores(), admin_));
  auto nodes = read([&](Tx& tx) { return nodes_.list(tx, {}, 100, std::nullopt); }).items;
  std::map<std::string, std::pair<int, std::string>> shape;  // model -> (count, interconnect)
  for (const auto& n : nodes) {
    EXPECT_EQ(n.state, "available") << n.hostname;
    EXPECT_EQ(n.health, "ok") << n.hostname;
    shape[n.gpu_model] = {n.gpu_count, n.interconnect};
  }
  EXPECT_EQ(count("SELECT count(*) FROM nodes WHERE gpu_model = 'H100-SXM5-80GB'"), 2);
  EXPECT_EQ(shape["H100-SXM5-80GB"], std::make_pair(8, std::string("nvswitch")));
  EXPECT_EQ(shape["H200-SXM5-141GB"], std::make_pair(8, std::string("nvswitch")));
  EXPECT_EQ(shape["A100-SXM4-80GB"], std::make_pair(8, std::string("nvswitch")));
  EXPECT_EQ(shape["A100-PCIe-80GB"], std::make_pair(4, std::string("nvlink-pairs")));
  EXPECT_EQ(shape["L40S-48GB"], std::make_pair(8, std::string("pcie")));
  EXPECT_EQ(shape["L4-24GB"], std::make_pair(4, std::string("pcie")));
  EXPECT_EQ(shape["RTX4090-24GB"], std::make_pair(8, std::string("pcie")));

  auto models = read([&](Tx& tx) { return catalog_.gpu_models(tx); });
  auto images = read([&](Tx& tx) { return catalog_.images(tx, false); });
  std::set<std::string> cuda, drivers;
  for (const auto& i : images) {
    cuda.insert(i.cuda_version);
    drivers.insert(i.driver_version.substr(0, 3));
    EXPECT_FALSE(compatible_gpu_models(i, models).empty()) << i.name;
  }
  EXPECT_EQ(cuda, (std::set<std::string>{"11.8", "12.2", "12.4", "12.8", "13.0"}));
  EXPECT_EQ(drivers, (std::set<std::string>{"535", "550", "570", "580"}));

  auto prices = read([&](Tx& tx) { return prices_.current(tx); });
  EXPECT_FALSE(prices.empty());
  for (const auto& p : prices) EXPECT_EQ(p.currency, "RUB");
  for (const auto& [model, s] : shape) {
    bool priced = false;
    for (const auto& p : prices) priced |= p.gpu_model == model && p.gpu_count == s.first;
    EXPECT_TRUE(priced) << model << " x" << s.first << " has no price";
  }

  EXPECT_FALSE(seed_demo_fleet(pool_, stores(), admin_));
  EXPECT_EQ(count("SELECT count(*) FROM nodes"), static_cast<long long>(nodes.size()));
  EXPECT_EQ(count("SELECT count(*) FROM images"), static_cast<long long>(images.size()));
}

// The seed is one transaction: one that fails at its last node (whose GPU model is gone)
// leaves no site, node, image, price or audit row of the ones made before it.
TEST_F(DemoFleetTest, ASeedThatFailsPartWayLeavesNothing) {
  exec("DELETE FROM gpu_models WHERE name = 'RTX4090-24GB'");
  long long audits = count("SELECT count(*) FROM audit_log");
  EXPECT_THROW(seed_demo_fleet(pool_, stores(), admin_), Error);
  for (const char* table : {"sites", "nodes", "gpus", "node_events", "images", "prices"}) {
    EXPECT_EQ(count(std::string("SELECT count(*) FROM ") + table), 0) << table;
  }
  EXPECT_EQ(count("SELECT count(*) FROM audit_log"), audits);
}

TEST_F(DemoFleetTest, EachDemoNodeGetsASeatForASimulatedAgent) {
  ASSERT_TRUE(seed_demo_fleet(pool_, stores(), admin_));
  auto seats = demo_agent_seats(pool_, stores(), admin_);
  ASSERT_EQ(seats.size(), 8u);
  std::map<std::string, int> by_shape;
  for (const auto& seat : seats) {
    ++by_shape[seat.interconnect + " " + seat.nvlink_kind];
    // The token is a real, single-use enrolment token for that node.
    auto node = transact([&](Tx& tx) { return nodes_.consume_enrollment_token(tx, seat.token); });
    EXPECT_EQ(node, seat.node_id);
  }
  EXPECT_EQ(by_shape["nvswitch NV18"], 3) << "2x H100 and the H200";
  EXPECT_EQ(by_shape["pcie "], 3) << "L40S, L4 and RTX 4090: no NVLink";
  EXPECT_EQ(by_shape["nvswitch NV12"], 1) << "the A100 SXM4";
  EXPECT_EQ(by_shape["nvlink-pairs NV4"], 1) << "the A100 PCIe's bridges";
  // A retired node gets no agent.
  exec("UPDATE nodes SET state = 'retired' WHERE id = '" + seats[0].node_id + "'");
  EXPECT_EQ(demo_agent_seats(pool_, stores(), admin_).size(), 7u);
}

}  // namespace demo_fleet_pgtest
}  // namespace gpurent::inventory
