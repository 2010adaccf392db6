// Metrics: per-thread shards of relaxed atomics, summed when scraped.
#include "api/metrics.h"

#include <cstdio>
#include <cstring>

namespace gpurent::http {
namespace {

constexpr std::size_t kShards = 4;
constexpr std::size_t kStatusSlots = Metrics::kStatuses.size() + 5;  // + 1xx..5xx "other"
constexpr std::size_t kMethods = 8;
const char* const kMethodNames[kMethods] = {"GET",   "HEAD",   "POST",    "PUT",
                                            "PATCH", "DELETE", "OPTIONS", "OTHER"};

std::size_t method_slot(const char* method) {
  for (std::size_t i = 0; i + 1 < kMethods; ++i) {
    if (std::strcmp(method, kMethodNames[i]) == 0) return i;
  }
  return kMethods - 1;
}

std::size_t status_slot(int status) {
  for (std::size_t i = 0; i < Metrics::kStatuses.size(); ++i) {
    if (Metrics::kStatuses[i] == status) return i;
  }
  int cls = status / 100;
  if (cls < 1 || cls > 5) cls = 5;
  return Metrics::kStatuses.size() + static_cast<std::size_t>(cls - 1);
}

std::size_t shard_index() {
  static std::atomic<std::size_t> next{0};
  thread_local std::size_t index = next.fetch_add(1) % kShards;
  return index;
}

}  // namespace

struct alignas(64) RouteCounters {
  std::atomic<std::uint64_t> by_status[kMethods][kStatusSlots];
  std::atomic<std::uint64_t> buckets[Metrics::kBuckets.size()];
  std::atomic<std::uint64_t> count;
  std::atomic<std::uint64_t> sum_ns;
};

struct Metrics::Shard {
  explicit Shard(std::size_t routes) : routes(new RouteCounters[routes]()) {}
  std::unique_ptr<RouteCounters[]> routes;
};

Metrics::Metrics(std::vector<std::string> route_labels) : labels_(std::move(route_labels)) {
  labels_.push_back("static");
  labels_.push_back("unmatched");
  for (std::size_t i = 0; i < kShards; ++i)
    shards_.push_back(std::make_unique<Shard>(labels_.size()));
}

Metrics::~Metrics() = default;

void Metrics::record(std::size_t slot, const char* method, int status,
                     std::chrono::nanoseconds latency) {
  if (slot >= labels_.size()) slot = unmatched_slot();
  auto& c = shards_[shard_index()]->routes[slot];
  c.by_status[method_slot(method)][status_slot(status)].fetch_add(1, std::memory_order_relaxed);
  double seconds = static_cast<double>(latency.count()) / 1e9;
  for (std::size_t b = 0; b < kBuckets.size(); ++b) {
    if (seconds <= kBuckets[b]) {
      c.buckets[b].fetch_add(1, std::memory_order_relaxed);
      break;
    }
  }
  c.count.fetch_add(1, std::memory_order_relaxed);
  c.sum_ns.fetch_add(static_cast<std::uint64_t>(latency.count()), std::memory_order_relaxed);
}

void Metrics::add_collector(std::function<void(std::string&)> collector) {
  collectors_.push_back(std::move(collector));
}

void Metrics::add_job(std::string name, const JobStats& stats) {
  jobs_.emplace_back(std::move(name), &stats);
}

void Metrics::render_jobs(std::string& out) const {
  if (jobs_.empty()) return;
  char line[512];
  auto family = [&](const char* name, const char* type, const char* help, auto value_of) {
    append_family(out, name, type, help);
    for (const auto& [job, stats] : jobs_) {
      std::snprintf(line, sizeof line, "%s{job_name=\"%s\"} %s\n", name, job.c_str(),
                    value_of(*stats).c_str());
      out += line;
    }
  };
  family("gpurent_job_runs_total", "counter", "Background job runs that ended, by job.",
         [](const JobStats& s) { return std::to_string(s.runs()); });
  family("gpurent_job_failures_total", "counter", "Background job runs that failed, by job.",
         [](const JobStats& s) { return std::to_string(s.failures()); });
  family("gpurent_job_last_success_timestamp_seconds", "gauge",
         "When the job last ended without an error, in Unix seconds; 0 before its first success.",
         [](const JobStats& s) -> std::string {
           auto at = s.last_success();
           if (!at) return "0";
           char seconds[32];
           std::snprintf(seconds, sizeof seconds, "%.3f",
                         static_cast<double>(at->time_since_epoch().count()) / 1e6);
           return seconds;
         });
}

std::string Metrics::render() const {
  std::string out;
  out.reserve(16384);
  char line[512];
  out += "# HELP gpurent_http_requests_total HTTP requests by route, method and status.\n";
  out += "# TYPE gpurent_http_requests_total counter\n";
  for (std::size_t r = 0; r < labels_.size(); ++r) {
    for (std::size_t m = 0; m < kMethods; ++m) {
      for (std::size_t s = 0; s < kStatusSlots; ++s) {
        std::uint64_t total = 0;
        for (const auto& shard : shards_) total += shard->routes[r].by_status[m][s].load();
        if (total == 0) continue;
        std::string status = s < kStatuses.size() ? std::to_string(kStatuses[s])
                                                  : std::to_string(s - kStatuses.size() + 1) + "xx";
        std::snprintf(
            line, sizeof line,
            "gpurent_http_requests_total{route=\"%s\",method=\"%s\",status=\"%s\"} %llu\n",
            labels_[r].c_str(), kMethodNames[m], status.c_str(),
            static_cast<unsigned long long>(total));
        out += line;
      }
    }
  }
  out += "# HELP gpurent_http_request_duration_seconds Time from request read to response ready.\n";
  out += "# TYPE gpurent_http_request_duration_seconds histogram\n";
  for (std::size_t r = 0; r < labels_.size(); ++r) {
    std::uint64_t count = 0, sum_ns = 0;
    for (const auto& shard : shards_) {
      count += shard->routes[r].count.load();
      sum_ns += shard->routes[r].sum_ns.load();
    }
    if (count == 0) continue;
    std::uint64_t cumulative = 0;
    for (std::size_t b = 0; b < kBuckets.size(); ++b) {
      for (const auto& shard : shards_) cumulative += shard->routes[r].buckets[b].load();
      std::snprintf(line, sizeof line,
                    "gpurent_http_request_duration_seconds_bucket{route=\"%s\",le=\"%g\"} %llu\n",
                    labels_[r].c_str(), kBuckets[b], static_cast<unsigned long long>(cumulative));
      out += line;
    }
    std::snprintf(line, sizeof line,
                  "gpurent_http_request_duration_seconds_bucket{route=\"%s\",le=\"+Inf\"} %llu\n"
                  "gpurent_http_request_duration_seconds_sum{route=\"%s\"} %.9f\n"
                  "gpurent_http_request_duration_seconds_count{route=\"%s\"} %llu\n",
                  labels_[r].c_str(), static_cast<unsigned long long>(count), labels_[r].c_str(),
                  static_cast<double>(sum_ns) / 1e9, labels_[r].c_str(),
                  static_cast<unsigned long long>(count));
    out += line;
  }
  for (const auto& c : collectors_) c(out);
  render_jobs(out);
  return out;
}

void append_family(std::string& out, std::string_view name, std::string_view type,
                   std::string_view help) {
  out.append("# HELP ").append(name).append(" ").append(help).append("\n");
  out.append("# TYPE ").append(name).append(" ").append(type).append("\n");
}

void append_metric(std::string& out, std::string_view name, std::string_view type,
                   std::string_view help, std::uint64_t value) {
  append_family(out, name, type, help);
  out.append(name).append(" ").append(std::to_string(value)).append("\n");
}

}  // namespace gpurent::http
