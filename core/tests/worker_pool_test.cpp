// Tests WorkerPool: running tasks, the bounded queue, draining on stop and failing tasks.
#include "core/worker_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <stdexcept>

namespace gpurent {
namespace worker_pool_test {

using namespace std::chrono_literals;

constexpr auto kWait = 5s;  // generous: only reached when something is broken

// Occupies one worker until release(); started() waits until a worker has picked it up.
class Blocker {
 public:
  std::function<void()> task() {
    return [this, release = release_future_] {
      started_.set_value();
      release.wait();
    };
  }
  bool started() { return started_future_.wait_for(kWait) == std::future_status::ready; }
  void release() { release_.set_value(); }

 private:
  std::promise<void> started_;
  std::future<void> started_future_ = started_.get_future();
  std::promise<void> release_;
  std::shared_future<void> release_future_ = release_.get_future().share();
};

TEST(WorkerPool, RunsPostedTasks) {
  WorkerPool pool(3, 1000);
  EXPECT_EQ(pool.threads(), 3);
  std::atomic<int> ran{0};
  for (int i = 0; i < 200; ++i) ASSERT_TRUE(pool.post([&] { ran.fetch_add(1); }));
  pool.stop();
  EXPECT_EQ(ran.load(), 200);
}

TEST(WorkerPool, RunsTasksOnItsOwnThreads) {
  WorkerPool pool(1, 10);
  std::promise<std::thread::id> where;
  ASSERT_TRUE(pool.post([&] { where.set_value(std::this_thread::get_id()); }));
  auto f = where.get_future();
  ASSERT_EQ(f.wait_for(kWait), std::future_status::ready);
  EXPECT_NE(f.get(), std::this_thread::get_id());
}

TEST(WorkerPool, RunsTasksConcurrently) {
  constexpr int kThreads = 4;
  WorkerPool pool(kThreads, 10);
  std::mutex m;
  std::condition_variable cv;
  int arrived = 0;
  std::atomic<int> met{0};
  // Each task waits for all the others: only possible when all run at once.
  for (int i = 0; i < kThreads; ++i) {
    ASSERT_TRUE(pool.post([&] {
      std::unique_lock lock(m);
      ++arrived;
      cv.notify_all();
      if (cv.wait_for(lock, kWait, [&] { return arrived == kThreads; })) met.fetch_add(1);
    }));
  }
  pool.stop();
  EXPECT_EQ(met.load(), kThreads);
}

TEST(WorkerPool, BoundedQueueRefusesWhenFull) {
  WorkerPool pool(1, 2);
  Blocker blocker;
  ASSERT_TRUE(pool.post(blocker.task()));
  ASSERT_TRUE(blocker.started());
  EXPECT_EQ(pool.busy(), 1u);

  std::atomic<int> ran{0};
  EXPECT_TRUE(pool.post([&] { ran.fetch_add(1); }));
  EXPECT_TRUE(pool.post([&] { ran.fetch_add(1); }));
  EXPECT_EQ(pool.queued(), 2u);
  EXPECT_FALSE(pool.post([&] { ran.fetch_add(100); }));
  EXPECT_EQ(pool.queued(), 2u);

  blocker.release();
  pool.stop();
  EXPECT_EQ(ran.load(), 2);
  EXPECT_EQ(pool.queued(), 0u);
  EXPECT_EQ(pool.busy(), 0u);
}

TEST(WorkerPool, QueueAcceptsAgainOnceDrained) {
  WorkerPool pool(1, 1);
  Blocker blocker;
  ASSERT_TRUE(pool.post(blocker.task()));
  ASSERT_TRUE(blocker.started());
  std::promise<void> first_done;
  ASSERT_TRUE(pool.post([&] { first_done.set_value(); }));
  EXPECT_FALSE(pool.post([] {}));
  blocker.release();
  ASSERT_EQ(first_done.get_future().wait_for(kWait), std::future_status::ready);
  std::promise<void> second_done;
  // The worker may still be finishing the first task, but the queue itself is empty.
  EXPECT_TRUE(pool.post([&] { second_done.set_value(); }));
  EXPECT_EQ(second_done.get_future().wait_for(kWait), std::future_status::ready);
}

TEST(WorkerPool, StopDrainsQueuedTasks) {
  WorkerPool pool(1, 100'000);  // large, so a refusal below can only mean "stopping"
  Blocker blocker;
  ASSERT_TRUE(pool.post(blocker.task()));
  ASSERT_TRUE(blocker.started());
  std::atomic<int> ran{0};
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(pool.post([&] { ran.fetch_add(1); }));

  std::thread stopper([&] { pool.stop(); });
  // Once stopping, the pool refuses new work but still owes the five queued tasks.
  auto deadline = std::chrono::steady_clock::now() + kWait;
  bool refused = false;
  int accepted = 0;  // posted before stop() got the lock; they are owed too
  while (!refused && std::chrono::steady_clock::now() < deadline) {
    if (pool.post([&] { ran.fetch_add(100); })) {
      ++accepted;
      std::this_thread::yield();
    } else {
      refused = true;
    }
  }
  EXPECT_TRUE(refused);
  EXPECT_EQ(ran.load(), 0);
  blocker.release();
  stopper.join();
  EXPECT_EQ(ran.load(), 5 + 100 * accepted);
}

TEST(WorkerPool, PostAfterStopIsRefused) {
  WorkerPool pool(2, 10);
  pool.stop();
  bool ran = false;
  EXPECT_FALSE(pool.post([&] { ran = true; }));
  EXPECT_FALSE(ran);
  EXPECT_EQ(pool.threads(), 0);
}

TEST(WorkerPool, StopIsIdempotent) {
  WorkerPool pool(2, 10);
  std::atomic<int> ran{0};
  ASSERT_TRUE(pool.post([&] { ran.fetch_add(1); }));
  pool.stop();
  pool.stop();
  EXPECT_EQ(ran.load(), 1);
}  // the destructor stops a third time

TEST(WorkerPool, DestructorDrainsQueuedTasks) {
  std::atomic<int> ran{0};
  {
    WorkerPool pool(2, 100);
    for (int i = 0; i < 50; ++i) ASSERT_TRUE(pool.post([&] { ran.fetch_add(1); }));
  }
  EXPECT_EQ(ran.load(), 50);
}

TEST(WorkerPool, ThrowingTaskDoesNotKillThePool) {
  WorkerPool pool(1, 10);
  ASSERT_TRUE(pool.post([] { throw std::runtime_error("task failed"); }));
  std::promise<void> after;
  ASSERT_TRUE(pool.post([&] { after.set_value(); }));
  EXPECT_EQ(after.get_future().wait_for(kWait), std::future_status::ready);
  EXPECT_EQ(pool.threads(), 1);
}

TEST(WorkerPool, TaskThrowingANonStandardExceptionDoesNotKillThePool) {
  WorkerPool pool(1, 10);
  ASSERT_TRUE(pool.post([] { throw 42; }));
  std::promise<void> after;
  ASSERT_TRUE(pool.post([&] { after.set_value(); }));
  EXPECT_EQ(after.get_future().wait_for(kWait), std::future_status::ready);
}

TEST(WorkerPool, BusyCountsRunningTasks) {
  WorkerPool pool(2, 10);
  Blocker a, b;
  ASSERT_TRUE(pool.post(a.task()));
  ASSERT_TRUE(pool.post(b.task()));
  ASSERT_TRUE(a.started());
  ASSERT_TRUE(b.started());
  EXPECT_EQ(pool.busy(), 2u);
  EXPECT_EQ(pool.queued(), 0u);
  a.release();
  b.release();
  pool.stop();
  EXPECT_EQ(pool.busy(), 0u);
}

}  // namespace worker_pool_test
}  // namespace gpurent
