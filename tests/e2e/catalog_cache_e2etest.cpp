// The catalog cache end to end: GET /v1/gpu-models and GET /v1/images are answered from a
// snapshot (a change the database does not announce stays invisible), every replica drops
// its snapshot when any replica, or anyone in psql, changes the catalog, and a replica whose
// listener lost its connection drops its snapshot when it reconnects.
#include "core/id.h"
#include "tests/support/http_client.h"
#include "tests/support/pg_harness.h"
#include "tests/support/server_process.h"
#include "tests/support/wait_for.h"

#include <gtest/gtest.h>

#include <pqxx/pqxx>

#include <chrono>
#include <functional>
#include <latch>
#include <thread>

namespace gpurent::testing::catalog_cache_e2e {

using Headers = std::map<std::string, std::string>;
using nlohmann::json;

class CatalogCacheE2E : public ::testing::Test {
 protected:
  std::unique_ptr<ServerProcess> replica() {
    return std::make_unique<ServerProcess>(
        ServerOptions{.database_url = db_.url(),
                      .flags = {"--rate_limit_per_credential=0", "--rate_limit_per_ip=0"}});
  }
  void SetUp() override {
    a_ = replica();
    b_ = replica();
    auto s = post(
        *a_, "/v1/auth/signup",
        {{"email", "root@example.com"}, {"password", "a good passphrase"}, {"org_name", "Root"}});
    ASSERT_EQ(s.status, 201) << s.body;
    sql("UPDATE users SET is_platform_admin = true");
    auto l = post(*a_, "/v1/auth/login",
                  {{"email", "root@example.com"}, {"password", "a good passphrase"}});
    ASSERT_EQ(l.status, 200) << l.body;
    std::string cookie = l.header("set-cookie");
    admin_ = {{"Cookie", cookie.substr(0, cookie.find(';'))},
              {"X-CSRF-Token", l.json().value("csrf_token", "")}};
  }

  HttpResult post(ServerProcess& s, const std::string& path, const json& body,
                  Headers headers = {}) {
    headers.emplace("Content-Type", "application/json");
    return http_request(s.port(), "POST", path, body.dump(), headers);
  }
  json get(ServerProcess& s, const std::string& path) {
    auto r = http_request(s.port(), "GET", path, "", admin_);
    EXPECT_EQ(r.status, 200) << path << " " << r.body;
    return r.status == 200 ? r.json() : json();
  }
  std::set<std::string> image_names(ServerProcess& s) {
    std::set<std::string> out;
    json body = get(s, "/v1/images");
    for (const auto& i : body["items"]) out.insert(i["name"].get<std::string>());
    return out;
  }
  void sql(const std::string& statement) {
    pqxx::connection c(db_.url());
    pqxx::work tx(c);
    tx.exec(statement);
    tx.commit();
  }
  // An image written behind the cache's back: triggers are off for this transaction (a
  // superuser's session_replication_role), so no NOTIFY goes out.
  void insert_image_silently(const std::string& name) {
    sql("SET session_replication_role = replica; INSERT INTO images (id, name, os,"
        " driver_version, cuda_version, status, created_at) VALUES ('" +
        new_id(id_prefix::kImage) + "', '" + name +
        "', 'Ubuntu 24.04', '570.124.06', '12.8', 'active', now())");
  }
  long long metric(ServerProcess& s, const std::string& name) {
    return read_metric(s.port(), name);
  }
  // Polls `ok` until it holds (invalidation travels through PostgreSQL), up to the shared
  // generous limit.
  static bool eventually(const std::function<bool()>& ok) {
    return wait_for(ok, kWaitLimit, std::chrono::milliseconds(20));
  }

  TestDatabase db_;
  std::unique_ptr<ServerProcess> a_, b_;
  Headers admin_;
};

TEST_F(CatalogCacheE2E, ServedFromTheSnapshotUntilTheDatabaseAnnouncesAChange) {
  EXPECT_TRUE(image_names(*a_).empty());
  long long misses = metric(*a_, "gpurent_catalog_cache_misses_total");
  insert_image_silently("silent");
  // Nothing announced the row, so the snapshot still answers: the database is not read.
  EXPECT_TRUE(image_names(*a_).empty());
  EXPECT_EQ(metric(*a_, "gpurent_catalog_cache_misses_total"), misses);
  EXPECT_GT(metric(*a_, "gpurent_catalog_cache_hits_total"), 0);
  sql("NOTIFY gpurent_catalog");
  EXPECT_TRUE(eventually([&] { return image_names(*a_).count("silent") == 1; }));
  EXPECT_EQ(metric(*a_, "gpurent_catalog_cache_misses_total"), misses + 1);
}

TEST_F(CatalogCacheE2E, AChangeOnOneReplicaReachesTheOther) {
  EXPECT_TRUE(image_names(*a_).empty());
  EXPECT_TRUE(image_names(*b_).empty());
  auto created = post(*a_, "/v1/admin/images",
                      {{"name", "fresh"},
                       {"os", "Ubuntu 24.04"},
                       {"driver_version", "580.65.06"},
                       {"cuda_version", "13.0"}},
                      admin_);
  ASSERT_EQ(created.status, 201) << created.body;
  // The replica that made the change sees it at once; the other within moments.
  EXPECT_EQ(image_names(*a_).count("fresh"), 1u);
  EXPECT_TRUE(eventually([&] { return image_names(*b_).count("fresh") == 1; }));

  auto gone =
      post(*b_, "/v1/admin/images/" + created.json()["id"].get<std::string>() + "/deprecate",
           json::object(), admin_);
  ASSERT_EQ(gone.status, 200) << gone.body;
  EXPECT_EQ(image_names(*b_).count("fresh"), 0u);
  EXPECT_TRUE(eventually([&] { return image_names(*a_).count("fresh") == 0; }));
}

TEST_F(CatalogCacheE2E, AChangeMadeByHandReachesEveryReplica) {
  auto tdp = [&](ServerProcess& s) {
    json body = get(s, "/v1/gpu-models");
    for (const auto& m : body["items"]) {
      if (m["name"] == "H100-SXM5-80GB") return m["tdp_w"].get<int>();
    }
    return -1;
  };
  EXPECT_EQ(tdp(*a_), 700);
  EXPECT_EQ(tdp(*b_), 700);
  sql("UPDATE gpu_models SET tdp_w = 699 WHERE name = 'H100-SXM5-80GB'");
  EXPECT_TRUE(eventually([&] { return tdp(*a_) == 699 && tdp(*b_) == 699; }));
}

// Notifications sent while a replica's listener is disconnected are lost, so reconnecting
// drops the snapshot: the change below is never announced, yet the replica shows it.
TEST_F(CatalogCacheE2E, AReplicaWhoseListenerReconnectsDropsItsSnapshot) {
  EXPECT_TRUE(image_names(*a_).empty());
  insert_image_silently("while-away");
  sql("SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
      " WHERE application_name = 'gpurent_listener' AND datname = current_database()");
  EXPECT_TRUE(eventually([&] { return metric(*a_, "gpurent_notify_reconnects_total") >= 1; }));
  EXPECT_TRUE(eventually([&] { return image_names(*a_).count("while-away") == 1; }));
  EXPECT_TRUE(eventually([&] { return image_names(*b_).count("while-away") == 1; }));
}

// A read served from memory is answered on the network thread; one that must read the
// database (a snapshot to rebuild, a credential not yet in memory) is handed to a worker
// and answers the same. Both paths, with a session and with an API token.
TEST_F(CatalogCacheE2E, CachedReadsAnswerInlineAndTheRestOnAWorker) {
  auto token = post(*a_, "/v1/api-tokens", {{"name", "ci"}, {"scopes", {"rentals:read"}}}, admin_);
  ASSERT_EQ(token.status, 201) << token.body;
  Headers bearer = {{"Authorization", "Bearer " + token.json()["token"].get<std::string>()}};
  auto inline_answered = [&] { return metric(*a_, "gpurent_http_inline_answered_total"); };
  auto diverted = [&] { return metric(*a_, "gpurent_http_inline_diverted_total"); };
  for (const Headers* who : {&admin_, &bearer}) {
    // Cold: the snapshot is dropped, so the first read must build it on a worker.
    long long invalidations = metric(*a_, "gpurent_catalog_cache_invalidations_total");
    sql("NOTIFY gpurent_catalog");
    ASSERT_TRUE(eventually(
        [&] { return metric(*a_, "gpurent_catalog_cache_invalidations_total") > invalidations; }));
    long long answered = inline_answered(), handed = diverted();
    auto cold = http_request(a_->port(), "GET", "/v1/gpu-models", "", *who);
    ASSERT_EQ(cold.status, 200) << cold.body;
    EXPECT_EQ(diverted(), handed + 1) << "the snapshot was built on a worker";
    EXPECT_EQ(inline_answered(), answered);
    // Warm: the same answer, from memory, on the network thread.
    answered = inline_answered();
    handed = diverted();
    for (int i = 0; i < 5; ++i) {
      auto warm = http_request(a_->port(), "GET", "/v1/gpu-models", "", *who);
      ASSERT_EQ(warm.status, 200) << warm.body;
      EXPECT_EQ(warm.json(), cold.json());
    }
    EXPECT_EQ(inline_answered(), answered + 5);
    EXPECT_EQ(diverted(), handed);
  }
  // A well-formed secret never seen is looked up in the database, on a worker, and refused
  // there; a malformed one is refused on the network thread without a lookup.
  long long handed = diverted(), answered = inline_answered();
  auto unknown = http_request(a_->port(), "GET", "/v1/gpu-models", "",
                              {{"Authorization", "Bearer gpr_" + std::string(64, 'a')}});
  EXPECT_EQ(unknown.status, 401) << unknown.body;
  EXPECT_EQ(diverted(), handed + 1);
  auto malformed = http_request(a_->port(), "GET", "/v1/gpu-models", "",
                                {{"Authorization", "Bearer gpr_short"}});
  EXPECT_EQ(malformed.status, 401) << malformed.body;
  EXPECT_EQ(diverted(), handed + 1);
  EXPECT_EQ(inline_answered(), answered + 1);
}

TEST_F(CatalogCacheE2E, ConcurrentReadersDuringChangesNeverSeeAnError) {
  std::atomic<bool> stop{false};
  std::atomic<int> errors{0}, reads{0};
  std::vector<std::thread> readers;
  constexpr int kReaders = 4;
  std::latch reading(kReaders + 1);  // the changes start once every reader is running
  for (int i = 0; i < kReaders; ++i) {
    readers.emplace_back([&, i] {
      ServerProcess& s = i % 2 ? *a_ : *b_;
      reading.arrive_and_wait();
      while (!stop) {
        auto r = http_request(s.port(), "GET", i < 2 ? "/v1/images" : "/v1/gpu-models", "", admin_);
        if (r.status != 200) ++errors;
        ++reads;
      }
    });
  }
  reading.arrive_and_wait();
  for (int i = 0; i < 10; ++i) {
    auto r = post(i % 2 ? *a_ : *b_, "/v1/admin/images",
                  {{"name", "img-" + std::to_string(i)},
                   {"os", "Ubuntu 22.04"},
                   {"driver_version", "550.54.15"},
                   {"cuda_version", "12.4"}},
                  admin_);
    EXPECT_EQ(r.status, 201) << r.body;
  }
  stop = true;
  for (auto& t : readers) t.join();
  EXPECT_EQ(errors.load(), 0);
  EXPECT_GT(reads.load(), 0);
  EXPECT_TRUE(
      eventually([&] { return image_names(*a_).size() == 10 && image_names(*b_).size() == 10; }));
}

}  // namespace gpurent::testing::catalog_cache_e2e
