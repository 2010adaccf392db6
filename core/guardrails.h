// Guardrails: the limits an org sets for itself and an API token carries on top (API.md
// "Guardrails"). One type for both, so the booking, the extension and billing's spend check
// read the same fields; where both apply, the stricter of each limit holds.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>

namespace gpurent {

struct Guardrails {
  std::optional<int> max_concurrent_gpus;
  std::optional<int> max_days;
  std::optional<std::int64_t> spend_limit_minor;  // per calendar month
};

// The stricter of two optional limits: absent is no limit.
template <typename T>
std::optional<T> stricter(const std::optional<T>& a, const std::optional<T>& b) {
  if (!a) return b;
  if (!b) return a;
  return std::min(*a, *b);
}

// The stricter of each limit of `a` and `b`.
inline Guardrails stricter(const Guardrails& a, const Guardrails& b) {
  return {stricter(a.max_concurrent_gpus, b.max_concurrent_gpus), stricter(a.max_days, b.max_days),
          stricter(a.spend_limit_minor, b.spend_limit_minor)};
}

}  // namespace gpurent
