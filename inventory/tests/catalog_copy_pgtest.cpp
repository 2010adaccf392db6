// CatalogCopy against a real PostgreSQL: while listening it answers as the stores do without
// a statement, forgets the catalog on changed(), asks the stores for a price at an instant
// before the price list's last change, does not keep a copy built while a change was
// announced, and reads the stores every time while not listening. That a change to the price
// list is announced on the catalog's channel (migrations/0021) is catalog_store_pgtest's.
#include "inventory/catalog_copy.h"

#include "inventory/tests/inventory_fixture.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>

namespace gpurent::inventory {
namespace catalog_copy_pgtest {

using std::chrono::hours;

class CatalogCopyTest : public InventoryTest {
 protected:
  void SetUp() override {
    InventoryTest::SetUp();
    set_prices(650'000);
    image_ = transact([&](Tx& tx) {
               return catalog_.create_image(
                   tx, {"Ubuntu 22.04 CUDA 12.4", "Ubuntu 22.04", "550.54.14", "12.4", {}}, admin_);
             }).id;
  }

  void set_prices(long long h100_minor) {
    transact([&](Tx& tx) {
      prices_.replace(tx, {{"H100-SXM5-80GB", 1, Money(h100_minor, "RUB")}}, admin_);
    });
  }

  std::optional<long long> price(CatalogCopy& copy, Timestamp at) {
    auto p = read([&](Tx& tx) { return copy.price_at(tx, "H100-SXM5-80GB", 1, at); });
    return p ? std::optional<long long>(p->amount_minor) : std::nullopt;
  }

  std::uint64_t round_trips() const { return pool_.stats().round_trips_total; }

  std::string image_;
};

TEST_F(CatalogCopyTest, WhileListeningItAnswersAsTheStoresDoWithoutAStatement) {
  CatalogCopy copy(catalog_, prices_, [] { return true; });
  clock_.advance(hours(1));
  auto now = clock_.now();
  read([&](Tx& tx) { EXPECT_EQ(copy.gpu_models(tx).size(), catalog_.gpu_models(tx).size()); });
  EXPECT_EQ(copy.stats().loads, 1u);

  read([&](Tx& tx) {
    auto models = copy.gpu_models(tx);
    auto stored = catalog_.gpu_models(tx);
    ASSERT_EQ(models.size(), stored.size());
    for (std::size_t i = 0; i < models.size(); ++i) EXPECT_EQ(models[i].name, stored[i].name);
    auto model = copy.gpu_model(tx, "H100-SXM5-80GB");
    ASSERT_TRUE(model);
    EXPECT_EQ(model->nvswitch_link_kind,
              catalog_.gpu_model(tx, "H100-SXM5-80GB")->nvswitch_link_kind);
    auto p = copy.price_at(tx, "H100-SXM5-80GB", 1, now);
    auto stored_price = prices_.price_at(tx, "H100-SXM5-80GB", 1, now);
    ASSERT_TRUE(p && stored_price);
    EXPECT_EQ(p->id, stored_price->id);
    EXPECT_EQ(p->amount_minor, 650'000);
  });

  auto before = round_trips();
  read([&](Tx& tx) {
    EXPECT_FALSE(copy.gpu_model(tx, "B300"));
    auto image = copy.image(tx, image_);
    EXPECT_TRUE(image && image->driver_version == "550.54.14" && image->status == "active");
    EXPECT_FALSE(copy.image(tx, "img_none"));
    EXPECT_TRUE(copy.price_at(tx, "H100-SXM5-80GB", 1, now));
    EXPECT_FALSE(copy.price_at(tx, "H100-SXM5-80GB", 2, now)) << "a shape without a price";
  });
  EXPECT_EQ(round_trips(), before) << "answered from memory";
  EXPECT_EQ(copy.stats().loads, 1u);
}

TEST_F(CatalogCopyTest, AChangeIsSeenOnceAnnouncedAndAnOlderInstantAsksTheStores) {
  CatalogCopy copy(catalog_, prices_, [] { return true; });
  auto first = clock_.now();
  clock_.advance(hours(1));
  EXPECT_EQ(price(copy, clock_.now()), 650'000);

  set_prices(700'000);
  auto changed_at = clock_.now();
  clock_.advance(hours(1));
  EXPECT_EQ(price(copy, clock_.now()), 650'000) << "not announced yet: the copy as it was";
  copy.changed();
  EXPECT_EQ(price(copy, clock_.now()), 700'000);
  EXPECT_EQ(copy.stats().loads, 2u);

  // Before the last change, only the stores know which row was in force.
  auto direct = copy.stats().direct;
  EXPECT_EQ(price(copy, first), 650'000);
  EXPECT_EQ(price(copy, changed_at - std::chrono::seconds(1)), 650'000);
  EXPECT_EQ(copy.stats().direct, direct + 2);
  EXPECT_EQ(copy.stats().loads, 2u);

  // A deprecated image is still one a rental may name: the copy has every image.
  transact([&](Tx& tx) { return catalog_.deprecate_image(tx, image_, admin_); });
  copy.changed();
  auto image = read([&](Tx& tx) { return copy.image(tx, image_); });
  ASSERT_TRUE(image);
  EXPECT_EQ(image->status, "deprecated");
}

TEST_F(CatalogCopyTest, ACopyLoadedWhileAChangeWasAnnouncedServesItsReadButIsNotKept) {
  CatalogCopy* self = nullptr;
  std::atomic<int> asked{0};
  // The second question is asked after the load: a change announced just then.
  CatalogCopy copy(catalog_, prices_, [&] {
    if (++asked == 2) self->changed();
    return true;
  });
  self = &copy;
  EXPECT_EQ(price(copy, clock_.now()), 650'000);
  EXPECT_EQ(price(copy, clock_.now()), 650'000);
  EXPECT_EQ(copy.stats().loads, 2u) << "the first load was not kept";
  EXPECT_EQ(price(copy, clock_.now()), 650'000);
  EXPECT_EQ(copy.stats().loads, 2u);
}

TEST_F(CatalogCopyTest, NotListeningEveryReadGoesToTheStores) {
  CatalogCopy copy(catalog_, prices_, [] { return false; });
  clock_.advance(hours(1));
  EXPECT_EQ(price(copy, clock_.now()), 650'000);
  set_prices(700'000);
  clock_.advance(hours(1));
  EXPECT_EQ(price(copy, clock_.now()), 700'000) << "seen at once: nothing is kept";
  EXPECT_EQ(copy.stats().loads, 0u);
  EXPECT_EQ(copy.stats().direct, 2u);
}

}  // namespace catalog_copy_pgtest
}  // namespace gpurent::inventory
