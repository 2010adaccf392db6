// Waiting in tests for a condition to hold, up to a deadline, instead of sleeping for a
// guessed time and assuming it happened meanwhile.
#pragma once

#include <chrono>
#include <thread>

namespace gpurent::testing {

// Generous, because a loaded two-core machine running sanitizer builds is slow; a wait that
// succeeds returns as soon as its condition holds, so the bound costs nothing then.
inline constexpr std::chrono::milliseconds kWaitLimit{30'000};

// Calls `condition` until it returns true or `limit` has passed, pausing `poll` between
// calls; returns whether it held. The condition is checked after every pause, the last one
// included.
template <typename Condition>
bool wait_for(Condition&& condition, std::chrono::milliseconds limit = kWaitLimit,
              std::chrono::milliseconds poll = std::chrono::milliseconds(10)) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  for (;;) {
    if (condition()) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(poll);
  }
}

}  // namespace gpurent::testing
