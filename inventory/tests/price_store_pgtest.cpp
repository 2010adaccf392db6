// PriceStore against a real PostgreSQL: replacing the list keeps unchanged rows, closes
// changed and dropped ones (so a price in force earlier is still there for the rentals that
// used it), refuses bad entries without writing, and serialises concurrent replacements.
#include "inventory/price_store.h"

#include "core/error.h"
#include "inventory/tests/inventory_fixture.h"

#include <gtest/gtest.h>

#include <latch>
#include <thread>

namespace gpurent::inventory {
namespace price_store_pgtest {

class PriceStoreTest : public InventoryTest {
 protected:
  static PriceEntry entry(const char* model, int count, long long minor,
                          const char* currency = "RUB") {
    return {model, count, Money(minor, currency)};
  }

  std::vector<PriceRecord> replace(const std::vector<PriceEntry>& entries) {
    return transact([&](Tx& tx) { return prices_.replace(tx, entries, admin_); });
  }

  std::vector<PriceRecord> current() {
    return read([&](Tx& tx) { return prices_.current(tx); });
  }

  std::optional<PriceRecord> price_at(const std::string& model, int count, Timestamp at) {
    return read([&](Tx& tx) { return prices_.price_at(tx, model, count, at); });
  }
};

TEST_F(PriceStoreTest, ReplaceKeepsUnchangedRowsAndChangesApplyToNewRentalsOnly) {
  auto first = replace({entry("H100-SXM5-80GB", 8, 5'200'000), entry("L4-24GB", 1, 100'000),
                        entry("L4-24GB", 2, 200'000)});
  ASSERT_EQ(first.size(), 3u);
  auto booked_at = clock_.now();
  long long h100_row = first[0].id;
  clock_.advance(std::chrono::hours(1));

  auto second = replace({entry("H100-SXM5-80GB", 8, 5'200'000), entry("L4-24GB", 1, 120'000)});
  ASSERT_EQ(second.size(), 2u);
  EXPECT_EQ(second[0].id, h100_row);  // unchanged: the same row
  EXPECT_EQ(second[1].amount_minor, 120'000);

  // A rental priced before the change keeps its price; one priced now gets the new one.
  auto then = price_at("L4-24GB", 1, booked_at);
  ASSERT_TRUE(then);
  EXPECT_EQ(then->amount_minor, 100'000);
  EXPECT_EQ(price_at("L4-24GB", 1, clock_.now())->amount_minor, 120'000);
  EXPECT_TRUE(price_at("L4-24GB", 2, booked_at));
  EXPECT_FALSE(price_at("L4-24GB", 2, clock_.now()));  // dropped
  EXPECT_EQ(count("SELECT count(*) FROM prices"), 4);
  EXPECT_EQ(count("SELECT count(*) FROM prices WHERE valid_until IS NOT NULL"), 2);
  EXPECT_EQ(count("SELECT count(*) FROM audit_log WHERE action = 'prices.set'"), 2);

  // The same list again changes nothing and writes no audit row.
  replace({entry("H100-SXM5-80GB", 8, 5'200'000), entry("L4-24GB", 1, 120'000)});
  EXPECT_EQ(count("SELECT count(*) FROM prices"), 4);
  EXPECT_EQ(count("SELECT count(*) FROM audit_log WHERE action = 'prices.set'"), 2);
}

TEST_F(PriceStoreTest, BadEntriesNameTheEntryAndWriteNothing) {
  replace({entry("L4-24GB", 1, 100'000)});
  struct Case {
    std::vector<PriceEntry> entries;
    const char* field;
  };
  std::vector<Case> cases = {
      {{entry("L4-24GB", 1, 1), entry("B200", 8, 1)}, "items[1].gpu_model"},
      {{entry("L4-24GB", 1, 100, "USD")}, "items[0].price_per_day.currency"},
      {{entry("L4-24GB", 1, 0)}, "items[0].price_per_day.amount_minor"},
      {{entry("L4-24GB", 1, -5)}, "items[0].price_per_day.amount_minor"},
      {{entry("L4-24GB", 0, 100)}, "items[0].gpu_count"},
      {{entry("L4-24GB", 65, 100)}, "items[0].gpu_count"},
      {{entry("L4-24GB", 2, 100), entry("L4-24GB", 2, 200)}, "items[1].gpu_model"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.field);
    try {
      replace(c.entries);
      ADD_FAILURE() << "accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidRequest);
      EXPECT_EQ(e.details().value("field", ""), c.field);
    }
  }
  auto now = current();
  ASSERT_EQ(now.size(), 1u);
  EXPECT_EQ(now[0].amount_minor, 100'000);
  EXPECT_EQ(count("SELECT count(*) FROM prices"), 1);
}

TEST_F(PriceStoreTest, AnEmptyListRemovesEveryPrice) {
  replace({entry("L4-24GB", 1, 100'000)});
  EXPECT_TRUE(replace({}).empty());
  EXPECT_TRUE(current().empty());
}

// Two admins replace the list at once, many times: each replacement sees the list the other
// left, so one price per shape is ever current and the final list is one of the two.
TEST_F(PriceStoreTest, ConcurrentReplacementsSerialise) {
  std::latch go(2);  // both replace from the start
  auto run = [&](long long amount) {
    go.arrive_and_wait();
    for (int i = 0; i < 10; ++i) {
      replace({entry("L4-24GB", 1, amount + i), entry("L4-24GB", 2, amount + i)});
    }
  };
  std::thread a(run, 1000), b(run, 2000);
  a.join();
  b.join();
  auto now = current();
  ASSERT_EQ(now.size(), 2u);
  EXPECT_EQ(now[0].amount_minor, now[1].amount_minor);
  EXPECT_EQ(count("SELECT count(*) FROM prices WHERE valid_until IS NULL"), 2);
}

}  // namespace price_store_pgtest
}  // namespace gpurent::inventory
