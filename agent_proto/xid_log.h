// Finds `NVRM: Xid` lines in kernel logs, whatever wrote them (dmesg, dmesg -T, syslog,
// journalctl, a container runtime's JSON log), and parses them into XidEvents.
#pragma once

#include "agent_proto/telemetry.h"

#include <chrono>
#include <cstddef>
#include <optional>
#include <string_view>
#include <vector>

namespace gpurent::agent_proto {

// A kernel log line longer than this is not one the kernel wrote (printk caps a record at
// 1 KiB; a JSON wrapper adds a little); it is skipped unread.
inline constexpr std::size_t kMaxKernelLogLineBytes = 8 * 1024;
// The text after the code is kept up to this many bytes (the limit xid_event_from_json sets).
inline constexpr std::size_t kMaxXidMessageBytes = 512;

// What a line's own time stamp leaves out. syslog and journalctl print no year, and syslog,
// journalctl and `dmesg -T` print local time without a zone.
struct KernelLogClock {
  int year = 1970;                     // the year for stamps that carry none
  std::chrono::minutes utc_offset{0};  // local time minus UTC on the node that wrote the log
};

// The event on one line, or nullopt when the line is not an `NVRM: Xid` line (or is one cut
// short before its code). `at` is set when the line carries a wall-clock time: dmesg -T,
// syslog and journalctl stamps (local time, read with `clock`), ISO-8601 stamps with or without
// a zone, and a container log's "time". Plain dmesg's seconds-since-boot give no `at`.
std::optional<XidEvent> parse_xid_line(std::string_view line, const KernelLogClock& clock);

// Every event in a multi-line log, in order; other lines are skipped.
std::vector<XidEvent> parse_xid_log(std::string_view text, const KernelLogClock& clock);

}  // namespace gpurent::agent_proto
