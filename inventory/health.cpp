// Wire names of a recorded health.
#include "inventory/health.h"

#include <array>

namespace gpurent::inventory {
namespace {

constexpr std::array<std::string_view, 4> kHealthNames{"unknown", "ok", "warning", "critical"};

}  // namespace

std::string_view to_string(Health health) {
  return kHealthNames[static_cast<std::size_t>(health)];
}

std::optional<Health> parse_health(std::string_view text) {
  for (std::size_t i = 0; i < kHealthNames.size(); ++i) {
    if (kHealthNames[i] == text) return static_cast<Health>(i);
  }
  return std::nullopt;
}

}  // namespace gpurent::inventory
