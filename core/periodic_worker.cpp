// PeriodicWorker: a wait on a condition variable for the interval, cut short by wake() and
// stop(), then a tick whose failure is logged; every tick is counted.
#include "core/periodic_worker.h"

#include "core/log.h"

#include <cassert>

namespace gpurent {

PeriodicWorker::PeriodicWorker(std::string name, std::chrono::milliseconds interval, Tick tick,
                               Options options)
    : name_(std::move(name)), interval_(interval), tick_(std::move(tick)), options_(options) {
  // A zero interval would spin a core; configuration checks refuse it before this.
  assert(interval_ > std::chrono::milliseconds::zero());
  assert(tick_);
}

PeriodicWorker::~PeriodicWorker() {
  stop();
}

void PeriodicWorker::start() {
  std::lock_guard lock(mutex_);
  if (started_ || stopping_) return;
  started_ = true;
  thread_ = std::thread([this] { run(); });
}

void PeriodicWorker::wake() {
  {
    std::lock_guard lock(mutex_);
    woken_ = true;
  }
  wake_.notify_all();
}

void PeriodicWorker::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  // start() cannot run a thread once stopping_ is set, so thread_ is no longer written. A
  // tick that stops its own worker leaves the join to the destructor.
  if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) thread_.join();
}

void PeriodicWorker::run() {
  auto due = [this] { return stopping_.load() || woken_; };
  std::unique_lock lock(mutex_);
  if (!options_.tick_at_start) wake_.wait_for(lock, interval_, due);
  while (!stopping_) {
    // A wake() from here on, during the tick included, asks for one more tick.
    woken_ = false;
    lock.unlock();
    tick_once();
    lock.lock();
    wake_.wait_for(lock, interval_, due);
  }
}

void PeriodicWorker::tick_once() {
  try {
    stats_.run(tick_);
  } catch (const std::exception& e) {
    log::warn("{} failed: {}", name_, e.what());
  } catch (...) {
    log::warn("{} failed: an exception that is not a std::exception", name_);
  }
}

}  // namespace gpurent
