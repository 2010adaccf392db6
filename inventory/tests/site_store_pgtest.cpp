// SiteStore against a real PostgreSQL: IANA time zones, names unique ignoring case, paging.
#include "inventory/site_store.h"

#include "core/error.h"
#include "inventory/tests/inventory_fixture.h"

#include <gtest/gtest.h>

#include <set>

namespace gpurent::inventory {
namespace site_store_pgtest {

using SiteStoreTest = InventoryTest;

TEST_F(SiteStoreTest, TimeZonesMustBeIana) {
  for (const char* zone : {"Mars/Olympus", "", "europe/moscow", "UTC+3", "Europe/Moscow'--"}) {
    SCOPED_TRACE(zone);
    try {
      transact([&](Tx& tx) { return sites_.create(tx, "Site X", "r", zone, admin_); });
      ADD_FAILURE() << "accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidRequest);
      EXPECT_EQ(e.details().value("field", ""), "timezone");
    }
  }
  EXPECT_EQ(transact([&](Tx& tx) {
              return sites_.create(tx, "Frankfurt", "eu-central", "Europe/Berlin", admin_);
            }).timezone,
            "Europe/Berlin");
  EXPECT_EQ(count("SELECT count(*) FROM sites"), 2);
}

TEST_F(SiteStoreTest, NamesAreUniqueIgnoringCaseAndCreationIsAudited) {
  try {
    transact([&](Tx& tx) { return sites_.create(tx, "TEST dc", "r", "UTC", admin_); });
    FAIL() << "accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kConflict);
  }
  EXPECT_EQ(count("SELECT count(*) FROM audit_log WHERE action = 'site.created'"), 1);
  EXPECT_EQ(read([&](Tx& tx) { return sites_.get(tx, site_); })->name, "Test DC");
  EXPECT_FALSE(read([&](Tx& tx) { return sites_.get(tx, "sit_0000000000000000000000"); }));
}

TEST_F(SiteStoreTest, PagesVisitEverySiteOnce) {
  std::set<std::string> all{site_};
  for (int i = 0; i < 4; ++i) {
    all.insert(transact([&](Tx& tx) {
                 return sites_.create(tx, "DC " + std::to_string(i), "r", "UTC", admin_);
               }).id);
  }
  std::set<std::string> seen;
  std::optional<std::string> cursor;
  do {
    auto page = read([&](Tx& tx) { return sites_.list(tx, 2, cursor); });
    for (const auto& s : page.items) EXPECT_TRUE(seen.insert(s.id).second);
    cursor = page.next_cursor;
  } while (cursor);
  EXPECT_EQ(seen, all);
  EXPECT_THROW(read([&](Tx& tx) { return sites_.list(tx, 2, std::string("nonsense")); }), Error);
}

}  // namespace site_store_pgtest
}  // namespace gpurent::inventory
