// The booking storm: N clients, each a thread booking one GPU at a time with a fresh
// Idempotency-Key per booking (book_with_retries), spread over the replicas, until stopped.
// A client stops between bookings, never in the middle of one's retries, so every key's
// outcome is known when stop() returns.
#pragma once

#include "tests/chaos/booking_client.h"

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace gpurent::testing::chaos {

struct StormOptions {
  std::string phase;  // names the keys: <tag>-<phase>-c<client>-<n>
  std::string tag;    // the run's
  int clients = 8;
  std::vector<std::string> tokens;  // client i books with tokens[i % size]
  std::string gpu_model;
  std::string image_id;
  std::vector<std::string> starts;  // future start instants, picked in turn
  // Every now_every-th booking of a client starts now (its rental provisions on an agent)
  // while the shared budget lasts: the GPUs free now are fewer than the future days'.
  int now_every = 6;
  std::shared_ptr<std::atomic<int>> now_budget;
  std::chrono::milliseconds think{0};  // a client's pause between bookings
  BookingTarget target;
  RetryPolicy policy;
  unsigned seed = 1;
};

class BookingStorm {
 public:
  explicit BookingStorm(StormOptions options);
  ~BookingStorm();  // stop()
  BookingStorm(const BookingStorm&) = delete;
  BookingStorm& operator=(const BookingStorm&) = delete;

  // Asks every client to stop after its current booking and waits for them.
  void stop();
  // Bookings acknowledged (201) so far, across clients.
  int acknowledged() const { return acknowledged_.load(); }
  // When the latest acknowledged attempt sent to `replica` (-1: any) started; the epoch when
  // none was yet. A fault is recovered from once a booking sent after it succeeds.
  SteadyTime last_success(int replica = -1) const;
  // Every key the storm made, once stopped.
  std::vector<KeyRecord> records();
  // The request body of a key's booking (the same for every retry of it).
  static std::string body(const StormOptions& o, const std::string& key, const std::string& start);

 private:
  void client(int index);

  StormOptions options_;
  std::atomic<bool> stop_{false};
  std::atomic<int> acknowledged_{0};
  std::atomic<SteadyTime::rep> last_ok_[2] = {0, 0};  // replicas 0 and 1
  std::mutex mutex_;
  std::vector<KeyRecord> records_;
  std::vector<std::thread> threads_;
};

}  // namespace gpurent::testing::chaos
