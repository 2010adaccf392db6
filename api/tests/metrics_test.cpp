// Tests Metrics: per route/method/status counters, cumulative histograms and collectors,
// as rendered in the Prometheus text format.
#include "api/metrics.h"
#include "api/tests/metric_sample.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <regex>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace gpurent::http {
namespace metrics_test {

using namespace std::chrono_literals;
using testing::HasSubstr;
using testing::Not;

using metric_sample::sample;

std::string requests(const std::string& route, const std::string& method,
                     const std::string& status) {
  return "gpurent_http_requests_total{route=\"" + route + "\",method=\"" + method + "\",status=\"" +
         status + "\"}";
}

std::string bucket(const std::string& route, const std::string& le) {
  return "gpurent_http_request_duration_seconds_bucket{route=\"" + route + "\",le=\"" + le + "\"}";
}

class MetricsTest : public testing::Test {
 protected:
  Metrics metrics_{{"/healthz", "/v1/rentals/{id}"}};
};

TEST_F(MetricsTest, Slots) {
  EXPECT_EQ(metrics_.static_slot(), 2u);
  EXPECT_EQ(metrics_.unmatched_slot(), 3u);
}

TEST_F(MetricsTest, EmptyRenderHasOnlyHeaders) {
  std::string text = metrics_.render();
  EXPECT_THAT(text, HasSubstr("# TYPE gpurent_http_requests_total counter\n"));
  EXPECT_THAT(text, HasSubstr("# TYPE gpurent_http_request_duration_seconds histogram\n"));
  EXPECT_THAT(text, Not(HasSubstr("route=")));
}

TEST_F(MetricsTest, CountsPerRouteMethodAndStatus) {
  for (int i = 0; i < 3; ++i) metrics_.record(0, "GET", 200, 1ms);
  metrics_.record(0, "GET", 503, 1ms);
  metrics_.record(0, "HEAD", 200, 1ms);
  metrics_.record(1, "DELETE", 204, 1ms);
  metrics_.record(1, "DELETE", 404, 1ms);
  metrics_.record(metrics_.static_slot(), "GET", 304, 1ms);
  metrics_.record(metrics_.unmatched_slot(), "POST", 404, 1ms);
  std::string text = metrics_.render();
  EXPECT_EQ(sample(text, requests("/healthz", "GET", "200")), "3");
  EXPECT_EQ(sample(text, requests("/healthz", "GET", "503")), "1");
  EXPECT_EQ(sample(text, requests("/healthz", "HEAD", "200")), "1");
  EXPECT_EQ(sample(text, requests("/v1/rentals/{id}", "DELETE", "204")), "1");
  EXPECT_EQ(sample(text, requests("/v1/rentals/{id}", "DELETE", "404")), "1");
  EXPECT_EQ(sample(text, requests("static", "GET", "304")), "1");
  EXPECT_EQ(sample(text, requests("unmatched", "POST", "404")), "1");
  // Combinations never recorded are not printed.
  EXPECT_EQ(sample(text, requests("/healthz", "POST", "200")), std::nullopt);
  EXPECT_EQ(sample(text, requests("/v1/rentals/{id}", "GET", "200")), std::nullopt);
}

TEST_F(MetricsTest, UnlistedStatusGoesToItsClass) {
  metrics_.record(0, "GET", 418, 1ms);
  metrics_.record(0, "GET", 451, 1ms);
  metrics_.record(0, "GET", 599, 1ms);
  metrics_.record(0, "GET", 207, 1ms);
  metrics_.record(0, "GET", 101, 1ms);
  metrics_.record(0, "GET", 308, 1ms);
  std::string text = metrics_.render();
  EXPECT_EQ(sample(text, requests("/healthz", "GET", "4xx")), "2");
  EXPECT_EQ(sample(text, requests("/healthz", "GET", "5xx")), "1");
  EXPECT_EQ(sample(text, requests("/healthz", "GET", "2xx")), "1");
  EXPECT_EQ(sample(text, requests("/healthz", "GET", "1xx")), "1");
  EXPECT_EQ(sample(text, requests("/healthz", "GET", "3xx")), "1");
  EXPECT_EQ(sample(text, requests("/healthz", "GET", "418")), std::nullopt);
}

TEST_F(MetricsTest, NonsenseStatusCountsAsServerError) {
  metrics_.record(0, "GET", 0, 1ms);
  metrics_.record(0, "GET", 999, 1ms);
  EXPECT_EQ(sample(metrics_.render(), requests("/healthz", "GET", "5xx")), "2");
}

TEST_F(MetricsTest, UnknownMethodIsOther) {
  metrics_.record(0, "BREW", 200, 1ms);
  metrics_.record(0, "get", 200, 1ms);
  EXPECT_EQ(sample(metrics_.render(), requests("/healthz", "OTHER", "200")), "2");
}

TEST_F(MetricsTest, OutOfRangeSlotIsUnmatched) {
  metrics_.record(99, "GET", 404, 1ms);
  EXPECT_EQ(sample(metrics_.render(), requests("unmatched", "GET", "404")), "1");
}

TEST_F(MetricsTest, HistogramBucketsAreCumulative) {
  metrics_.record(1, "GET", 200, 300us);  // <= 0.0005
  metrics_.record(1, "GET", 200, 1ms);    // == 0.001, counts in that bucket
  metrics_.record(1, "GET", 200, 3ms);    // <= 0.005
  metrics_.record(1, "GET", 200, 700ms);  // <= 1
  metrics_.record(1, "GET", 200, 20s);    // beyond the last bound: only +Inf
  std::string text = metrics_.render();
  const std::string r = "/v1/rentals/{id}";
  EXPECT_EQ(sample(text, bucket(r, "0.0005")), "1");
  EXPECT_EQ(sample(text, bucket(r, "0.001")), "2");
  EXPECT_EQ(sample(text, bucket(r, "0.0025")), "2");
  EXPECT_EQ(sample(text, bucket(r, "0.005")), "3");
  EXPECT_EQ(sample(text, bucket(r, "0.5")), "3");
  EXPECT_EQ(sample(text, bucket(r, "1")), "4");
  EXPECT_EQ(sample(text, bucket(r, "10")), "4");
  EXPECT_EQ(sample(text, bucket(r, "+Inf")), "5");
  EXPECT_EQ(sample(text, "gpurent_http_request_duration_seconds_count{route=\"" + r + "\"}"), "5");
  auto sum = sample(text, "gpurent_http_request_duration_seconds_sum{route=\"" + r + "\"}");
  ASSERT_TRUE(sum);
  EXPECT_NEAR(std::stod(*sum), 20.7043, 1e-9);
  // Routes without requests have no histogram.
  EXPECT_EQ(sample(text, bucket("/healthz", "+Inf")), std::nullopt);
}

TEST_F(MetricsTest, EveryBucketIsPrintedMonotonicAndInfEqualsCount) {
  for (int i = 0; i < 50; ++i) metrics_.record(0, "GET", 200, std::chrono::microseconds(i * 997));
  std::string text = metrics_.render();
  std::uint64_t previous = 0;
  for (double le : Metrics::kBuckets) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", le);
    auto v = sample(text, bucket("/healthz", buf));
    ASSERT_TRUE(v) << buf;
    std::uint64_t n = std::stoull(*v);
    EXPECT_GE(n, previous) << buf;
    previous = n;
  }
  EXPECT_EQ(sample(text, bucket("/healthz", "+Inf")), "50");
  EXPECT_EQ(sample(text, "gpurent_http_request_duration_seconds_count{route=\"/healthz\"}"), "50");
  EXPECT_EQ(previous, 50u);  // the slowest (~49 ms) fits under 10 s
}

TEST_F(MetricsTest, SumsAcrossThreads) {
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([this] {
      for (int i = 0; i < 1000; ++i) metrics_.record(0, "GET", 200, 1ms);
    });
  }
  for (auto& t : threads) t.join();
  std::string text = metrics_.render();
  EXPECT_EQ(sample(text, requests("/healthz", "GET", "200")), "8000");
  EXPECT_EQ(sample(text, bucket("/healthz", "+Inf")), "8000");
}

TEST_F(MetricsTest, CollectorsAreAppendedInOrder) {
  metrics_.record(0, "GET", 200, 1ms);
  metrics_.add_collector([](std::string& out) { out += "gpurent_db_pool_in_use 3\n"; });
  metrics_.add_collector([](std::string& out) { out += "gpurent_build_info{commit=\"x\"} 1\n"; });
  std::string text = metrics_.render();
  auto pool = text.find("gpurent_db_pool_in_use 3\n");
  auto build = text.find("gpurent_build_info{commit=\"x\"} 1\n");
  ASSERT_NE(pool, std::string::npos);
  ASSERT_NE(build, std::string::npos);
  EXPECT_LT(pool, build);
  EXPECT_GT(pool, text.find("gpurent_http_request_duration_seconds_count"));
  EXPECT_EQ(text.substr(text.size() - 33), "gpurent_build_info{commit=\"x\"} 1\n");
}

TEST_F(MetricsTest, JobsAreThereFromTheStartAndCountRunsFailuresAndTheLastSuccess) {
  TestClock clock;
  JobStats capture(clock);
  JobStats finalise(clock);
  metrics_.add_job("billing_capture", capture);
  metrics_.add_job("invoice_finalise", finalise);
  auto runs = [](const std::string& job) {
    return "gpurent_job_runs_total{job_name=\"" + job + "\"}";
  };
  auto failures = [](const std::string& job) {
    return "gpurent_job_failures_total{job_name=\"" + job + "\"}";
  };
  auto last_success = [](const std::string& job) {
    return "gpurent_job_last_success_timestamp_seconds{job_name=\"" + job + "\"}";
  };

  std::string text = metrics_.render();
  for (const std::string job : {"billing_capture", "invoice_finalise"}) {
    EXPECT_EQ(sample(text, runs(job)), "0") << job;
    EXPECT_EQ(sample(text, failures(job)), "0") << job;
    EXPECT_EQ(sample(text, last_success(job)), "0") << job;
  }

  clock.advance(24h);
  capture.run([] {});
  EXPECT_THROW(finalise.run([] { throw std::runtime_error("database is down"); }),
               std::runtime_error);
  text = metrics_.render();
  EXPECT_EQ(sample(text, runs("billing_capture")), "1");
  EXPECT_EQ(sample(text, failures("billing_capture")), "0");
  auto at = sample(text, last_success("billing_capture"));
  ASSERT_TRUE(at);
  EXPECT_NEAR(std::stod(*at),
              static_cast<double>(capture.last_success()->time_since_epoch().count()) / 1e6, 0.001);
  EXPECT_EQ(sample(text, runs("invoice_finalise")), "1");
  EXPECT_EQ(sample(text, failures("invoice_finalise")), "1");
  EXPECT_EQ(sample(text, last_success("invoice_finalise")), "0");
  // One family each, whatever the number of jobs.
  for (const std::string type :
       {"# TYPE gpurent_job_runs_total counter\n", "# TYPE gpurent_job_failures_total counter\n",
        "# TYPE gpurent_job_last_success_timestamp_seconds gauge\n"}) {
    auto first = text.find(type);
    ASSERT_NE(first, std::string::npos) << type;
    EXPECT_EQ(text.find(type, first + 1), std::string::npos) << type;
  }
}

TEST_F(MetricsTest, EveryLineIsWellFormed) {
  metrics_.record(0, "GET", 200, 2ms);
  metrics_.record(1, "POST", 418, 2ms);
  std::string text = metrics_.render();
  std::istringstream in(text);
  const std::regex sample_line(R"([a-z_]+\{[a-z_]+="[^"]*"(,[a-z_]+="[^"]*")*\} [0-9.e+-]+)");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("# ", 0) == 0) continue;
    EXPECT_TRUE(std::regex_match(line, sample_line)) << line;
  }
}

TEST(MetricFamily, EveryFamilyOpensWithHelpThenType) {
  std::string out;
  append_metric(out, "gpurent_things_total", "counter", "Things done.", 7);
  append_family(out, "gpurent_kinds", "gauge", "Kinds, by colour.");
  out += "gpurent_kinds{colour=\"red\"} 2\n";
  EXPECT_EQ(out,
            "# HELP gpurent_things_total Things done.\n"
            "# TYPE gpurent_things_total counter\n"
            "gpurent_things_total 7\n"
            "# HELP gpurent_kinds Kinds, by colour.\n"
            "# TYPE gpurent_kinds gauge\n"
            "gpurent_kinds{colour=\"red\"} 2\n");
}

}  // namespace metrics_test
}  // namespace gpurent::http
