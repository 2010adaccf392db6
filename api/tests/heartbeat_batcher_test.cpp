// The heartbeat batcher: beats written together, each done once its batch is, and at most
// max_pending waiting (queued or being written) while the database is slow; beyond it a beat
// is refused (kFull) and counted, and room comes back once a batch has been written.
#include "api/modules/heartbeat_batcher.h"

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace gpurent {
namespace heartbeat_batcher_test {

using namespace std::chrono_literals;
using Admission = HeartbeatBatcher::Admission;

// A database whose writes wait until the test lets them through, recording each batch.
class SlowDatabase {
 public:
  void write(const std::vector<HeartbeatBatcher::Beat>& batch) {
    std::unique_lock lock(mutex_);
    std::vector<std::string> nodes;
    for (const auto& b : batch) nodes.push_back(b.node_id);
    batches_.push_back(nodes);
    changed_.notify_all();
    changed_.wait(lock, [&] { return open_; });
  }
  void open() {
    std::lock_guard lock(mutex_);
    open_ = true;
    changed_.notify_all();
  }
  // Waits (up to 10 s) until `n` batches have started.
  std::vector<std::vector<std::string>> wait_for_batches(std::size_t n) {
    std::unique_lock lock(mutex_);
    changed_.wait_for(lock, 10s, [&] { return batches_.size() >= n; });
    return batches_;
  }
  void done(bool committed) {
    std::lock_guard lock(mutex_);
    committed ? ++committed_ : ++failed_;
    changed_.notify_all();
  }
  int wait_for_done(int n) {
    std::unique_lock lock(mutex_);
    changed_.wait_for(lock, 10s, [&] { return committed_ + failed_ >= n; });
    return committed_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<std::vector<std::string>> batches_;
  bool open_ = false;
  int committed_ = 0;
  int failed_ = 0;
};

HeartbeatBatcher::Beat beat(const std::string& node, SlowDatabase& db) {
  return {.node_id = node,
          .received_at = {},
          .sent_at = {},
          .sample = std::nullopt,
          .done = [&db](bool committed) { db.done(committed); }};
}

TEST(HeartbeatBatcher, RefusesBeatsBeyondMaxPendingUntilTheDatabaseCatchesUp) {
  SlowDatabase db;
  HeartbeatBatcher batcher(10ms, 100, 3, [&](const auto& batch) { db.write(batch); });
  EXPECT_EQ(batcher.max_pending(), 3u);

  // The first batch is being written (and the write is stuck): it still counts.
  ASSERT_EQ(batcher.add(beat("n1", db)), Admission::kQueued);
  ASSERT_EQ(db.wait_for_batches(1).size(), 1u);
  EXPECT_EQ(batcher.pending(), 1u);
  // Two more wait behind it; that is all three.
  EXPECT_EQ(batcher.add(beat("n2", db)), Admission::kQueued);
  EXPECT_EQ(batcher.add(beat("n3", db)), Admission::kQueued);
  EXPECT_EQ(batcher.pending(), 3u);
  EXPECT_EQ(batcher.refused_total(), 0u);

  // The fourth and fifth are refused, not held; their `done` is never called.
  EXPECT_EQ(batcher.add(beat("n4", db)), Admission::kFull);
  EXPECT_EQ(batcher.add(beat("n5", db)), Admission::kFull);
  EXPECT_EQ(batcher.pending(), 3u) << "the bound holds";
  EXPECT_EQ(batcher.refused_total(), 2u);

  // The database catches up: everything queued is written and acknowledged, and there is
  // room again.
  db.open();
  EXPECT_EQ(db.wait_for_done(3), 3);
  auto batches = db.wait_for_batches(2);
  ASSERT_EQ(batches.size(), 2u);
  EXPECT_EQ(batches[0], std::vector<std::string>{"n1"});
  EXPECT_EQ(batches[1], (std::vector<std::string>{"n2", "n3"}));
  for (auto until = std::chrono::steady_clock::now() + 10s;
       batcher.pending() != 0 && std::chrono::steady_clock::now() < until;) {
    std::this_thread::sleep_for(5ms);
  }
  EXPECT_EQ(batcher.pending(), 0u);
  EXPECT_EQ(batcher.add(beat("n6", db)), Admission::kQueued);
  EXPECT_EQ(db.wait_for_done(4), 4);
  EXPECT_EQ(batcher.refused_total(), 2u);

  batcher.stop();
  EXPECT_EQ(batcher.add(beat("n7", db)), Admission::kStopped);
  EXPECT_EQ(batcher.refused_total(), 2u) << "a stopped batcher's refusal is not overload";
}

TEST(HeartbeatBatcher, AFullBatchIsWrittenAtOnceAndAFailedOneIsReportedToEachBeat) {
  SlowDatabase db;
  db.open();
  int writes = 0;
  HeartbeatBatcher batcher(10s, 2, 10, [&](const auto& batch) {
    db.write(batch);
    if (++writes == 1) throw std::runtime_error("the database is gone");
  });
  auto started = std::chrono::steady_clock::now();
  EXPECT_EQ(batcher.add(beat("a", db)), Admission::kQueued);
  EXPECT_EQ(batcher.add(beat("b", db)), Admission::kQueued);
  EXPECT_EQ(db.wait_for_done(2), 0) << "the first batch failed: both beats hear it";
  EXPECT_LT(std::chrono::steady_clock::now() - started, 5s) << "not the 10 s window";
  EXPECT_EQ(batcher.add(beat("c", db)), Admission::kQueued);
  batcher.stop();  // writes what is queued first
  EXPECT_EQ(db.wait_for_done(3), 1);
}

// An agent at the limit sends its next heartbeat as soon as it hears the ack: by then the
// slot its last one held must be free, or the next is refused as overloaded.
TEST(HeartbeatBatcher, ABeatsSlotIsFreeBeforeItsAckIsSent) {
  std::mutex mutex;
  std::condition_variable acked;
  std::optional<Admission> next;
  HeartbeatBatcher* self = nullptr;
  HeartbeatBatcher batcher(1ms, 100, 1, [](const auto&) {});
  self = &batcher;
  ASSERT_EQ(batcher.add({.node_id = "n1",
                         .received_at = {},
                         .sent_at = {},
                         .sample = std::nullopt,
                         .done =
                             [&](bool) {
                               // What the agent's next heartbeat meets, sent on this ack.
                               Admission a = self->add({.node_id = "n1",
                                                        .received_at = {},
                                                        .sent_at = {},
                                                        .sample = std::nullopt,
                                                        .done = [](bool) {}});
                               std::lock_guard lock(mutex);
                               next = a;
                               acked.notify_all();
                             }}),
            Admission::kQueued);
  std::unique_lock lock(mutex);
  ASSERT_TRUE(acked.wait_for(lock, 10s, [&] { return next.has_value(); }));
  EXPECT_EQ(*next, Admission::kQueued);
}

}  // namespace heartbeat_batcher_test
}  // namespace gpurent
