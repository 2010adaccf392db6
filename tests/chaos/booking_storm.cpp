// BookingStorm: a thread per client, each with its own random source.
#include "tests/chaos/booking_storm.h"

#include <nlohmann/json.hpp>

#include <algorithm>

namespace gpurent::testing::chaos {

BookingStorm::BookingStorm(StormOptions options) : options_(std::move(options)) {
  for (int i = 0; i < options_.clients; ++i) threads_.emplace_back([this, i] { client(i); });
}

BookingStorm::~BookingStorm() {
  stop();
}

void BookingStorm::stop() {
  stop_ = true;
  for (auto& t : threads_) {
    if (t.joinable()) t.join();
  }
}

std::vector<KeyRecord> BookingStorm::records() {
  std::lock_guard lock(mutex_);
  return records_;
}

SteadyTime BookingStorm::last_success(int replica) const {
  auto rep =
      replica < 0 ? std::max(last_ok_[0].load(), last_ok_[1].load()) : last_ok_[replica % 2].load();
  return SteadyTime(SteadyTime::duration(rep));
}

std::string BookingStorm::body(const StormOptions& o, const std::string& key,
                               const std::string& start) {
  return nlohmann::json{{"gpu_model", o.gpu_model}, {"gpu_count", 1}, {"start", start}, {"days", 1},
                        {"image_id", o.image_id},   {"name", key}}
      .dump();
}

void BookingStorm::client(int index) {
  std::mt19937 random(options_.seed * 7919u + static_cast<unsigned>(index));
  const std::string& token = options_.tokens[index % options_.tokens.size()];
  for (int n = 0; !stop_; ++n) {
    KeyRecord record;
    record.key = options_.tag + "-" + options_.phase + "-c" + std::to_string(index) + "-" +
                 std::to_string(n);
    record.client = index;
    record.phase = options_.phase;
    record.start = options_.starts[(index * 7 + n) % options_.starts.size()];
    if (options_.now_every > 0 && n % options_.now_every == 0 && options_.now_budget &&
        options_.now_budget->fetch_sub(1) > 0) {
      record.start = "now";
    }
    book_with_retries(record, token, body(options_, record.key, record.start), options_.target,
                      options_.policy, index + n, random);
    if (record.outcome == KeyRecord::Outcome::kBooked) {
      ++acknowledged_;
      const Attempt& ok = record.attempts.back();
      auto& last = last_ok_[ok.replica % 2];
      auto at = ok.start.time_since_epoch().count();
      for (auto seen = last.load(); seen < at && !last.compare_exchange_weak(seen, at);) {
      }
    }
    {
      std::lock_guard lock(mutex_);
      records_.push_back(std::move(record));
    }
    if (options_.think.count() > 0) std::this_thread::sleep_for(options_.think);
  }
}

}  // namespace gpurent::testing::chaos
