// Times on the agent protocol's wire: RFC 3339 in UTC with "Z", microseconds only when there
// are any ("2026-07-03T22:10:46Z", "2026-07-03T22:10:46.123456Z"). Both sides write this one
// form and accept only it (1 to 6 fraction digits): the agent is ours, so another shape is a
// bug or a forgery, not a dialect. Shared by the messages and the telemetry they carry.
#pragma once

#include "core/clock.h"

#include <optional>
#include <string>
#include <string_view>

namespace gpurent::agent_proto {

std::string format_wire_time(Timestamp t);
std::optional<Timestamp> parse_wire_time(std::string_view text);

}  // namespace gpurent::agent_proto
