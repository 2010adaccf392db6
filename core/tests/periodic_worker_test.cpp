// Tests PeriodicWorker: the first tick, wake(), a tick asking for another, stop joining the
// tick in progress, a throwing tick logged by name without ending the loop, and every tick
// counted (runs, failures, the last success) for /metrics. No test depends on how long
// anything takes: intervals are an hour where a tick must come from wake(), and waits end
// on a count (kWait only when something is broken).
#include "core/periodic_worker.h"

#include "core/log.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <stdexcept>

namespace gpurent {
namespace periodic_worker_test {

using namespace std::chrono_literals;
using testing::HasSubstr;

constexpr auto kWait = 30s;  // generous: only reached when something is broken
constexpr auto kNever = std::chrono::milliseconds(1h);

// Counts ticks and lets a test wait for a count.
class TickCounter {
 public:
  void tick() {
    {
      std::lock_guard lock(mutex_);
      ++ticks_;
    }
    cv_.notify_all();
  }
  bool reaches(int n) {
    std::unique_lock lock(mutex_);
    return cv_.wait_for(lock, kWait, [&] { return ticks_ >= n; });
  }
  int ticks() {
    std::lock_guard lock(mutex_);
    return ticks_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  int ticks_ = 0;
};

TEST(PeriodicWorker, TicksAtStartThenOnEveryWake) {
  TickCounter counter;
  PeriodicWorker worker("test worker", kNever, [&] { counter.tick(); });
  worker.start();
  ASSERT_TRUE(counter.reaches(1));
  worker.wake();
  ASSERT_TRUE(counter.reaches(2));
  worker.wake();
  ASSERT_TRUE(counter.reaches(3));
  worker.stop();
  EXPECT_EQ(counter.ticks(), 3);  // the interval never ran out
}

TEST(PeriodicWorker, TicksAgainWhenTheIntervalRunsOut) {
  TickCounter counter;
  PeriodicWorker worker("test worker", 1ms, [&] { counter.tick(); });
  worker.start();
  EXPECT_TRUE(counter.reaches(5));
}

TEST(PeriodicWorker, WaitsAnIntervalFirstWhenAskedTo) {
  TickCounter counter;
  PeriodicWorker worker("test worker", kNever, [&] { counter.tick(); }, {.tick_at_start = false});
  worker.start();
  worker.stop();
  EXPECT_EQ(counter.ticks(), 0);
}

TEST(PeriodicWorker, WakeCutsTheFirstWaitShort) {
  TickCounter counter;
  PeriodicWorker worker("test worker", kNever, [&] { counter.tick(); }, {.tick_at_start = false});
  worker.start();
  worker.wake();
  EXPECT_TRUE(counter.reaches(1));
}

TEST(PeriodicWorker, ATickThatWakesItsWorkerIsFollowedAtOnce) {
  TickCounter counter;
  PeriodicWorker* self = nullptr;
  PeriodicWorker worker("test worker", kNever, [&] {
    counter.tick();
    if (counter.ticks() < 4) self->wake();  // work left behind: go again
  });
  self = &worker;
  worker.start();
  ASSERT_TRUE(counter.reaches(4));
  worker.stop();
  EXPECT_EQ(counter.ticks(), 4);
}

TEST(PeriodicWorker, StopWaitsForTheTickInProgressWhichSeesItStopping) {
  std::atomic<bool> finished{false};
  TickCounter started;
  PeriodicWorker* self = nullptr;
  PeriodicWorker worker("test worker", kNever, [&] {
    started.tick();
    // A long tick ends early between its steps once the worker is stopping.
    while (!self->stopping()) std::this_thread::yield();
    finished = true;
  });
  self = &worker;
  EXPECT_FALSE(worker.stopping());
  worker.start();
  ASSERT_TRUE(started.reaches(1));
  worker.stop();
  EXPECT_TRUE(finished.load());
  EXPECT_TRUE(worker.stopping());
}

TEST(PeriodicWorker, TheDestructorStops) {
  std::atomic<bool> finished{false};
  TickCounter started;
  {
    PeriodicWorker* self = nullptr;
    PeriodicWorker worker("test worker", kNever, [&] {
      started.tick();
      while (!self->stopping()) std::this_thread::yield();
      finished = true;
    });
    self = &worker;
    worker.start();
    ASSERT_TRUE(started.reaches(1));
  }
  EXPECT_TRUE(finished.load());
}

TEST(PeriodicWorker, StopIsIdempotentAndStartAfterItDoesNothing) {
  TickCounter counter;
  PeriodicWorker worker("test worker", kNever, [&] { counter.tick(); });
  worker.stop();  // never started
  worker.start();
  worker.wake();
  worker.stop();
  worker.stop();
  EXPECT_EQ(counter.ticks(), 0);
}

TEST(PeriodicWorker, StartTwiceRunsOneThread) {
  TickCounter counter;
  PeriodicWorker worker("test worker", kNever, [&] { counter.tick(); });
  worker.start();
  worker.start();
  ASSERT_TRUE(counter.reaches(1));
  worker.stop();
  EXPECT_EQ(counter.ticks(), 1);
}

class PeriodicWorkerLogTest : public testing::Test {
 protected:
  void SetUp() override { log::init(LogFormat::kText, "info"); }
};

TEST_F(PeriodicWorkerLogTest, AThrowingTickIsLoggedByNameAndTheLoopGoesOn) {
  TickCounter counter;
  PeriodicWorker worker("nightly sweep", kNever, [&] {
    counter.tick();
    if (counter.ticks() == 1) throw std::runtime_error("database is down");
    if (counter.ticks() == 2) throw 42;  // not a std::exception: logged all the same
  });
  testing::internal::CaptureStderr();
  worker.start();
  ASSERT_TRUE(counter.reaches(1));
  worker.wake();
  ASSERT_TRUE(counter.reaches(2));
  worker.wake();
  ASSERT_TRUE(counter.reaches(3));
  worker.stop();
  std::string out = testing::internal::GetCapturedStderr();
  EXPECT_THAT(out, HasSubstr("nightly sweep failed: database is down"));
  EXPECT_THAT(out, HasSubstr("nightly sweep failed: an exception that is not a std::exception"));
  EXPECT_EQ(counter.ticks(), 3);
}

TEST_F(PeriodicWorkerLogTest, EveryTickIsCountedAndAThrowIsAFailure) {
  TickCounter counter;
  PeriodicWorker worker("nightly sweep", kNever, [&] {
    counter.tick();
    if (counter.ticks() == 2) throw std::runtime_error("database is down");
  });
  EXPECT_EQ(worker.stats().runs(), 0u);
  EXPECT_FALSE(worker.stats().last_success());
  testing::internal::CaptureStderr();
  worker.start();
  ASSERT_TRUE(counter.reaches(1));
  worker.wake();
  ASSERT_TRUE(counter.reaches(2));
  worker.stop();  // joins the second tick, so its failure is counted
  testing::internal::GetCapturedStderr();
  EXPECT_EQ(worker.stats().runs(), 2u);
  EXPECT_EQ(worker.stats().failures(), 1u);
  EXPECT_TRUE(worker.stats().last_success());  // the first tick's
}

}  // namespace periodic_worker_test
}  // namespace gpurent
