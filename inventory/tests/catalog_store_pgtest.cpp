// CatalogStore against a real PostgreSQL: the seeded GPU catalog agrees with the reference
// and the pure rules, images are checked before they are written, deprecation, and every
// catalog change (made by the store or by hand) is announced on the gpurent_catalog channel.
#include "inventory/catalog_store.h"

#include "core/error.h"
#include "core/notify_listener.h"
#include "inventory/compatibility.h"
#include "inventory/image_compat.h"
#include "inventory/tests/inventory_fixture.h"
#include "tests/support/wait_for.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>

namespace gpurent::inventory {
namespace catalog_store_pgtest {

class CatalogStoreTest : public InventoryTest {
 protected:
  static NewImage image(std::string name, std::string driver, std::string cuda) {
    return {std::move(name), "Ubuntu 22.04", std::move(driver), std::move(cuda), {"PyTorch 2.5"}};
  }

  std::optional<GpuModelRecord> find_model(const std::string& name) {
    return read([&](Tx& tx) { return catalog_.gpu_model(tx, name); });
  }

  GpuModelRecord model(const std::string& name) {
    auto m = find_model(name);
    EXPECT_TRUE(m) << name;
    return m.value_or(GpuModelRecord{});
  }

  std::vector<GpuModelRecord> models() {
    return read([&](Tx& tx) { return catalog_.gpu_models(tx); });
  }

  std::vector<ImageRecord> images(bool include_deprecated) {
    return read([&](Tx& tx) { return catalog_.images(tx, include_deprecated); });
  }

  ImageRecord create_image(const NewImage& i) {
    return transact([&](Tx& tx) { return catalog_.create_image(tx, i, admin_); });
  }

  std::optional<ImageRecord> deprecate_image(const std::string& id) {
    return transact([&](Tx& tx) { return catalog_.deprecate_image(tx, id, admin_); });
  }
};

TEST_F(CatalogStoreTest, SeededModelsAgreeWithTheReferenceAndThePrecisionRules) {
  auto all = models();
  ASSERT_EQ(all.size(), 13u);
  for (const auto& m : all) {
    SCOPED_TRACE(m.name);
    auto cc = parse_compute_capability(m.compute_capability);
    ASSERT_TRUE(cc);
    ASSERT_TRUE(parse_architecture(m.architecture));
    EXPECT_EQ(m.bf16, supports_bf16(*cc));
    EXPECT_EQ(m.fp8, supports_fp8(*cc));
    EXPECT_EQ(m.nvlink_connection == "nvswitch", m.nvswitch_link_kind.has_value());
  }
  EXPECT_FALSE(model("T4-16GB").bf16);
  EXPECT_TRUE(model("A100-SXM4-80GB").bf16);
  EXPECT_FALSE(model("A100-SXM4-80GB").fp8);
  EXPECT_TRUE(model("L40S-48GB").fp8);
  auto h100 = model("H100-SXM5-80GB");
  EXPECT_EQ(h100.architecture, "Hopper");
  EXPECT_EQ(h100.compute_capability, "9.0");
  EXPECT_EQ(h100.vram_gb, 80);
  EXPECT_EQ(h100.memory_bandwidth_gbps, 3350);
  EXPECT_EQ(h100.nvlink_generation, 4);
  EXPECT_EQ(h100.nvlink_bandwidth_gbps, 900);
  EXPECT_EQ(h100.nvswitch_link_kind, "NV18");
  EXPECT_EQ(h100.tdp_w, 700);
  EXPECT_EQ(model("A100-SXM4-80GB").nvswitch_link_kind, "NV12");
  EXPECT_EQ(model("A100-PCIe-80GB").bridge_link_kind, "NV4");
  EXPECT_FALSE(model("H100-NVL-94GB").memory_bandwidth_gbps);  // unverified in the reference
  EXPECT_FALSE(find_model("B200"));
}

TEST_F(CatalogStoreTest, AnImageWhoseDriverCannotRunItsCudaIsRefusedAndNotWritten) {
  try {
    create_image(image("too-old", "535.104.05", "12.4"));
    FAIL() << "created";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kIncompatibleImage);
    EXPECT_NE(e.details().value("reason", "").find("550.54.14"), std::string::npos)
        << e.details().dump();
  }
  EXPECT_EQ(count("SELECT count(*) FROM images"), 0);
  EXPECT_EQ(count("SELECT count(*) FROM audit_log WHERE action = 'image.created'"), 0);
}

TEST_F(CatalogStoreTest, MalformedOrUnknownVersionsNameTheField) {
  struct Case {
    const char* driver;
    const char* cuda;
    const char* field;
  };
  for (const auto& c :
       {Case{"latest", "12.4", "driver_version"}, Case{"550.", "12.4", "driver_version"},
        Case{"550.54.14", "12", "cuda_version"}, Case{"550.54.14", "10.2", "cuda_version"},
        Case{"550.54.14", "twelve", "cuda_version"}}) {
    SCOPED_TRACE(std::string(c.driver) + " / " + c.cuda);
    try {
      create_image(image("bad", c.driver, c.cuda));
      ADD_FAILURE() << "created";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidRequest);
      EXPECT_EQ(e.details().value("field", ""), c.field);
    }
  }
  EXPECT_EQ(count("SELECT count(*) FROM images"), 0);
}

TEST_F(CatalogStoreTest, CreatesImagesWithAnAuditRowAndRefusesDuplicateNames) {
  auto created = create_image(image("Torch-Image", "550.54.15", "12.4"));
  EXPECT_EQ(created.status, "active");
  EXPECT_EQ(created.frameworks, std::vector<std::string>{"PyTorch 2.5"});
  EXPECT_EQ(count("SELECT count(*) FROM audit_log WHERE action = 'image.created' AND org_id IS "
                  "NULL AND target = '" +
                  created.id + "'"),
            1);
  try {
    create_image(image("torch-image", "550.54.15", "12.4"));
    FAIL() << "duplicate created";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kConflict);
  }
  EXPECT_EQ(count("SELECT count(*) FROM images"), 1);
}

TEST_F(CatalogStoreTest, DeprecatedImagesLeaveTheCustomerListOnce) {
  auto a = create_image(image("a", "570.124.06", "12.8"));
  auto b = create_image(image("b", "580.65.06", "13.0"));
  auto deprecated = deprecate_image(a.id);
  ASSERT_TRUE(deprecated);
  EXPECT_EQ(deprecated->status, "deprecated");
  EXPECT_TRUE(deprecated->deprecated_at);
  auto active = images(false);
  ASSERT_EQ(active.size(), 1u);
  EXPECT_EQ(active[0].id, b.id);
  EXPECT_EQ(images(true).size(), 2u);
  try {
    deprecate_image(a.id);
    FAIL() << "deprecated twice";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidState);
  }
  EXPECT_FALSE(deprecate_image("img_0000000000000000000000"));
  EXPECT_EQ(count("SELECT count(*) FROM audit_log WHERE action = 'image.deprecated'"), 1);
}

TEST_F(CatalogStoreTest, CompatibleModelsFollowTheRules) {
  auto all = models();
  auto names = [&](const ImageRecord& i) { return compatible_gpu_models(i, all); };
  auto has = [](const std::vector<std::string>& v, const char* name) {
    return std::find(v.begin(), v.end(), name) != v.end();
  };
  auto cuda13 = names(create_image(image("c13", "580.65.06", "13.0")));
  EXPECT_FALSE(has(cuda13, "V100-SXM2-32GB"));
  EXPECT_TRUE(has(cuda13, "T4-16GB"));
  EXPECT_TRUE(has(cuda13, "H100-SXM5-80GB"));
  auto cuda118 = names(create_image(image("c118", "520.61.05", "11.8")));
  EXPECT_FALSE(has(cuda118, "H100-SXM5-80GB"));  // Hopper needs branch R525
  EXPECT_FALSE(has(cuda118, "L4-24GB"));         // Ada too
  EXPECT_TRUE(has(cuda118, "A100-SXM4-80GB"));
  EXPECT_TRUE(has(cuda118, "V100-SXM2-32GB"));
}

// The cache of every replica hears of a change however it was made: through the store, or
// by hand in psql.
TEST_F(CatalogStoreTest, EveryCatalogChangeIsAnnouncedOnTheCatalogChannel) {
  std::atomic<int> heard{0};
  std::atomic<int> sentinels{0};
  std::atomic<bool> ready{false};
  NotifyListener listener({.url = db_.url()});
  listener.subscribe("gpurent_catalog", [&](const std::string&) { ++heard; });
  listener.subscribe("catalog_test_sentinel", [&](const std::string&) { ++sentinels; });
  listener.on_connected([&] { ready = true; });
  listener.start();
  ASSERT_TRUE(testing::wait_for([&] { return ready.load(); }));
  // Every notification committed before the sentinel is delivered before it (one queue, in
  // commit order), so once the sentinel is heard the count is final: nothing more can be
  // on its way.
  auto heard_by_now = [&] {
    int sent = sentinels.load() + 1;
    exec("NOTIFY catalog_test_sentinel");
    EXPECT_TRUE(testing::wait_for([&] { return sentinels.load() >= sent; }));
    return heard.load();
  };

  auto created = create_image(image("n", "570.124.06", "12.8"));
  EXPECT_EQ(heard_by_now(), 1);
  deprecate_image(created.id);
  EXPECT_EQ(heard_by_now(), 2);
  exec("UPDATE gpu_models SET tdp_w = 701 WHERE name = 'H100-SXM5-80GB'");
  EXPECT_EQ(heard_by_now(), 3);
  // Nodes are not part of the cached catalog.
  transact([&](Tx& tx) { return nodes_.create(tx, node("quiet-01", "L4-24GB", 1), admin_); });
  EXPECT_EQ(heard_by_now(), 3);
  // Prices are: bookings read them from inventory::CatalogCopy (migrations/0021).
  transact([&](Tx& tx) {
    return prices_.replace(tx, {{"L4-24GB", 1, Money(100'000, "RUB")}}, admin_);
  });
  EXPECT_EQ(heard_by_now(), 4);
  exec("UPDATE images SET os = os WHERE false");  // a statement that changes no row still tells
  EXPECT_EQ(heard_by_now(), 5);
  listener.stop();
}

}  // namespace catalog_store_pgtest
}  // namespace gpurent::inventory
