// Reconnect delays: exponential with jitter, so a fleet that lost the control plane at once
// does not come back at once.
#pragma once

#include <chrono>
#include <cstdint>
#include <random>

namespace gpurent::agent {

class Backoff {
 public:
  Backoff(std::chrono::milliseconds initial, std::chrono::milliseconds max, std::uint64_t seed);

  // The next delay: uniform in [ceiling/2, ceiling], the ceiling doubling from `initial` up to
  // `max`. Half the ceiling at least, so a reconnect storm still spreads but never spins.
  std::chrono::milliseconds next();
  // After a connection that worked: the next failure waits `initial` again.
  void reset();

 private:
  std::chrono::milliseconds initial_;
  std::chrono::milliseconds max_;
  std::chrono::milliseconds ceiling_;
  std::mt19937_64 random_;
};

}  // namespace gpurent::agent
