// Jittered exponential backoff.
#include "agent/backoff.h"

#include <algorithm>

namespace gpurent::agent {

Backoff::Backoff(std::chrono::milliseconds initial, std::chrono::milliseconds max,
                 std::uint64_t seed)
    : initial_(std::max(initial, std::chrono::milliseconds(1))),
      max_(std::max(max, initial_)),
      ceiling_(initial_),
      random_(seed) {}

std::chrono::milliseconds Backoff::next() {
  auto ceiling = ceiling_;
  ceiling_ = std::min(ceiling_ * 2, max_);
  std::uniform_int_distribution<std::int64_t> pick(ceiling.count() / 2, ceiling.count());
  return std::chrono::milliseconds(pick(random_));
}

void Backoff::reset() {
  ceiling_ = initial_;
}

}  // namespace gpurent::agent
