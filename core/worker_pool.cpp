// WorkerPool: a mutex-guarded queue drained by a fixed set of threads.
#include "core/worker_pool.h"

#include "core/log.h"

namespace gpurent {

WorkerPool::WorkerPool(int threads, std::size_t queue_limit) : queue_limit_(queue_limit) {
  threads_.reserve(threads);
  for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { run(); });
}

WorkerPool::~WorkerPool() {
  stop();
}

bool WorkerPool::post(std::function<void()> task) {
  {
    std::lock_guard lock(mutex_);
    if (stopping_ || queue_.size() >= queue_limit_) return false;
    queue_.push_back(std::move(task));
  }
  cv_.notify_one();
  return true;
}

void WorkerPool::stop() {
  {
    std::lock_guard lock(mutex_);
    if (stopping_ && threads_.empty()) return;
    stopping_ = true;
  }
  cv_.notify_all();
  for (auto& t : threads_) {
    if (t.joinable()) t.join();
  }
  threads_.clear();
}

std::size_t WorkerPool::queued() const {
  std::lock_guard lock(mutex_);
  return queue_.size();
}

std::size_t WorkerPool::busy() const {
  std::lock_guard lock(mutex_);
  return busy_;
}

void WorkerPool::run() {
  for (;;) {
    std::function<void()> task;
    {
      std::unique_lock lock(mutex_);
      cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping and drained
      task = std::move(queue_.front());
      queue_.pop_front();
      ++busy_;
    }
    try {
      task();
    } catch (const std::exception& e) {
      // Tasks report their own errors; one that escapes is a bug, but must not kill the pool.
      log::error("worker task threw: {}", e.what());
    } catch (...) {
      log::error("worker task threw a non-standard exception");
    }
    std::lock_guard lock(mutex_);
    --busy_;
  }
}

}  // namespace gpurent
