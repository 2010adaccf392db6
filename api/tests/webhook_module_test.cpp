// Tests the webhook deliveries' families on /metrics: this replica's attempts by outcome and
// the deliveries it gave up; the outbox's backlog with its ages taken at the scrape, and
// every series there at zero before the worker's first look.
#include "api/modules/webhook_module.h"
#include "api/tests/metric_sample.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sstream>

namespace gpurent {
namespace webhook_module_test {

using namespace std::chrono_literals;
using testing::HasSubstr;

using metric_sample::sample;

const std::string kDelivered = "gpurent_webhook_attempts_total{outcome=\"delivered\"}";
const std::string kFailed = "gpurent_webhook_attempts_total{outcome=\"failed\"}";
const std::string kGivenUp = "gpurent_webhook_deliveries_given_up_total";
const std::string kPending = "gpurent_webhook_deliveries_pending";
const std::string kOldest = "gpurent_webhook_deliveries_oldest_pending_age_seconds";
const std::string kOverdue = "gpurent_webhook_deliveries_overdue_seconds";

TEST(WebhookDeliveryMetrics, BeforeTheFirstLookEverySeriesIsThereAtZero) {
  std::string out;
  append_webhook_delivery_metrics(out, {}, SystemClock().now());
  for (const auto& series : {kDelivered, kFailed, kGivenUp, kPending, kOldest, kOverdue})
    EXPECT_EQ(sample(out, series), "0") << series;
  for (const std::string family : {"gpurent_webhook_attempts_total counter",
                                   "gpurent_webhook_deliveries_given_up_total counter",
                                   "gpurent_webhook_deliveries_pending gauge",
                                   "gpurent_webhook_deliveries_oldest_pending_age_seconds gauge",
                                   "gpurent_webhook_deliveries_overdue_seconds gauge"}) {
    EXPECT_THAT(out, HasSubstr("# TYPE " + family + "\n"));
    EXPECT_THAT(out, HasSubstr("# HELP " + family.substr(0, family.find(' ')) + " "));
  }
}

TEST(WebhookDeliveryMetrics, CountsAndTheBacklogWithItsAgesAtTheScrape) {
  Timestamp now = SystemClock().now();
  webhooks::DeliveryStats stats{
      .delivered = 7,
      .failed = 3,
      .given_up = 1,
      .backlog = webhooks::OutboxBacklog{
          .pending = 4, .oldest_created_at = now - 90s - 500ms, .first_due_at = now - 30s}};
  std::string out;
  append_webhook_delivery_metrics(out, stats, now);
  EXPECT_EQ(sample(out, kDelivered), "7");
  EXPECT_EQ(sample(out, kFailed), "3");
  EXPECT_EQ(sample(out, kGivenUp), "1");
  EXPECT_EQ(sample(out, kPending), "4");
  EXPECT_EQ(sample(out, kOldest), "90");
  EXPECT_EQ(sample(out, kOverdue), "30");

  // The same look a minute later: the ages have grown with the scrape's clock.
  out.clear();
  append_webhook_delivery_metrics(out, stats, now + 60s);
  EXPECT_EQ(sample(out, kOldest), "150");
  EXPECT_EQ(sample(out, kOverdue), "90");
}

TEST(WebhookDeliveryMetrics, NothingIsOverdueWhileTheFirstDueIsAhead) {
  Timestamp now = SystemClock().now();
  webhooks::DeliveryStats stats{.backlog = webhooks::OutboxBacklog{.pending = 1,
                                                                   .oldest_created_at = now - 10s,
                                                                   .first_due_at = now + 2min}};
  std::string out;
  append_webhook_delivery_metrics(out, stats, now);
  EXPECT_EQ(sample(out, kPending), "1");
  EXPECT_EQ(sample(out, kOldest), "10");
  EXPECT_EQ(sample(out, kOverdue), "0");
}

}  // namespace webhook_module_test
}  // namespace gpurent
