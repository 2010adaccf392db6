// /metrics as Prometheus reads it: a real gpurentd's scrape passes `promtool check metrics`,
// and the alert rules and the Grafana dashboard in deploy/ name only metrics, routes,
// limiters and background jobs the server has, so neither can drift from the code unnoticed.
#include "core/subprocess.h"
#include "tests/support/http_client.h"
#include "tests/support/paths.h"
#include "tests/support/pg_harness.h"
#include "tests/support/server_process.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

namespace gpurent::testing::metrics_e2e {

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in) << "cannot read " << path;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string alerts_path() {
  return source_dir() + "/deploy/prometheus/alerts.yml";
}
std::string dashboard_path() {
  return source_dir() + "/deploy/grafana/gpurent.json";
}

// Every `gpurent_…` name in `text`: the monitoring files name metrics by the series
// Prometheus stores (`…_bucket` for a histogram's buckets).
std::set<std::string> metric_names_in(const std::string& text) {
  static const std::regex name(R"(\bgpurent_[a-z0-9_]+)");
  std::set<std::string> names;
  for (std::sregex_iterator it(text.begin(), text.end(), name), end; it != end; ++it)
    names.insert(it->str());
  return names;
}

// The values a label is matched against in `text`: `label="v"` and each alternative of
// `label=~"a|b"` when the regex is a plain list of words.
std::set<std::string> label_values_in(const std::string& text, const std::string& label) {
  const std::regex matcher("\\b" + label + R"re((=~?)"([^"]*)")re");
  static const std::regex plain_list(R"([A-Za-z0-9_/{}.-]+(\|[A-Za-z0-9_/{}.-]+)*)");
  std::set<std::string> values;
  for (std::sregex_iterator it(text.begin(), text.end(), matcher), end; it != end; ++it) {
    std::string value = (*it)[2];
    if ((*it)[1] == "=") {
      values.insert(value);
    } else if (std::regex_match(value, plain_list)) {
      std::istringstream parts(value);
      for (std::string part; std::getline(parts, part, '|');) values.insert(part);
    }
  }
  return values;
}

// Every string in a JSON document, one a line: the dashboard's queries without JSON's
// escapes.
void collect_strings(const nlohmann::json& j, std::string& out) {
  if (j.is_string()) {
    out.append(j.get<std::string>()).append("\n");
  } else if (j.is_structured()) {
    for (const auto& item : j) collect_strings(item, out);
  }
}

// The scrape's sample names: the part of each sample line before `{` or the space.
std::set<std::string> sample_names(const std::string& scrape) {
  std::set<std::string> names;
  std::istringstream in(scrape);
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    names.insert(line.substr(0, line.find_first_of("{ ")));
  }
  return names;
}

// Runs promtool with `input` in a file: as its standard input (`check metrics`) or as its
// last argument (`check rules`, which reads no standard input).
SubprocessResult promtool(const std::string& command, const std::string& input, bool on_stdin) {
  std::string dir = make_temp_dir("gpurent-promtool");
  std::string file = dir + "/input.yml";
  std::ofstream(file) << input;
  auto r =
      run_subprocess({"/bin/sh", "-c", "promtool " + command + (on_stdin ? " < " : " ") + file});
  std::filesystem::remove_all(dir);
  return r;
}

TEST(MetricsE2E, TheScrapePassesPromtoolAndHasEveryMetricTheRulesAndDashboardName) {
  TestDatabase db;
  ServerProcess server({.database_url = db.url()});
  int port = server.port();

  // A few routes the rules and the dashboard select by name, answered and refused.
  EXPECT_EQ(http_request(port, "GET", "/healthz").status, 200);
  EXPECT_EQ(http_request(port, "GET", "/readyz").status, 200);
  EXPECT_EQ(http_request(port, "POST", "/v1/rentals", "{}", {{"Content-Type", "application/json"}})
                .status,
            401);
  EXPECT_EQ(http_request(port, "GET", "/no/such/path").status, 404);
  auto openapi = http_request(port, "GET", "/v1/openapi.json");
  ASSERT_EQ(openapi.status, 200);

  auto scraped = http_request(port, "GET", "/metrics");
  ASSERT_EQ(scraped.status, 200);
  EXPECT_EQ(scraped.header("content-type"), "text/plain; version=0.0.4; charset=utf-8");

  // Exit 0 and nothing said: promtool prints each lint problem (a family without HELP, a
  // counter without _total, ...) and exits 3 for them.
  auto checked = promtool("check metrics", scraped.body, /*on_stdin=*/true);
  EXPECT_EQ(checked.exit_code, 0) << checked.output;
  EXPECT_EQ(checked.output, "");

  std::set<std::string> names = sample_names(scraped.body);
  EXPECT_TRUE(names.count("gpurent_http_requests_total"));  // the requests above, counted
  std::set<std::string> paths;
  const nlohmann::json document = openapi.json();
  for (const auto& [path, item] : document.at("paths").items()) paths.insert(path);
  std::set<std::string> limiters = label_values_in(scraped.body, "limiter");
  // Every background job is in the families from the start, whether or not it has run yet.
  std::set<std::string> jobs = label_values_in(scraped.body, "job_name");
  for (const char* job :
       {"rental_lifecycle", "billing_capture", "invoice_finalise", "webhook_expiring",
        "webhook_delivery", "agent_task_poll", "credential_write_behind"}) {
    EXPECT_TRUE(jobs.count(job)) << "/metrics lacks job_name \"" << job << "\"";
  }

  std::string dashboard;
  collect_strings(nlohmann::json::parse(read_file(dashboard_path())), dashboard);
  for (const auto& [file, text] : {std::pair{alerts_path(), read_file(alerts_path())},
                                   std::pair{dashboard_path(), dashboard}}) {
    std::set<std::string> named = metric_names_in(text);
    EXPECT_GT(named.size(), 10u) << file;
    for (const auto& name : named)
      EXPECT_TRUE(names.count(name)) << file << " names " << name << ", which /metrics lacks";
    for (const auto& route : label_values_in(text, "route"))
      EXPECT_TRUE(paths.count(route))
          << file << " selects route \"" << route << "\", which is not one of the server's routes";
    for (const auto& limiter : label_values_in(text, "limiter"))
      EXPECT_TRUE(limiters.count(limiter))
          << file << " selects limiter \"" << limiter << "\", which /metrics lacks";
    for (const auto& job : label_values_in(text, "job_name"))
      EXPECT_TRUE(jobs.count(job))
          << file << " selects job_name \"" << job << "\", which /metrics lacks";
  }
  EXPECT_EQ(server.stop(), "");
}

// The dashboard's queries are PromQL Prometheus accepts: each, with Grafana's variables
// given values, becomes a recording rule that `promtool check rules` parses.
TEST(MetricsE2E, EveryDashboardQueryParses) {
  auto dashboard = nlohmann::json::parse(read_file(dashboard_path()));
  std::ostringstream rules;
  rules << "groups:\n  - name: dashboard\n    rules:\n";
  int queries = 0;
  for (const auto& panel : dashboard.at("panels")) {
    if (!panel.contains("targets")) continue;
    for (const auto& target : panel.at("targets")) {
      std::string expr = target.at("expr");
      expr = std::regex_replace(expr, std::regex(R"(\$__rate_interval)"), "5m");
      expr = std::regex_replace(expr, std::regex(R"(\$instance)"), ".*");
      // A JSON string is a valid double-quoted YAML scalar.
      rules << "      - record: dashboard:query" << ++queries
            << "\n        expr: " << nlohmann::json(expr).dump() << "\n";
    }
  }
  ASSERT_GT(queries, 20);
  auto checked = promtool("check rules", rules.str(), /*on_stdin=*/false);
  EXPECT_EQ(checked.exit_code, 0) << checked.output << "\n" << rules.str();
}

}  // namespace gpurent::testing::metrics_e2e
