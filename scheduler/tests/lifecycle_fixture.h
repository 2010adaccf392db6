// The lifecycle worker's PostgreSQL tests' starting point: the scheduler fixture with a test
// clock the runs move, a booking use case and the worker, and helpers that report agent tasks
// as the agent module does.
#pragma once

#include "identity/org_admin_store.h"
#include "inventory/catalog_copy.h"
#include "inventory/catalog_store.h"
#include "inventory/price_store.h"
#include "scheduler/booking.h"
#include "scheduler/lifecycle.h"
#include "scheduler/lifecycle_rules.h"
#include "scheduler/tests/scheduler_fixture.h"

#include <gtest/gtest.h>

#include <pqxx/pqxx>

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace gpurent::scheduler {

using H = std::chrono::hours;
using std::chrono::minutes;
using std::chrono::seconds;

class LifecycleTest : public SchedulerTest {
 protected:
  static constexpr seconds kPoll{5};
  static constexpr minutes kTimeout{10};
  // A second past a check or a timeout the last run set: the test clock moves on between
  // runs, so an exact instant could fall a few microseconds short of it.
  static constexpr seconds kAfter = kPoll + seconds(1);
  static constexpr seconds kAfterTimeout = kTimeout + seconds(1);

  LifecycleTest() : t0_(clock_.now()) {}

  Period from_now(H from, H to) const { return {t0_ + from, t0_ + to}; }

  // A run at `at` (or just after: the test clock keeps moving), the clock moved there first,
  // as in production, where the stores' own times (task creation, state changes) and the
  // worker's `now` come from one clock. Never backwards: a time already passed runs now.
  int run(Timestamp at) {
    auto ahead = std::chrono::duration_cast<std::chrono::microseconds>(at - clock_.now());
    if (ahead.count() > 0) clock_.advance(ahead);
    return lifecycle_.run_once(pool_, clock_.now());
  }

  RentalRecord rental(const std::string& id) {
    return *read([&](Tx& tx) { return rentals_.get_any(tx, id); });
  }

  std::vector<RentalState> states(const Tenant& t, const std::string& id) {
    std::vector<RentalState> out;
    for (const auto& e : read([&](Tx& tx) { return rentals_.events(tx, t.org_id, id); })) {
      out.push_back(e.to_state);
    }
    return out;
  }

  std::vector<AgentTask> tasks(const std::string& id) {
    return read([&](Tx& tx) { return tasks_.for_rental(tx, id); });
  }

  // Reports the task as the agent module does: recorded, and the lifecycle told in the same
  // transaction. Whether it was unfinished.
  bool report(const AgentTask& t, bool ok) {
    return transact([&](Tx& tx) {
      if (!tasks_.complete(tx, t.id, ok, ok ? "done" : "broke")) return false;
      lifecycle_.task_finished(tx, t, ok, clock_.now());
      return true;
    });
  }

  // Reports every unfinished task of the rental as the agent would, and those its reports
  // make (the install_access a provision's success brings), until none is left; how many.
  int complete_all(const std::string& id, bool ok) {
    int n = 0;
    for (bool more = true; more;) {
      more = false;
      for (const auto& t : tasks(id)) {
        if (t.state == TaskState::kSucceeded || t.state == TaskState::kFailed) continue;
        if (report(t, ok)) {
          ++n;
          more = true;
        }
      }
    }
    return n;
  }

  // Records the outcomes without telling the lifecycle (reports that came another way): its
  // own checks find them. How many.
  int complete_quietly(const std::string& id, bool ok) {
    int n = 0;
    for (const auto& t : tasks(id)) {
      if (t.state == TaskState::kSucceeded || t.state == TaskState::kFailed) continue;
      n += transact([&](Tx& tx) { return tasks_.complete(tx, t.id, ok, ok ? "done" : "broke"); });
    }
    return n;
  }

  // The node's unfinished tasks, oldest first.
  std::vector<AgentTask> node_tasks(const std::string& node_id) {
    return read([&](Tx& tx) { return tasks_.queued_for_node(tx, node_id, 100); });
  }

  // The node's GPU indices whose wipe has not succeeded since a tenant could reach them.
  std::vector<int> unwiped(const std::string& node_id) {
    pqxx::connection c(db_.url());
    pqxx::nontransaction q(c);
    std::vector<int> out;
    for (const auto& row : q.exec_params(
             "SELECT idx FROM gpus WHERE node_id = $1 AND unwiped_since IS NOT NULL ORDER BY idx",
             node_id)) {
      out.push_back(row[0].as<int>());
    }
    return out;
  }

  std::string node_state(const std::string& id) {
    return read([&](Tx& tx) { return nodes_.get(tx, id)->node.state; });
  }

  std::string pending(const Tenant& t, Timestamp expires) {
    auto r = booking(t, std::nullopt, {}, from_now(H(0), H(24)), RentalState::kPending);
    r.wait_for_capacity = true;
    r.pending_expires_at = expires;
    return transact([&](Tx& tx) { return rentals_.create(tx, r).id; });
  }

  // The SSH capability as the tests need it: no keys or host certificates, and the login
  // probe a test makes (none unless it sets `probe`).
  struct TestAccess final : AccessMaterial {
    std::vector<std::string> authorized_keys(Tx&, const RentalRecord&) override { return {}; }
    std::vector<std::string> host_certificates(Tx&, const std::string&) override { return {}; }
    std::optional<nlohmann::json> probe(Tx& tx, const RentalRecord& r, Timestamp now) override {
      return make_probe ? make_probe(tx, r, now) : std::nullopt;
    }
    std::function<std::optional<nlohmann::json>(Tx&, const RentalRecord&, Timestamp)> make_probe;
  };

  Timestamp t0_;
  TestAccess access_;
  inventory::CatalogStore catalog_{clock_};
  inventory::PriceStore prices_{clock_, "RUB"};
  identity::OrgAdminStore orgs_{clock_};
  // Announcements never arrive here: every read loads in its transaction, as a replica whose
  // listener is down does.
  CapacityIndex capacity_{clock_, candidates_, [] { return false; }};
  // Likewise the catalog: read from the stores each time, so a test may change it at will.
  inventory::CatalogCopy catalog_copy_{catalog_, prices_, [] { return false; }};
  Booking booking_{
      clock_, catalog_copy_, rentals_, candidates_, capacity_, orgs_, {.cleaning_window = kWindow}};
  Lifecycle lifecycle_{rentals_,
                       tasks_,
                       nodes_,
                       booking_,
                       {.provisioning_timeout = kTimeout,
                        .releasing_timeout = kTimeout,
                        .poll = kPoll,
                        .max_attempts = 3},
                       &access_};
};

}  // namespace gpurent::scheduler
