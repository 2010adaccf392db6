// SshKeyStore against a real PostgreSQL: uniqueness per org, tenant isolation, paging, audit.
#include "identity/ssh_key_store.h"

#include "core/crypto.h"
#include "core/id.h"
#include "identity/identity_store.h"
#include "identity/ssh_public_key.h"
#include "identity/tests/two_orgs_fixture.h"
#include "tests/support/pg_harness.h"

#include <gtest/gtest.h>

#include <pqxx/pqxx>

#include <atomic>
#include <latch>
#include <set>
#include <thread>

namespace gpurent::identity {
namespace ssh_key_store_pgtest {

using namespace std::chrono_literals;

std::string base64(const std::string& in) {
  static const char* kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  std::size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    unsigned v = (static_cast<unsigned char>(in[i]) << 16) |
                 (static_cast<unsigned char>(in[i + 1]) << 8) |
                 static_cast<unsigned char>(in[i + 2]);
    for (int s = 18; s >= 0; s -= 6) out += kAlphabet[(v >> s) & 63];
  }
  if (i + 1 == in.size()) {
    unsigned v = static_cast<unsigned char>(in[i]) << 16;
    out.append({kAlphabet[(v >> 18) & 63], kAlphabet[(v >> 12) & 63], '=', '='});
  } else if (i + 2 == in.size()) {
    unsigned v =
        (static_cast<unsigned char>(in[i]) << 16) | (static_cast<unsigned char>(in[i + 1]) << 8);
    out.append(
        {kAlphabet[(v >> 18) & 63], kAlphabet[(v >> 12) & 63], kAlphabet[(v >> 6) & 63], '='});
  }
  return out;
}

std::string ssh_string(const std::string& s) {
  std::string out;
  for (int shift = 24; shift >= 0; shift -= 8) out += static_cast<char>((s.size() >> shift) & 0xff);
  return out + s;
}

// A well-formed ed25519 public key with random key material.
SshPublicKey random_key(const std::string& comment = "someone@laptop") {
  auto raw = crypto::random_bytes(32);
  std::string point(raw.begin(), raw.end());
  return parse_ssh_public_key(
      "ssh-ed25519 " + base64(ssh_string("ssh-ed25519") + ssh_string(point)) + " " + comment);
}

class SshKeyStoreTest : public TwoOrgsTest {
 protected:
  // The store's methods as use cases: each in a transaction (or a read) of its own.
  SshKeyRecord create(const std::string& org_id, const std::string& name, const SshPublicKey& key,
                      const std::string& actor) {
    return pool_.transact("ssh_key_create",
                          [&](Tx& tx) { return store_.create(tx, org_id, name, key, as(actor)); });
  }
  SshKeyPage list(const std::string& org_id, int limit, const std::optional<std::string>& cursor) {
    return pool_.read("ssh_key_list",
                      [&](Tx& tx) { return store_.list(tx, org_id, limit, cursor); });
  }
  std::optional<SshKeyRecord> get(const std::string& org_id, const std::string& id) {
    return pool_.read("ssh_key_get", [&](Tx& tx) { return store_.get(tx, org_id, id); });
  }
  bool remove(const std::string& org_id, const std::string& id, const std::string& actor) {
    return pool_.transact("ssh_key_remove",
                          [&](Tx& tx) { return store_.remove(tx, org_id, id, as(actor)); });
  }

  SshKeyStore store_{clock_};
};

TEST_F(SshKeyStoreTest, CreateGetListRemove) {
  auto key = random_key();
  Timestamp before = clock_.now();
  auto made = create(org1_, "laptop", key, user1_);
  EXPECT_EQ(made.id.rfind("key_", 0), 0u);
  EXPECT_TRUE(is_valid_id(id_prefix::kSshKey, made.id));
  EXPECT_EQ(made.name, "laptop");
  EXPECT_EQ(made.type, "ssh-ed25519");
  EXPECT_EQ(made.bits, 256);
  EXPECT_EQ(made.fingerprint, key.fingerprint);
  EXPECT_EQ(made.public_key, key.canonical());
  EXPECT_GE(made.created_at, before);
  EXPECT_LE(made.created_at, clock_.now());

  auto got = get(org1_, made.id);
  ASSERT_TRUE(got);
  EXPECT_EQ(got->fingerprint, made.fingerprint);
  EXPECT_EQ(got->created_at, made.created_at);

  auto page = list(org1_, 50, std::nullopt);
  ASSERT_EQ(page.items.size(), 1u);
  EXPECT_EQ(page.items[0].id, made.id);
  EXPECT_FALSE(page.next_cursor);

  EXPECT_TRUE(remove(org1_, made.id, user1_));
  EXPECT_FALSE(get(org1_, made.id));
  EXPECT_FALSE(remove(org1_, made.id, user1_)) << "already gone";
  EXPECT_TRUE(list(org1_, 50, std::nullopt).items.empty());
}

TEST_F(SshKeyStoreTest, DuplicateInOneOrgIsConflictButAnotherOrgMayRegisterIt) {
  auto key = random_key();
  create(org1_, "first", key, user1_);
  try {
    create(org1_, "again", key, user1_);
    FAIL() << "expected a conflict";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kConflict);
    EXPECT_EQ(e.details()["field"], "public_key");
    EXPECT_EQ(e.details()["fingerprint"], key.fingerprint);
  }
  // The same key with another comment is still the same key.
  auto same_other_comment = key;
  same_other_comment.comment = "other@host";
  EXPECT_THROW(create(org1_, "third", same_other_comment, user1_), Error);
  EXPECT_NO_THROW(create(org2_, "theirs", key, user2_));
  EXPECT_EQ(count("SELECT count(*) FROM ssh_keys"), 2);
  EXPECT_EQ(count("SELECT count(*) FROM audit_log WHERE action = 'ssh_key.create'"), 2)
      << "a refused create writes no audit row";
}

TEST_F(SshKeyStoreTest, AnotherOrgCanNeitherSeeNorDelete) {
  auto mine = create(org1_, "mine", random_key(), user1_);
  EXPECT_FALSE(get(org2_, mine.id));
  EXPECT_FALSE(remove(org2_, mine.id, user2_));
  EXPECT_TRUE(list(org2_, 50, std::nullopt).items.empty());
  EXPECT_TRUE(get(org1_, mine.id)) << "still there";
  EXPECT_EQ(count("SELECT count(*) FROM audit_log WHERE action = 'ssh_key.delete'"), 0);
  EXPECT_FALSE(get("org_doesnotexist", mine.id));
}

TEST_F(SshKeyStoreTest, PagesWalkEveryKeyExactlyOnceInCreationOrder) {
  std::vector<std::string> ids;
  for (int i = 0; i < 5; ++i) {
    ids.push_back(create(org1_, "k" + std::to_string(i), random_key(), user1_).id);
    clock_.advance(1ms);
  }
  // Two keys share a creation time to the microsecond: the id breaks the tie.
  {
    pqxx::connection c(db_.url());
    pqxx::work tx(c);
    tx.exec_params(
        "UPDATE ssh_keys SET created_at = (SELECT created_at FROM ssh_keys WHERE id = $1)"
        " WHERE id = $2",
        ids[2], ids[3]);
    tx.commit();
  }
  create(org2_, "other org", random_key(), user2_);

  std::vector<std::string> seen;
  std::optional<std::string> cursor;
  int pages = 0;
  do {
    auto page = list(org1_, 2, cursor);
    EXPECT_LE(page.items.size(), 2u);
    for (const auto& k : page.items) seen.push_back(k.id);
    cursor = page.next_cursor;
    ASSERT_LT(++pages, 10);
  } while (cursor);
  EXPECT_EQ(pages, 3);
  ASSERT_EQ(seen.size(), 5u);
  EXPECT_EQ(std::set<std::string>(seen.begin(), seen.end()),
            std::set<std::string>(ids.begin(), ids.end()));
  // Apart from the tie, creation order.
  EXPECT_EQ(seen[0], ids[0]);
  EXPECT_EQ(seen[1], ids[1]);
  EXPECT_EQ(seen[4], ids[4]);

  // A page that ends exactly at the last key says so.
  auto all = list(org1_, 5, std::nullopt);
  EXPECT_EQ(all.items.size(), 5u);
  EXPECT_FALSE(all.next_cursor);
}

TEST_F(SshKeyStoreTest, ACursorSurvivesDeletionOfItsKey) {
  for (int i = 0; i < 3; ++i) {
    create(org1_, "k", random_key(), user1_);
    clock_.advance(1ms);
  }
  auto first = list(org1_, 1, std::nullopt);
  ASSERT_TRUE(first.next_cursor);
  remove(org1_, first.items[0].id, user1_);
  EXPECT_EQ(list(org1_, 10, first.next_cursor).items.size(), 2u);
}

TEST_F(SshKeyStoreTest, MalformedCursorsAreInvalidRequestNamingCursor) {
  for (std::string bad : {"", "x", "123", ".key_abc", "12.usr_0123456789012345678901",
                          "-5.key_0123456789012345678901", "1e5.key_0123456789012345678901",
                          "12.key_'; DROP TABLE ssh_keys; --"}) {
    try {
      list(org1_, 10, bad);
      FAIL() << bad;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidRequest) << bad;
      EXPECT_EQ(e.details()["field"], "cursor") << bad;
    }
  }
}

TEST_F(SshKeyStoreTest, ConcurrentCreatesOfOneKeyLeaveExactlyOneRow) {
  auto key = random_key();
  std::atomic<int> created{0}, conflicts{0}, other{0};
  std::vector<std::thread> threads;
  constexpr int kThreads = 8;
  std::latch go(kThreads);  // all create at once
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      go.arrive_and_wait();
      try {
        create(org1_, "race " + std::to_string(i), key, user1_);
        ++created;
      } catch (const Error& e) {
        (e.code() == ErrorCode::kConflict ? conflicts : other)++;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(created.load(), 1);
  EXPECT_EQ(conflicts.load(), 7);
  EXPECT_EQ(other.load(), 0);
  EXPECT_EQ(count("SELECT count(*) FROM ssh_keys"), 1);
}

TEST_F(SshKeyStoreTest, CreateAndDeleteWriteAuditRows) {
  auto made = create(org1_, "audited", random_key(), user1_);
  remove(org1_, made.id, user1_);
  pqxx::connection c(db_.url());
  pqxx::nontransaction tx(c);
  auto rows = tx.exec(
      "SELECT action, org_id, actor_user_id, target, ip, request_id, details->>'fingerprint'"
      " FROM audit_log WHERE action LIKE 'ssh_key.%' ORDER BY id");
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0][0].as<std::string>(), "ssh_key.create");
  EXPECT_EQ(rows[1][0].as<std::string>(), "ssh_key.delete");
  for (const auto& row : rows) {
    EXPECT_EQ(row[1].as<std::string>(), org1_);
    EXPECT_EQ(row[2].as<std::string>(), user1_);
    EXPECT_EQ(row[3].as<std::string>(), made.id);
    EXPECT_EQ(row[4].as<std::string>(), "203.0.113.7");
    EXPECT_EQ(row[5].as<std::string>(), "req_test");
    EXPECT_EQ(row[6].as<std::string>(), made.fingerprint);
  }
}

TEST_F(SshKeyStoreTest, NamesWithSqlMetacharactersAreStoredVerbatim) {
  std::string name = "'); DELETE FROM ssh_keys; -- \\ \"x\" %_";
  auto made = create(org1_, name, random_key(), user1_);
  EXPECT_EQ(get(org1_, made.id)->name, name);
}

}  // namespace ssh_key_store_pgtest
}  // namespace gpurent::identity
