// A fixed pool of threads for blocking work (database calls), so network threads never block.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace gpurent {

class WorkerPool {
 public:
  // `queue_limit` bounds waiting tasks: past it, post() refuses rather than grow forever.
  WorkerPool(int threads, std::size_t queue_limit);
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  // Queues a task; false when the queue is full or the pool is stopping.
  bool post(std::function<void()> task);

  // Runs the queued tasks, then joins the threads. Idempotent.
  void stop();

  std::size_t queued() const;
  std::size_t busy() const;
  int threads() const { return static_cast<int>(threads_.size()); }

 private:
  void run();

  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  std::size_t queue_limit_;
  std::size_t busy_ = 0;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace gpurent
