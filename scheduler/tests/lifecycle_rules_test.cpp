// Table tests of the lifecycle worker's pure decisions (scheduler/lifecycle_rules.h).
#include "scheduler/lifecycle_rules.h"

#include <gtest/gtest.h>

#include <optional>
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
  struct Row {
    std::vector<TaskState> current;
    int attempt;
    Timestamp deadline;
    ProvisioningStep want;
  };
  const std::vector<Row> rows = {
      {{S::kSucceeded, S::kSucceeded}, 0, kLater, P::kActive},
      // Success counts even past the deadline: the work is done.
      {{S::kSucceeded, S::kSucceeded}, 2, kEarlier, P::kActive},
      {{S::kQueued, S::kSucceeded}, 0, kLater, P::kWait},
      {{S::kDelivered, S::kDelivered}, 1, kLater, P::kWait},
      {{S::kFailed, S::kSucceeded}, 0, kLater, P::kRetry},
      {{S::kDelivered, S::kQueued}, 0, kEarlier, P::kRetry},
      {{S::kFailed, S::kQueued}, 2, kLater, P::kFail},
      {{S::kDelivered, S::kDelivered}, 2, kEarlier, P::kFail},
      // No tasks at all for the attempt: nothing was asked, so it cannot succeed by waiting.
      {{}, 0, kLater, P::kRetry},
      {{}, 2, kLater, P::kFail},
  };
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto& row = rows[i];
    EXPECT_EQ(provisioning_step(row.current, row.attempt, 3, kNow, row.deadline), row.want)
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

}  // namespace lifecycle_rules_test
}  // namespace gpurent::scheduler
