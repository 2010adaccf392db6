// The task journal's file: {"tasks": [{"task_id", "result"?, "acked", "reboot_boot_id"?}]},
// oldest first.
#include "agent/task_journal.h"

#include "agent/state_files.h"

#include <algorithm>
#include <fstream>

namespace gpurent::agent {

namespace proto = agent_proto;
using nlohmann::json;

namespace {

json result_to_json(const proto::TaskResult& r) {
  json out = {{"ok", r.ok}, {"message", r.message}};
  if (r.result) out["result"] = *r.result;
  return out;
}

proto::TaskResult result_from_json(const std::string& task_id, const json& j) {
  proto::TaskResult r{.task_id = task_id,
                      .ok = j.at("ok").get<bool>(),
                      .message = j.at("message").get<std::string>(),
                      .result = std::nullopt};
  if (j.contains("result")) r.result = j["result"];
  return r;
}

// How a task the agent did not finish before it stopped ends after the restart.
proto::TaskResult cut_short(const std::string& task_id,
                            const std::optional<std::string>& reboot_boot_id,
                            const std::string& boot_id) {
  if (reboot_boot_id && !boot_id.empty()) {
    if (!reboot_boot_id->empty() && *reboot_boot_id != boot_id) {
      return {.task_id = task_id,
              .ok = true,
              .message = "rebooted: boot id changed",
              .result = json{{"boot_id_before", *reboot_boot_id}, {"boot_id_after", boot_id}}};
    }
    if (*reboot_boot_id == boot_id) {
      return {.task_id = task_id,
              .ok = false,
              .message =
                  "interrupted: the agent stopped while the reboot ran, and the node did "
                  "not reboot (same boot id)",
              .result = std::nullopt};
    }
  }
  return {.task_id = task_id,
          .ok = false,
          .message = "interrupted: the agent stopped while the task ran",
          .result = std::nullopt};
}

}  // namespace

std::string read_boot_id(const std::filesystem::path& file) {
  std::ifstream in(file);
  std::string line;
  if (!in || !std::getline(in, line)) return "";
  auto end = line.find_last_not_of(" \t\r\n");
  return end == std::string::npos ? "" : line.substr(0, end + 1);
}

TaskJournal::TaskJournal(std::filesystem::path file, std::size_t limit, std::string boot_id)
    : file_(std::move(file)), limit_(std::max<std::size_t>(limit, 1)) {
  if (!std::filesystem::exists(file_)) return;
  try {
    json doc = json::parse(read_state_file(file_));
    for (const auto& t : doc.at("tasks")) {
      Entry e{.task_id = t.at("task_id").get<std::string>(), .result = {}, .acked = false};
      if (t.contains("result")) e.result = result_from_json(e.task_id, t["result"]);
      e.acked = t.value("acked", false);
      if (t.contains("reboot_boot_id")) e.reboot_boot_id = t["reboot_boot_id"].get<std::string>();
      entries_.push_back(std::move(e));
    }
  } catch (const json::exception& e) {
    throw StateError("the task journal " + file_.string() + " is not readable: " + e.what());
  }
  bool interrupted = false;
  for (auto& e : entries_) {
    if (e.result) continue;
    e.result = cut_short(e.task_id, e.reboot_boot_id, boot_id);
    interrupted = true;
  }
  if (interrupted) save();
}

TaskJournal::Entry* TaskJournal::find(const std::string& task_id) {
  for (auto& e : entries_) {
    if (e.task_id == task_id) return &e;
  }
  return nullptr;
}

const TaskJournal::Entry* TaskJournal::find(const std::string& task_id) const {
  return const_cast<TaskJournal*>(this)->find(task_id);
}

TaskJournal::Seen TaskJournal::seen(const std::string& task_id) const {
  std::lock_guard lock(mutex_);
  const Entry* e = find(task_id);
  if (!e) return Seen::kNew;
  return e->result ? Seen::kFinished : Seen::kRunning;
}

void TaskJournal::begin(const std::string& task_id) {
  std::lock_guard lock(mutex_);
  if (find(task_id)) return;
  entries_.push_back({.task_id = task_id, .result = std::nullopt, .acked = false});
  // The oldest finished ones make room; one still running is never forgotten.
  while (entries_.size() > limit_) {
    auto oldest = std::find_if(entries_.begin(), entries_.end(),
                               [](const Entry& e) { return e.result.has_value(); });
    if (oldest == entries_.end()) break;
    entries_.erase(oldest);
  }
  save();
}

void TaskJournal::finish(const proto::TaskResult& result) {
  std::lock_guard lock(mutex_);
  Entry* e = find(result.task_id);
  if (!e) {
    entries_.push_back({.task_id = result.task_id, .result = result, .acked = false});
  } else if (e->result) {
    return;
  } else {
    e->result = result;
  }
  save();
}

void TaskJournal::reboot_started(const std::string& task_id, const std::string& boot_id) {
  std::lock_guard lock(mutex_);
  Entry* e = find(task_id);
  if (!e) {
    entries_.push_back({.task_id = task_id, .result = std::nullopt, .acked = false});
    e = &entries_.back();
  }
  e->reboot_boot_id = boot_id;
  save();
}

std::optional<proto::TaskResult> TaskJournal::result_of(const std::string& task_id) const {
  std::lock_guard lock(mutex_);
  const Entry* e = find(task_id);
  return e ? e->result : std::nullopt;
}

void TaskJournal::mark_acked(const std::string& task_id) {
  std::lock_guard lock(mutex_);
  Entry* e = find(task_id);
  if (!e || !e->result || e->acked) return;
  e->acked = true;
  save();
}

std::vector<proto::TaskResult> TaskJournal::unacked_results() const {
  std::lock_guard lock(mutex_);
  std::vector<proto::TaskResult> out;
  for (const auto& e : entries_) {
    if (e.result && !e.acked) out.push_back(*e.result);
  }
  return out;
}

std::vector<std::string> TaskJournal::recent_ids(std::size_t limit) const {
  std::lock_guard lock(mutex_);
  std::vector<std::string> out;
  for (auto it = entries_.rbegin(); it != entries_.rend() && out.size() < limit; ++it) {
    out.push_back(it->task_id);
  }
  return out;
}

void TaskJournal::save() const {
  json tasks = json::array();
  for (const auto& e : entries_) {
    json t = {{"task_id", e.task_id}, {"acked", e.acked}};
    if (e.result) t["result"] = result_to_json(*e.result);
    if (e.reboot_boot_id) t["reboot_boot_id"] = *e.reboot_boot_id;
    tasks.push_back(std::move(t));
  }
  write_file_atomic(file_, json{{"tasks", tasks}}.dump(), 0600);
}

}  // namespace gpurent::agent
