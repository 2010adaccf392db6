// The starting point of the webhooks' PostgreSQL tests: a fresh migrated database, orgs
// inserted directly, the test clock, the store, and a sender that answers as a test says
// and keeps what it was sent.
#pragma once

#include "core/audit.h"
#include "core/clock.h"
#include "core/db_pool.h"
#include "core/id.h"
#include "tests/support/pg_harness.h"
#include "webhooks/delivery_worker.h"
#include "webhooks/sender.h"
#include "webhooks/webhook_store.h"

#include <gtest/gtest.h>

#include <pqxx/pqxx>

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace gpurent::webhooks {

struct SentRequest {
  std::string url;
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;

  std::string header(const std::string& name) const {
    for (const auto& [n, v] : headers) {
      if (n == name) return v;
    }
    return "";
  }
};

class FakeSender final : public Sender {
 public:
  SendResult post(const WebhookUrl& url, const std::string& body,
                  const std::vector<std::pair<std::string, std::string>>& headers,
                  std::chrono::milliseconds) override {
    std::lock_guard lock(mutex_);
    sent_.push_back({url.text(), body, headers});
    return answer_ ? answer_(sent_.back()) : SendResult{200, ""};
  }
  void answer_with(std::function<SendResult(const SentRequest&)> answer) {
    std::lock_guard lock(mutex_);
    answer_ = std::move(answer);
  }
  std::vector<SentRequest> sent() {
    std::lock_guard lock(mutex_);
    return sent_;
  }

 private:
  std::mutex mutex_;
  std::vector<SentRequest> sent_;
  std::function<SendResult(const SentRequest&)> answer_;
};

class WebhookTest : public ::testing::Test {
 protected:
  template <typename Fn>
  auto transact(Fn&& fn) {
    return pool_.transact("webhook_test", std::forward<Fn>(fn));
  }

  std::string org(const std::string& name = "Acme") {
    std::string id = new_id(id_prefix::kOrg);
    exec("INSERT INTO orgs (id, name) VALUES ('" + id + "', '" + name + "')");
    return id;
  }

  // A webhook of `org_id`: (id, secret).
  std::pair<std::string, std::string> webhook(const std::string& org_id,
                                              std::vector<std::string> events,
                                              const std::string& url = "https://hooks.example/in") {
    auto [record, secret] =
        transact([&](Tx& tx) { return store_.create(tx, org_id, url, events, Actor{}); });
    return {record.id, secret};
  }

  long long count(const std::string& sql) {
    if (!checker_) checker_ = std::make_unique<pqxx::connection>(db_.url());
    pqxx::nontransaction tx(*checker_);
    auto r = tx.exec(sql);
    return r[0][0].is_null() ? 0 : r[0][0].as<long long>();
  }
  std::string text(const std::string& sql) {
    if (!checker_) checker_ = std::make_unique<pqxx::connection>(db_.url());
    pqxx::nontransaction tx(*checker_);
    auto r = tx.exec(sql);
    return r.empty() || r[0][0].is_null() ? "" : r[0][0].as<std::string>();
  }
  void exec(const std::string& sql) {
    pqxx::connection c(db_.url());
    pqxx::work tx(c);
    tx.exec(sql);
    tx.commit();
  }

  testing::TestDatabase db_;
  PgPool pool_{{.url = db_.url(), .size = 4}};
  TestClock clock_;
  WebhookStore store_{clock_};
  FakeSender sender_;
  std::unique_ptr<pqxx::connection> checker_;
};

}  // namespace gpurent::webhooks
