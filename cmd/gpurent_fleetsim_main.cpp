// gpurent-fleetsim: thousands of simulated node agents in one process, each with its own
// TLS connection and client certificate, speaking the real agent's protocol to gpurentd's
// agent listener (README.md "gpurent-fleetsim").
#include "agent/fleetsim/fleet_identities.h"
#include "agent/fleetsim/fleet_options.h"
#include "agent/fleetsim/fleet_runner.h"
#include "agent/fleetsim/fleet_stats.h"
#include "core/log.h"
#include "core/worker_pool.h"

#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>

#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <stop_token>
#include <thread>

namespace {

namespace fleetsim = gpurent::agent::fleetsim;

void print_usage() {
  std::printf(
      "usage: gpurent-fleetsim --server https://HOST:PORT --state-dir DIR [--ca CA.crt]\n"
      "                        [--enroll-from FILE] [--agents N] [--heartbeat 10s] [--ramp 60s]\n"
      "                        [--status-interval 10s] [--provision-delay 2s]\n"
      "                        [--backoff-initial 1s] [--backoff-max 60s] [--io-threads 1|2]\n"
      "                        [--task-threads 4] [--enroll-parallel 8] [--gpus 8]\n"
      "                        [--model NAME] [--topology nvswitch|nvlink-pairs|pcie]\n"
      "                        [--nvlink NV18] [--log-level warn] [--enroll-only]\n\n"
      "Simulates N node agents (simulated GPUs, simulated task executors) against the agent\n"
      "listener. --enroll-from names a file of 'node_id token' lines: each node without a\n"
      "certificate in DIR/<node_id>/ is enrolled first (--ca is then required); with\n"
      "--enroll-only it stops there. Without it, the nodes enrolled in DIR are used. A JSON\n"
      "status line goes to stderr every --status-interval, and a summary at SIGINT/SIGTERM.\n");
}

// As many descriptors as the fleet needs, up to the hard limit (root may raise that too).
void raise_descriptor_limit(std::size_t agents) {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return;
  rlim_t wanted = static_cast<rlim_t>(agents) + 256;
  if (limit.rlim_cur >= wanted) return;
  if (limit.rlim_max < wanted) {
    rlimit raised{wanted, wanted};
    if (setrlimit(RLIMIT_NOFILE, &raised) == 0) return;
  }
  limit.rlim_cur = std::min(wanted, limit.rlim_max);
  setrlimit(RLIMIT_NOFILE, &limit);
  if (limit.rlim_cur < wanted) {
    std::fprintf(stderr, "gpurent-fleetsim: only %llu descriptors for %zu agents (ulimit -n)\n",
                 static_cast<unsigned long long>(limit.rlim_cur), agents);
  }
}

}  // namespace

int main(int argc, char** argv) {
  auto parsed = fleetsim::parse_fleet_args({argv + 1, argv + argc});
  if (parsed.help) {
    print_usage();
    return 0;
  }
  if (!parsed.options) {
    std::fprintf(stderr, "gpurent-fleetsim: %s (try --help)\n", parsed.error.c_str());
    return 2;
  }
  const auto& options = *parsed.options;
  gpurent::log::init(gpurent::LogFormat::kText, options.log_level);

  // SIGTERM and SIGINT are taken by one thread with sigwait, blocked everywhere else.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  fleetsim::PreparedFleet fleet;
  try {
    fleet = fleetsim::prepare_fleet(options);
  } catch (const fleetsim::FleetSetupError& e) {
    std::fprintf(stderr, "gpurent-fleetsim: %s\n", e.what());
    return 1;
  }
  if (options.enroll_only) {
    std::fprintf(stderr, "{\"enrolled\": %d, \"enroll_failures\": %d, \"nodes\": %zu}\n",
                 fleet.enrolled, fleet.enroll_failures, fleet.members.size());
    return fleet.enroll_failures == 0 ? 0 : 1;
  }
  raise_descriptor_limit(fleet.members.size());

  std::unique_ptr<gpurent::agent::GpuBackend> backend;
  try {
    backend = gpurent::agent::make_simulated_backend(options.node);
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "gpurent-fleetsim: %s\n", e.what());
    return 2;
  }
  fleetsim::FleetStats stats;
  std::stop_source stopping;
  gpurent::WorkerPool task_workers(options.task_threads, 100'000);
  fleetsim::AgentShared shared{.backend = *backend,
                               .task_workers = task_workers,
                               .stop = stopping.get_token(),
                               .stats = stats,
                               .provision_delay = options.provision_delay};
  std::size_t agents = fleet.members.size();
  std::optional<fleetsim::FleetRunner> runner;
  try {
    runner.emplace(fleetsim::FleetRunnerOptions{.server = options.server,
                                                .ca_pem = fleet.ca_pem,
                                                .io_threads = options.io_threads,
                                                .heartbeat = options.heartbeat,
                                                .ramp = options.ramp,
                                                .backoff_initial = options.backoff_initial,
                                                .backoff_max = options.backoff_max},
                   std::move(fleet.members), shared);
    runner->start();
  } catch (const std::runtime_error& e) {
    std::fprintf(stderr, "gpurent-fleetsim: %s\n", e.what());
    return 1;
  }
  std::fprintf(stderr,
               "{\"started\": true, \"agents\": %zu, \"enrolled\": %d, \"enroll_failures\": %d}\n",
               agents, fleet.enrolled, fleet.enroll_failures);

  std::mutex mutex;
  std::condition_variable wake;
  bool stop = false;
  std::thread waiter([&] {
    int sig = 0;
    sigwait(&signals, &sig);
    std::lock_guard lock(mutex);
    stop = true;
    wake.notify_all();
  });
  auto started = std::chrono::steady_clock::now();
  auto uptime = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  };
  {
    std::unique_lock lock(mutex);
    auto next = started + options.status_interval;
    while (!wake.wait_until(lock, next, [&] { return stop; })) {
      std::fprintf(stderr, "%s\n", stats.status_line(uptime()).c_str());
      next += options.status_interval;
    }
  }
  waiter.join();
  stopping.request_stop();
  runner->stop();
  task_workers.stop();
  std::fprintf(stderr, "%s\n", stats.summary_line(uptime()).c_str());
  return 0;
}
