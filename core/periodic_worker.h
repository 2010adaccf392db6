// A thread that runs one tick every interval until it is stopped: the one shape of the
// product's background loops (webhook deliveries, the rental lifecycle, credential uses
// written behind, the agents' task poll).
#pragma once

#include "core/job_stats.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace gpurent {

class PeriodicWorker {
 public:
  using Tick = std::function<void()>;

  struct Options {
    // The first tick as soon as the thread starts, or one interval after start().
    bool tick_at_start = true;
  };

  // `name` is what the log calls a tick that failed ("<name> failed: <what>"). A tick that
  // throws is logged and counted as failed (stats()), and the loop goes on: the next tick is
  // the retry.
  PeriodicWorker(std::string name, std::chrono::milliseconds interval, Tick tick, Options options);
  PeriodicWorker(std::string name, std::chrono::milliseconds interval, Tick tick)
      : PeriodicWorker(std::move(name), interval, std::move(tick), Options{}) {}
  ~PeriodicWorker();  // stop()
  PeriodicWorker(const PeriodicWorker&) = delete;
  PeriodicWorker& operator=(const PeriodicWorker&) = delete;

  // Starts the thread. Once: again, or after stop(), it does nothing.
  void start();
  // The next tick now rather than at the end of the interval; called during a tick, the
  // next one follows it at once (a tick that left work behind calls it).
  void wake();
  // Wakes the thread and waits for the tick in progress to end. Idempotent.
  void stop();

  // True from stop() on: a long tick reads it between its steps to end early.
  const std::atomic<bool>& stopping() const { return stopping_; }
  const std::string& name() const { return name_; }
  // The ticks that ended, those that threw, and when one last returned: what /metrics shows
  // of the loop (the wiring names it there).
  const JobStats& stats() const { return stats_; }

 private:
  void run();
  void tick_once();

  const std::string name_;
  const std::chrono::milliseconds interval_;
  const Tick tick_;
  const Options options_;
  JobStats stats_;

  std::mutex mutex_;
  std::condition_variable wake_;
  std::atomic<bool> stopping_{false};  // written under mutex_, read by ticks without it
  bool woken_ = false;                 // under mutex_
  bool started_ = false;               // under mutex_
  std::thread thread_;
};

}  // namespace gpurent
