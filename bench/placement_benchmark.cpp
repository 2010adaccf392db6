// How long one placement decision takes over a 10,000-node fleet (8-GPU NVSwitch, 8-GPU
// bridged pairs, 4-GPU PCIe; about 55% of GPU-days booked, so a quarter of the GPUs are free
// over a request's whole period), for 1, 2, 4 and 8 GPUs: every decision is timed on its own,
// and the p50/p99/max of those times are the counters (wall clock, and the thread's CPU time,
// which preemption by other load on the machine does not inflate).
#include "scheduler/placement.h"

#include <benchmark/benchmark.h>

#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace gpurent::scheduler {
namespace {

using std::chrono::hours;

constexpr int kFleetSize = 10'000;
constexpr auto kCleaning = hours(2);  // allocations are stored extended by it
const std::string kModel = "H100-80GB";
const Timestamp kDay0 = std::chrono::sys_days{std::chrono::year{2026} / 12 / 1};

// Requests start on one of kStartDays days from kFirstStartDay and last 1..kMaxRentalDays
// days. The candidates hold what the loader fetches for such a booking: the allocations that
// overlap the requests' span widened by kLoaderMarginDays each side (enough to see the
// neighbours that calendar adjacency looks at), not a GPU's whole calendar.
constexpr int kFirstStartDay = 20;
constexpr int kStartDays = 8;
constexpr int kMaxRentalDays = 7;
constexpr int kLoaderMarginDays = 7;
const Period kLoaderWindow{
    kDay0 + hours(24 * (kFirstStartDay - kLoaderMarginDays)),
    kDay0 + hours(24 * (kFirstStartDay + kStartDays + kMaxRentalDays + kLoaderMarginDays))};
constexpr int kCalendarDays = 60;

// Every node is a candidate: the loader passes one model's nodes, and a fleet whose nodes
// all share one model is the worst case for a decision.
class Fleet {
 public:
  static const std::vector<NodeCandidate>& get() {
    static const Fleet fleet;
    return fleet.nodes_;
  }

 private:
  Fleet() {
    std::mt19937 rng(20261201);
    const auto nvswitch = topology::declared_matrix(topology::Interconnect::kNvswitch, 8, "NV18");
    const auto bridged = topology::declared_matrix(topology::Interconnect::kNvlinkPairs, 8, "NV4");
    const auto pcie = topology::declared_matrix(topology::Interconnect::kPcie, 4, "");
    nodes_.reserve(kFleetSize);
    for (int i = 0; i < kFleetSize; ++i) {
      // 40% NVSwitch, 30% bridged pairs, 30% PCIe.
      const int shape = i % 10;
      const auto& links = shape < 4 ? nvswitch : shape < 7 ? bridged : pcie;
      // Appended, not "node-" + ...: GCC 12 at -O3 warns falsely about the latter.
      std::string id = "node-";
      id += std::to_string(100'000 + i);
      NodeCandidate node{std::move(id), kModel, links, {}, 0};
      if (rng() % 4 == 0) node.recent_failures = 1 + static_cast<int>(rng() % 3);
      for (int g = 0; g < links.gpus; ++g) node.gpus.push_back({g, true, {}});
      if (rng() % 200 == 0) node.gpus[rng() % links.gpus].healthy = false;
      // GPUs are rented in groups that share a calendar: whole nodes, halves, pairs, singles.
      for (int first = 0; first < links.gpus;) {
        int size = group_size(rng, links.gpus - first, shape < 4 ? 8 : shape < 7 ? 2 : 4);
        book_calendar(rng, node, first, size);
        first += size;
      }
      nodes_.push_back(std::move(node));
    }
  }

  static int group_size(std::mt19937& rng, int left, int largest) {
    static constexpr int kSizes[] = {8, 4, 2, 1};
    for (;;) {
      int size = kSizes[rng() % 4];
      if (size <= left && size <= largest) return size;
    }
  }

  // Alternating idle and booked stretches: idle 0-16 days (a quarter of them none at all:
  // the next rental starts where the last one ended), booked 1-14 days; about 55% booked.
  static void book_calendar(std::mt19937& rng, NodeCandidate& node, int first, int size) {
    int hour = -static_cast<int>(rng() % (14 * 24));
    while (hour < 24 * kCalendarDays) {
      if (rng() % 4 != 0) hour += static_cast<int>(rng() % (16 * 24));
      int length = 24 * (1 + static_cast<int>(rng() % 14));
      Period booked{kDay0 + hours(hour), kDay0 + hours(hour + length) + kCleaning};
      if (booked.overlaps(kLoaderWindow)) {
        for (int g = first; g < first + size; ++g) node.gpus[g].busy.push_back(booked);
      }
      hour += length + 2;
    }
  }

  std::vector<NodeCandidate> nodes_;
};

std::vector<PlacementRequest> requests(int count, LinkNeed need) {
  std::mt19937 rng(static_cast<unsigned>(count * 2 + (need == LinkNeed::kAny ? 1 : 0)));
  std::vector<PlacementRequest> out;
  for (int i = 0; i < 256; ++i) {
    int start = 24 * (kFirstStartDay + static_cast<int>(rng() % kStartDays));
    int length = 24 * (1 + static_cast<int>(rng() % kMaxRentalDays));
    out.push_back(
        {kModel, count, need, {kDay0 + hours(start), kDay0 + hours(start + length) + kCleaning}});
  }
  return out;
}

// The share of the fleet's GPUs free over a request's whole period: how busy the fleet is
// as placement sees it.
double free_share(const std::vector<NodeCandidate>& fleet,
                  const std::vector<PlacementRequest>& ring) {
  std::size_t free = 0;
  std::size_t total = 0;
  for (std::size_t r = 0; r < ring.size(); r += 16) {
    for (const auto& node : fleet) {
      for (const auto& gpu : node.gpus) {
        ++total;
        free += gpu.healthy && std::ranges::none_of(gpu.busy, [&](const Period& p) {
                  return p.overlaps(ring[r].occupies);
                });
      }
    }
  }
  return static_cast<double>(free) / static_cast<double>(total);
}

double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

double quantile(std::vector<double>& micros, double q) {
  std::ranges::sort(micros);
  return micros[std::min(micros.size() - 1, static_cast<std::size_t>(q * micros.size()))];
}

void BM_PlaceDecision(benchmark::State& state) {
  const auto& fleet = Fleet::get();
  const int count = static_cast<int>(state.range(0));
  const auto need = state.range(1) != 0 ? LinkNeed::kAny : LinkNeed::kNvlink;
  const auto ring = requests(count, need);
  std::vector<double> wall_us;
  std::vector<double> cpu_us;
  std::size_t choices = 0;
  std::size_t next = 0;
  for (auto _ : state) {
    const auto& request = ring[next++ % ring.size()];
    const double cpu_start = thread_cpu_seconds();
    const auto start = std::chrono::steady_clock::now();
    auto placements = place(request, fleet);
    const auto stop = std::chrono::steady_clock::now();
    const double cpu_stop = thread_cpu_seconds();
    benchmark::DoNotOptimize(placements.data());
    const double seconds = std::chrono::duration<double>(stop - start).count();
    state.SetIterationTime(seconds);
    wall_us.push_back(seconds * 1e6);
    cpu_us.push_back((cpu_stop - cpu_start) * 1e6);
    choices += placements.size();
  }
  const auto decisions = static_cast<double>(wall_us.size());
  state.counters["p50_us"] = quantile(wall_us, 0.50);
  state.counters["p99_us"] = quantile(wall_us, 0.99);
  state.counters["max_us"] = wall_us.back();
  state.counters["cpu_p50_us"] = quantile(cpu_us, 0.50);
  state.counters["cpu_p99_us"] = quantile(cpu_us, 0.99);
  state.counters["choices"] = static_cast<double>(choices) / decisions;
  state.counters["free_gpus"] = free_share(fleet, ring);
}

BENCHMARK(BM_PlaceDecision)
    ->ArgNames({"gpus", "any"})
    ->Args({1, 0})
    ->Args({2, 0})
    ->Args({4, 0})
    ->Args({8, 0})
    ->Args({2, 1})
    ->Args({4, 1})
    ->UseManualTime()
    ->MinTime(2.0)
    ->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace gpurent::scheduler
