// Request counters and latency histograms per route, lock-free on the request path,
// rendered in the Prometheus text format.
#pragma once

#include "core/job_stats.h"

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gpurent::http {

class Metrics {
 public:
  // Statuses with their own counter; any other lands in "other" (labelled by class).
  static constexpr std::array<int, 24> kStatuses = {200, 201, 202, 204, 206, 301, 302, 304,
                                                    400, 401, 402, 403, 404, 405, 408, 409,
                                                    413, 415, 422, 429, 431, 500, 501, 503};
  // Histogram bucket upper bounds in seconds.
  static constexpr std::array<double, 14> kBuckets = {
      0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};

  // `route_labels[i]` names route i; two more slots count static files and unmatched paths.
  explicit Metrics(std::vector<std::string> route_labels);
  ~Metrics();

  std::size_t static_slot() const { return labels_.size() - 2; }
  std::size_t unmatched_slot() const { return labels_.size() - 1; }

  void record(std::size_t slot, const char* method, int status, std::chrono::nanoseconds latency);

  // Extra text appended to render(): pool gauges, build info, ...
  void add_collector(std::function<void(std::string&)> collector);
  // A background job's runs, failures and last success, as gpurent_job_runs_total,
  // gpurent_job_failures_total and gpurent_job_last_success_timestamp_seconds with the label
  // job_name="<name>" (not `job`, which Prometheus gives every series of a scrape target).
  // Its series are there from the start, at zero. `stats` outlives this.
  void add_job(std::string name, const JobStats& stats);

  std::string render() const;

 private:
  struct Shard;
  void render_jobs(std::string& out) const;

  std::vector<std::string> labels_;
  std::vector<std::unique_ptr<Shard>> shards_;
  std::vector<std::function<void(std::string&)>> collectors_;
  std::vector<std::pair<std::string, const JobStats*>> jobs_;
};

// The HELP and TYPE lines that open a metric family; every family a collector writes starts
// with them (`promtool check metrics` reports a family without HELP).
void append_family(std::string& out, std::string_view name, std::string_view type,
                   std::string_view help);
// A family of one unlabelled sample: its HELP and TYPE lines, then `name value`.
void append_metric(std::string& out, std::string_view name, std::string_view type,
                   std::string_view help, std::uint64_t value);

}  // namespace gpurent::http
