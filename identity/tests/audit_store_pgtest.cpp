// AuditStore against a real PostgreSQL: every filter, newest-first keyset paging without gaps
// or repeats, and org scoping that no filter or cursor can widen.
#include "identity/audit_store.h"

#include "core/error.h"
#include "core/sql.h"
#include "identity/identity_store.h"
#include "identity/tests/two_orgs_fixture.h"
#include "tests/support/pg_harness.h"

#include <gtest/gtest.h>

#include <pqxx/pqxx>

#include <algorithm>
#include <set>

namespace gpurent::identity {
namespace audit_store_pgtest {

using namespace std::chrono_literals;

// 2026-03-01T00:00:00Z
constexpr Timestamp kBase{std::chrono::seconds(1772323200)};

class AuditStoreTest : public TwoOrgsTest {
 protected:
  void SetUp() override {
    TwoOrgsTest::SetUp();
    // Sign-up wrote a row each; start from an empty log so the rows below are all there is.
    pqxx::connection c(db_.url());
    pqxx::work tx(c);
    tx.exec("DELETE FROM audit_log");
    tx.commit();
  }

  // A row at kBase + `minutes`; returns its id.
  long long insert(const std::optional<std::string>& org, const std::optional<std::string>& actor,
                   const std::string& action, int minutes,
                   const std::optional<std::string>& token = std::nullopt) {
    pqxx::connection c(db_.url());
    pqxx::work tx(c);
    auto row = tx.exec_params1(
        "INSERT INTO audit_log (at, org_id, actor_user_id, actor_token_id, action, target, ip,"
        " request_id, details) VALUES ($1, $2, $3, $4, $5, 'tgt', '198.51.100.9', 'req_x',"
        " '{\"n\": 1}') RETURNING id",
        sql_timestamp(kBase + std::chrono::minutes(minutes)), org, actor, token, action);
    tx.commit();
    return row[0].as<long long>();
  }

  static std::vector<long long> ids(const AuditPage& page) {
    std::vector<long long> out;
    for (const auto& r : page.items) out.push_back(r.id);
    return out;
  }

  // Every row of a listing, page by page, checking each page's size and cursor.
  template <typename Fetch>
  static std::vector<long long> walk(Fetch fetch, int limit) {
    std::vector<long long> out;
    std::optional<std::string> cursor;
    for (int pages = 0; pages < 1000; ++pages) {
      AuditPage page = fetch(limit, cursor);
      EXPECT_LE(static_cast<int>(page.items.size()), limit);
      for (auto id : ids(page)) out.push_back(id);
      if (!page.next_cursor) return out;
      EXPECT_EQ(static_cast<int>(page.items.size()), limit) << "only full pages have a next";
      cursor = page.next_cursor;
    }
    ADD_FAILURE() << "paging did not end";
    return out;
  }

  // The store's listings as use cases: each a read of its own.
  AuditPage list_all(const std::optional<std::string>& org_id, const AuditFilter& filter, int limit,
                     const std::optional<std::string>& cursor) {
    return pool_.read("audit_list_all",
                      [&](Tx& tx) { return store_.list_all(tx, org_id, filter, limit, cursor); });
  }
  AuditPage list_org(const std::string& org_id, const AuditFilter& filter, int limit,
                     const std::optional<std::string>& cursor) {
    return pool_.read("audit_list_org",
                      [&](Tx& tx) { return store_.list_org(tx, org_id, filter, limit, cursor); });
  }

  AuditStore store_;
};

TEST_F(AuditStoreTest, ListsEveryFieldNewestFirst) {
  long long a = insert(org1_, user1_, "ssh_key.create", 0, "tok_0123456789012345678901");
  long long b = insert(org2_, user2_, "token.create", 1);
  long long c = insert(std::nullopt, std::nullopt, "admin.create_platform_admin", 2);

  auto page = list_all(std::nullopt, {}, 50, std::nullopt);
  EXPECT_EQ(ids(page), (std::vector<long long>{c, b, a}));
  EXPECT_FALSE(page.next_cursor);
  const auto& r = page.items[2];
  EXPECT_EQ(r.at, kBase);
  EXPECT_EQ(r.org_id, org1_);
  EXPECT_EQ(r.actor_user_id, user1_);
  EXPECT_EQ(r.actor_token_id, "tok_0123456789012345678901");
  EXPECT_EQ(r.action, "ssh_key.create");
  EXPECT_EQ(r.target, "tgt");
  EXPECT_EQ(r.ip, "198.51.100.9");
  EXPECT_EQ(r.request_id, "req_x");
  EXPECT_EQ(r.details, nlohmann::json({{"n", 1}}));
  EXPECT_FALSE(page.items[0].org_id);
  EXPECT_FALSE(page.items[0].actor_user_id);
  EXPECT_FALSE(page.items[1].actor_token_id);
}

TEST_F(AuditStoreTest, EachFilterNarrowsAndTheyCombine) {
  long long a = insert(org1_, user1_, "ssh_key.create", 0);
  long long b = insert(org1_, user2_, "ssh_key.delete", 10);
  long long c = insert(org2_, user2_, "ssh_key.create", 20);
  long long d = insert(std::nullopt, user1_, "user.login", 30);
  auto all = [&](const std::optional<std::string>& org, const AuditFilter& f) {
    return ids(list_all(org, f, 50, std::nullopt));
  };
  using V = std::vector<long long>;
  EXPECT_EQ(all(org1_, {}), (V{b, a}));
  EXPECT_EQ(all(org2_, {}), (V{c}));
  EXPECT_EQ(all("org_0123456789012345678901", {}), V{});
  EXPECT_EQ(all(std::nullopt, {.action = "ssh_key.create"}), (V{c, a}));
  EXPECT_EQ(all(std::nullopt, {.action = "ssh_key"}), V{}) << "actions match exactly";
  EXPECT_EQ(all(std::nullopt, {.action = "x' OR '1'='1"}), V{});
  EXPECT_EQ(all(std::nullopt, {.actor_user_id = user1_}), (V{d, a}));
  // since is inclusive, until exclusive.
  EXPECT_EQ(all(std::nullopt, {.since = kBase + 10min}), (V{d, c, b}));
  EXPECT_EQ(all(std::nullopt, {.until = kBase + 10min}), (V{a}));
  EXPECT_EQ(all(std::nullopt, {.since = kBase + 10min, .until = kBase + 30min}), (V{c, b}));
  EXPECT_EQ(all(std::nullopt, {.since = kBase + 10min, .until = kBase + 10min}), V{});
  EXPECT_EQ(all(std::nullopt, {.since = kBase + 10min + 1us}), (V{d, c}));
  EXPECT_EQ(all(org1_, {.action = "ssh_key.delete", .actor_user_id = user2_}), (V{b}));
  EXPECT_EQ(all(org2_, {.actor_user_id = user1_}), V{});
}

TEST_F(AuditStoreTest, PagesWalkEveryRowExactlyOnceNewestFirst) {
  std::vector<long long> expected;
  for (int i = 0; i < 23; ++i) {
    expected.push_back(insert(i % 3 == 0 ? org2_ : org1_, user1_, "ssh_key.create", i / 4));
  }
  std::reverse(expected.begin(), expected.end());
  for (int limit : {1, 5, 7, 22, 23, 24, 500}) {
    SCOPED_TRACE(limit);
    auto got =
        walk([&](int l,
                 const std::optional<std::string>& c) { return list_all(std::nullopt, {}, l, c); },
             limit);
    EXPECT_EQ(got, expected);
  }
  // Filters hold on every page, not only the first.
  auto page = list_all(org1_, {.until = kBase + 4min}, 500, std::nullopt);
  auto paged = walk(
      [&](int l, const std::optional<std::string>& c) {
        return list_all(org1_, {.until = kBase + 4min}, l, c);
      },
      3);
  EXPECT_EQ(paged, ids(page));
  EXPECT_FALSE(paged.empty());
  for (const auto& r : page.items) EXPECT_EQ(r.org_id, org1_);
}

TEST_F(AuditStoreTest, RowsWrittenBetweenPagesNeitherRepeatNorShift) {
  for (int i = 0; i < 6; ++i) insert(org1_, user1_, "a", i);
  auto first = list_all(std::nullopt, {}, 3, std::nullopt);
  ASSERT_TRUE(first.next_cursor);
  long long newer = insert(org1_, user1_, "a", 100);
  auto second = list_all(std::nullopt, {}, 3, first.next_cursor);
  std::set<long long> seen;
  for (auto id : ids(first)) seen.insert(id);
  for (auto id : ids(second)) EXPECT_TRUE(seen.insert(id).second) << id;
  EXPECT_EQ(seen.size(), 6u);
  EXPECT_FALSE(seen.count(newer)) << "a newer row belongs to a fresh first page";
  EXPECT_FALSE(second.next_cursor);
}

TEST_F(AuditStoreTest, AnOrgListingNeverShowsAnotherOrgsOrPlatformRows) {
  std::vector<long long> mine;
  for (int i = 0; i < 10; ++i) {
    insert(org2_, user2_, "ssh_key.create", i);
    mine.push_back(insert(org1_, user1_, "ssh_key.create", i));
    insert(std::nullopt, user1_, "user.login", i);
  }
  std::reverse(mine.begin(), mine.end());
  auto got = walk(
      [&](int l, const std::optional<std::string>& c) { return list_org(org1_, {}, l, c); }, 4);
  EXPECT_EQ(got, mine);
  // Filters that name the other org's actor find nothing here.
  EXPECT_TRUE(list_org(org1_, {.actor_user_id = user2_}, 50, std::nullopt).items.empty());
  // A cursor taken from the cross-tenant listing does not widen an org listing either.
  auto wide = list_all(std::nullopt, {}, 2, std::nullopt);
  ASSERT_TRUE(wide.next_cursor);
  for (const auto& r : list_org(org1_, {}, 500, wide.next_cursor).items) {
    EXPECT_EQ(r.org_id, org1_);
  }
  for (const auto& r : list_org(org2_, {}, 500, std::nullopt).items) {
    EXPECT_EQ(r.org_id, org2_);
  }
}

// A cursor is "<micros>.<row id>" (core/paging.h); the bare row ids of the old scheme are
// refused like any other text.
TEST_F(AuditStoreTest, MalformedCursorsAreInvalidRequestNamingCursor) {
  insert(org1_, user1_, "a", 0);
  for (std::string bad : {"",
                          "abc",
                          "-1",
                          "0",
                          "1",
                          "1.0",
                          "1.-5",
                          "1.+5",
                          "1.05",
                          "1.5x",
                          "1. 5",
                          "1.5 ",
                          "-1.5",
                          " 1.5",
                          "1.9223372036854775808",
                          "1.99999999999999999999",
                          "99999999999999999999.5",
                          "1' OR 1=1 --",
                          "1.5' OR 1=1 --",
                          "170000.key_0123456789012345678901"}) {
    for (bool org : {false, true}) {
      try {
        if (org) {
          list_org(org1_, {}, 10, bad);
        } else {
          list_all(std::nullopt, {}, 10, bad);
        }
        ADD_FAILURE() << "accepted cursor '" << bad << "'";
      } catch (const Error& e) {
        EXPECT_EQ(e.code(), ErrorCode::kInvalidRequest) << bad;
        EXPECT_EQ(e.details()["field"], "cursor") << bad;
      }
    }
  }
  // A well-formed cursor past every row is simply an empty last page.
  for (std::string past : {"1.5", "0.9223372036854775807"}) {
    auto page = list_all(std::nullopt, {}, 10, past);
    EXPECT_TRUE(page.items.empty()) << past;
    EXPECT_FALSE(page.next_cursor) << past;
  }
}

TEST_F(AuditStoreTest, RowsThatStoresWriteAreListed) {
  // Sign-up writes its own row through write_audit; the listing reads it back.
  auto [u, o] = signup("three@example.com", "Three");
  auto page = list_org(o.id, {.action = "user.signup"}, 50, std::nullopt);
  ASSERT_EQ(page.items.size(), 1u);
  EXPECT_EQ(page.items[0].actor_user_id, u.id);
  EXPECT_EQ(page.items[0].ip, "203.0.113.7");
  EXPECT_EQ(page.items[0].request_id, "req_test");
  EXPECT_TRUE(page.items[0].details.is_object());
}

}  // namespace audit_store_pgtest
}  // namespace gpurent::identity
