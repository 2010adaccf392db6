// Table tests of the lifecycle worker's pure decisions (scheduler/lifecycle_rules.h).
#include "scheduler/lifecycle_rules.h"

#include <gtest/gtest.h>

#include <optional>
#include <regex>
#include <string>
#include <vector>

namespace gpurent::scheduler {
namespace lifecycle_rules_test {

using S = TaskState;
using P = ProvisioningStep;
using R = ReleasingStep;

const Timestamp kNow = Timestamp(std::chrono::seconds(1'893'456'000));
const Timestamp kLater = kNow + std::chrono::minutes(10);
const Timestamp kEarlier = kNow - std::chrono::minutes(10);

TEST(ProvisioningStepTest, Table) {
  using O = std::optional<TaskState>;
  const O none = std::nullopt;
  struct Row {
    O provision;
    O access;
    int attempt;
    Timestamp deadline;
    ProvisioningStep want;
  };
  const std::vector<Row> rows = {
      {S::kSucceeded, S::kSucceeded, 0, kLater, P::kActive},
      // Success counts even past the deadline: the work is done.
      {S::kSucceeded, S::kSucceeded, 2, kEarlier, P::kActive},
      // The provision runs: install_access waits for it.
      {S::kQueued, none, 0, kLater, P::kWait},
      {S::kDelivered, none, 1, kLater, P::kWait},
      {S::kDelivered, none, 0, kEarlier, P::kRetry},
      {S::kDelivered, none, 2, kEarlier, P::kFail},
      {S::kFailed, none, 0, kLater, P::kRetry},
      {S::kFailed, none, 2, kLater, P::kFail},
      // The provision succeeded: install_access is made now, even past the deadline (made, it
      // has a deadline of its own).
      {S::kSucceeded, none, 0, kLater, P::kMakeAccess},
      {S::kSucceeded, none, 2, kEarlier, P::kMakeAccess},
      // install_access runs, times out, fails.
      {S::kSucceeded, S::kQueued, 0, kLater, P::kWait},
      {S::kSucceeded, S::kDelivered, 1, kLater, P::kWait},
      {S::kSucceeded, S::kDelivered, 1, kEarlier, P::kRetry},
      {S::kSucceeded, S::kDelivered, 2, kEarlier, P::kFail},
      {S::kSucceeded, S::kFailed, 0, kLater, P::kRetry},
      {S::kSucceeded, S::kFailed, 1, kLater, P::kRetry},
      {S::kSucceeded, S::kFailed, 2, kLater, P::kFail},
      // An attempt made before install_access waited for the provision (both at once): a
      // failure of either ends it, success needs both.
      {S::kDelivered, S::kSucceeded, 0, kLater, P::kWait},
      {S::kFailed, S::kSucceeded, 0, kLater, P::kRetry},
      {S::kDelivered, S::kFailed, 0, kLater, P::kRetry},
      {S::kQueued, S::kQueued, 2, kEarlier, P::kFail},
      // No provision for the attempt: nothing was asked, so it cannot succeed by waiting.
      {none, none, 0, kLater, P::kRetry},
      {none, none, 2, kLater, P::kFail},
      {none, S::kSucceeded, 0, kLater, P::kRetry},
  };
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto& row = rows[i];
    EXPECT_EQ(provisioning_step(row.provision, row.access, row.attempt, 3, kNow, row.deadline),
              row.want)
        << "row " << i;
  }
}

TEST(ReleasingStepTest, Table) {
  struct Row {
    std::optional<TaskState> latest;
    int wipes;
    Timestamp deadline;
    ReleasingStep want;
  };
  const std::vector<Row> rows = {
      {S::kSucceeded, 1, kLater, R::kEnded},     {S::kSucceeded, 3, kEarlier, R::kEnded},
      {S::kQueued, 1, kLater, R::kWait},         {S::kDelivered, 2, kLater, R::kWait},
      {S::kFailed, 1, kLater, R::kRetryWipe},    {S::kQueued, 2, kEarlier, R::kRetryWipe},
      {S::kFailed, 3, kLater, R::kEndedUnwiped}, {S::kDelivered, 3, kEarlier, R::kEndedUnwiped},
      {std::nullopt, 0, kLater, R::kRetryWipe},
  };
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto& row = rows[i];
    EXPECT_EQ(releasing_step(row.latest, row.wipes, 3, kNow, row.deadline), row.want)
        << "row " << i;
  }
}

// Waiting rentals named "<org><n>:<model>", in the order they arrived.
std::vector<RentalRecord> waiting(const std::vector<std::string>& names) {
  std::vector<RentalRecord> out;
  for (const auto& name : names) {
    RentalRecord r;
    r.id = name.substr(0, name.find(':'));
    r.org_id = name.substr(0, 1);
    r.gpu_model = name.substr(name.find(':') + 1);
    out.push_back(r);
  }
  return out;
}

std::vector<std::string> ids(const std::vector<RentalRecord>& rentals) {
  std::vector<std::string> out;
  for (const auto& r : rentals) out.push_back(r.id);
  return out;
}

TEST(RoundRobinByOrgTest, OrgsTakeTurnsInTheOrderTheyJoinedAndKeepTheirOwnOrder) {
  struct Row {
    std::vector<std::string> arrived;
    std::vector<std::string> served;
  };
  const std::vector<Row> rows = {
      {{}, {}},
      {{"a1:H100"}, {"a1"}},
      {{"a1:H100", "a2:H100", "a3:H100", "b1:H100"}, {"a1", "b1", "a2", "a3"}},
      {{"b1:H100", "a1:H100", "a2:H100", "c1:H100", "b2:H100"}, {"b1", "a1", "c1", "b2", "a2"}},
      {{"a1:H100", "b1:L4", "b2:L4", "b3:L4", "a2:H100"}, {"a1", "b1", "a2", "b2", "b3"}},
  };
  for (std::size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(ids(round_robin_by_org(waiting(rows[i].arrived))), rows[i].served) << "row " << i;
  }
}

TEST(WaitlistPositionTest, CountsOnlyRequestsForTheSameModelAhead) {
  auto served =
      round_robin_by_org(waiting({"a1:H100", "a2:L4", "a3:H100", "b1:H100", "b2:L4", "c1:H100"}));
  // Served: a1 b1 c1 a2 b2 a3; H100s: a1 b1 c1 a3; L4s: a2 b2.
  auto position = [&](const std::string& id) {
    for (const auto& r : served) {
      if (r.id == id) return waitlist_position(served, r);
    }
    RentalRecord absent;
    absent.id = id;
    return waitlist_position(served, absent);
  };
  EXPECT_EQ(position("a1"), 1);
  EXPECT_EQ(position("b1"), 2);
  EXPECT_EQ(position("c1"), 3);
  EXPECT_EQ(position("a3"), 4);
  EXPECT_EQ(position("a2"), 1);
  EXPECT_EQ(position("b2"), 2);
  EXPECT_EQ(position("z9"), 0) << "not waiting";
}

TEST(RentalAccessTest, EachRentalHasALoginOfItsOwnThatEveryoneDerivesAlike) {
  const std::string a = "rnt_5dGq1WJ7mX0aB2cD3eF4gH";
  const std::string b = "rnt_5dGq1WJ7mX0aB2cD3eF4gh";  // differs in case only
  EXPECT_EQ(rental_login(a), rental_login(a));
  EXPECT_NE(rental_login(a), rental_login(b));
  // A name useradd takes, as the agent checks it (agent/access_files.cpp).
  EXPECT_TRUE(std::regex_match(rental_login(a), std::regex("gpu-[0-9a-f]{10}"))) << rental_login(a);
  EXPECT_EQ(rental_principal(a), a);
}

}  // namespace lifecycle_rules_test
}  // namespace gpurent::scheduler
