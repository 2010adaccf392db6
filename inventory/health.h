// A node's or a GPU's recorded health (DESIGN.md "Health"): unknown until an agent reports,
// then ok, warning or critical by the health rules or the agent's silence. Pure.
#pragma once

#include <optional>
#include <string_view>

namespace gpurent::inventory {

// In order of concern: a worse health compares greater.
enum class Health { kUnknown, kOk, kWarning, kCritical };

// Lower-case wire and column names ("unknown", "ok", "warning", "critical"); parsing is exact.
std::string_view to_string(Health health);
std::optional<Health> parse_health(std::string_view text);

}  // namespace gpurent::inventory
