// The notice file: reading a notice, merging by id, and replacing the file whole.
#include "agent/notice_file.h"

#include "agent/state_files.h"
#include "core/id.h"
#include "core/time.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <stdexcept>

namespace gpurent::agent {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr mode_t kNoticeFileMode = 0644;
constexpr mode_t kNoticeDirMode = 0755;
// A file larger than this was not written by the agent (kMaxNotices of kMaxNoticeMessage).
constexpr std::uintmax_t kMaxNoticeFileBytes = 1 << 20;

[[noreturn]] void bad_notice(const std::string& field, const std::string& reason) {
  throw std::invalid_argument("notice." + field + " " + reason);
}

Timestamp notice_time(const json& value, const std::string& field) {
  auto it = value.find(field);
  if (it == value.end() || it->is_null()) bad_notice(field, "is required");
  if (!it->is_string()) bad_notice(field, "must be an RFC 3339 time");
  auto t = parse_rfc3339(it->get_ref<const std::string&>());
  if (!t) bad_notice(field, "must be an RFC 3339 time");
  return *t;
}

std::optional<Timestamp> optional_notice_time(const json& value, const std::string& field) {
  auto it = value.find(field);
  if (it == value.end() || it->is_null()) return std::nullopt;
  return notice_time(value, field);
}

std::string notice_string(const json& value, const std::string& field, std::size_t max) {
  auto it = value.find(field);
  if (it == value.end() || it->is_null()) bad_notice(field, "is required");
  if (!it->is_string()) bad_notice(field, "must be a string");
  const auto& s = it->get_ref<const std::string&>();
  if (s.size() > max) bad_notice(field, "must be at most " + std::to_string(max) + " bytes");
  if (s.find('\0') != std::string::npos) bad_notice(field, "must not contain NUL");
  return s;
}

json optional_notice_time_json(const std::optional<Timestamp>& t) {
  return t ? json(format_rfc3339(*t)) : json(nullptr);
}

// The folder exists; the ones made here are 0755 whatever the umask. Existing ones are left
// as they are (/run is the system's).
void make_notice_dir(const fs::path& dir) {
  std::error_code ec;
  if (dir.empty() || fs::is_directory(dir, ec)) return;
  if (dir.has_parent_path() && dir.parent_path() != dir) make_notice_dir(dir.parent_path());
  if (::mkdir(dir.c_str(), kNoticeDirMode) != 0 && errno != EEXIST) {
    throw StateError("cannot make " + dir.string() + ": " + std::strerror(errno));
  }
  if (::chmod(dir.c_str(), kNoticeDirMode) != 0) {
    throw StateError("cannot set the mode of " + dir.string() + ": " + std::strerror(errno));
  }
}

}  // namespace

std::string_view to_string(NoticeKind kind) {
  return kNoticeKindNames.at(static_cast<std::size_t>(kind));
}

std::optional<NoticeKind> parse_notice_kind(std::string_view name) {
  auto it = std::find(kNoticeKindNames.begin(), kNoticeKindNames.end(), name);
  if (it == kNoticeKindNames.end()) return std::nullopt;
  return static_cast<NoticeKind>(std::distance(kNoticeKindNames.begin(), it));
}

Notice notice_from(const json& value) {
  if (!value.is_object()) throw std::invalid_argument("notice must be an object");
  Notice n;
  n.id = notice_string(value, "id", 64);
  if (!is_valid_id(id_prefix::kNotice, n.id)) bad_notice("id", "must be a notice id (ntc_…)");
  auto kind = parse_notice_kind(notice_string(value, "kind", 32));
  if (!kind) bad_notice("kind", "must be maintenance, fault or moved");
  n.kind = *kind;
  n.message = notice_string(value, "message", kMaxNoticeMessage);
  n.starts_at = notice_time(value, "starts_at");
  n.ends_at = optional_notice_time(value, "ends_at");
  n.respond_by = optional_notice_time(value, "respond_by");
  if (n.ends_at && *n.ends_at < n.starts_at) bad_notice("ends_at", "must not be before starts_at");
  return n;
}

json to_json(const Notice& n) {
  return {{"id", n.id},
          {"kind", std::string(to_string(n.kind))},
          {"message", n.message},
          {"starts_at", format_rfc3339(n.starts_at)},
          {"ends_at", optional_notice_time_json(n.ends_at)},
          {"respond_by", optional_notice_time_json(n.respond_by)}};
}

std::vector<Notice> merge_notices(std::vector<Notice> notices, const Notice& fresh, Timestamp now) {
  // By id, the later of two with the same id winning (a file can be edited by hand).
  std::map<std::string, Notice> by_id;
  for (auto& n : notices) {
    if (n.over_at() >= now) by_id.insert_or_assign(n.id, std::move(n));
  }
  by_id.insert_or_assign(fresh.id, fresh);
  notices.clear();
  for (auto& [id, n] : by_id) notices.push_back(std::move(n));
  auto by_start = [](const Notice& a, const Notice& b) {
    return a.starts_at != b.starts_at ? a.starts_at < b.starts_at : a.id < b.id;
  };
  std::sort(notices.begin(), notices.end(), by_start);
  while (notices.size() > kMaxNotices) {
    // The earliest that is not the fresh one goes first.
    auto oldest = notices.begin()->id == fresh.id ? std::next(notices.begin()) : notices.begin();
    notices.erase(oldest);
  }
  return notices;
}

std::vector<Notice> read_notice_file(const fs::path& file) {
  std::vector<Notice> out;
  std::error_code ec;
  auto size = fs::file_size(file, ec);
  if (ec || size > kMaxNoticeFileBytes) return out;
  std::ifstream in(file, std::ios::binary);
  json doc = json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (!doc.is_object() || doc.value("schema_version", json()) != json(kNoticeFileVersion)) {
    return out;
  }
  auto notices = doc.find("notices");
  if (notices == doc.end() || !notices->is_array()) return out;
  for (const auto& n : *notices) {
    try {
      out.push_back(notice_from(n));
    } catch (const std::invalid_argument&) {
      // Skipped: one bad notice does not hide the others.
    }
  }
  return out;
}

std::vector<Notice> publish_notice(const fs::path& file, const Notice& fresh, Timestamp now) {
  auto notices = merge_notices(read_notice_file(file), fresh, now);
  json listed = json::array();
  for (const auto& n : notices) listed.push_back(to_json(n));
  json doc{{"schema_version", kNoticeFileVersion},
           {"updated_at", format_rfc3339(now)},
           {"notices", std::move(listed)}};
  make_notice_dir(file.parent_path());
  write_file_atomic(file, doc.dump(2) + "\n", kNoticeFileMode);
  return notices;
}

}  // namespace gpurent::agent
