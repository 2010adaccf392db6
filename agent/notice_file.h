// The node's notice file (by default /run/gpurent/notice.json): what the platform has told
// the tenants on this node about maintenance, faults and moves, for their own software to read
// (a job scheduler that checkpoints, a login banner). The notice task writes it; it holds every
// notice the node has had that is not over yet, merged by id:
//
//   {"schema_version": 1, "updated_at": "RFC3339",
//    "notices": [{"id", "kind", "message", "starts_at", "ends_at", "respond_by"}]}
//
// It names no rental and no login: several rentals may share the node, and each can read it.
// docs/agent-notices.md is its contract for tenants.
#pragma once

#include "core/clock.h"

#include <nlohmann/json.hpp>

#include <array>
#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpurent::agent {

inline constexpr int kNoticeFileVersion = 1;
inline constexpr std::string_view kDefaultNoticeFile = "/run/gpurent/notice.json";
// Bounds on what a notice task may put into a file every tenant reads.
inline constexpr std::size_t kMaxNoticeMessage = 4096;
inline constexpr std::size_t kMaxNotices = 100;

enum class NoticeKind { kMaintenance, kFault, kMoved };
inline constexpr std::array<std::string_view, 3> kNoticeKindNames{"maintenance", "fault", "moved"};
std::string_view to_string(NoticeKind kind);
std::optional<NoticeKind> parse_notice_kind(std::string_view name);

struct Notice {
  std::string id;  // "ntc_…"
  NoticeKind kind = NoticeKind::kMaintenance;
  std::string message;
  Timestamp starts_at;
  std::optional<Timestamp> ends_at;     // none: it is over once it starts (a move, a fault)
  std::optional<Timestamp> respond_by;  // by when the tenant should have acted, if at all

  // When it stops being news: ends_at, or starts_at without one.
  Timestamp over_at() const { return ends_at.value_or(starts_at); }
  bool operator==(const Notice&) const = default;
};

// A notice task's "notice" object (or one of the file's): {"id", "kind", "message",
// "starts_at", "ends_at" (or null), "respond_by" (or null)}, times in RFC 3339. Other members
// are ignored. Throws std::invalid_argument naming the field: an id that is not "ntc_…", an
// unknown kind, a message over kMaxNoticeMessage bytes or with a NUL, a time that does not
// parse, an end before the start.
Notice notice_from(const nlohmann::json& value);
nlohmann::json to_json(const Notice& notice);

// The notices to keep at `now`: `notices` merged with `fresh` by id (fresh wins), those over
// before `now` dropped (fresh is kept whatever its times: it is the news being delivered, and
// is seen at least once), at most kMaxNotices (the ones starting latest), in start order.
std::vector<Notice> merge_notices(std::vector<Notice> notices, const Notice& fresh, Timestamp now);

// The notices in a notice file. A missing, unreadable or corrupt file, or one of another
// schema_version, reads as none; a notice in it that does not read is skipped.
std::vector<Notice> read_notice_file(const std::filesystem::path& file);

// Merges `fresh` into the file's notices (merge_notices) and replaces the file atomically (a
// temporary file beside it, then a rename), mode 0644 whatever the umask; its folder is made
// 0755 when missing. The notices written. Throws StateError when it cannot write.
std::vector<Notice> publish_notice(const std::filesystem::path& file, const Notice& fresh,
                                   Timestamp now);

}  // namespace gpurent::agent
