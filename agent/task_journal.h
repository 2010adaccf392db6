// The task ids this agent has taken, with their results: how it runs each id at most once
// across reconnects and restarts (agent_proto/README.md "Task delivery"). Kept in the state
// folder and rewritten whole on every change. A reboot task leaves a note in it, the boot it
// was started in, so that the agent after the reboot can tell that the node did reboot.
#pragma once

#include "agent_proto/messages.h"

#include <cstddef>
#include <deque>
#include <filesystem>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace gpurent::agent {

// Longer than the server retries: it sends an unfinished task again on every connection,
// and a node runs a handful a day.
inline constexpr std::size_t kJournalEntries = 1024;

// The kernel's id of the current boot, new at every boot.
inline constexpr const char* kBootIdFile = "/proc/sys/kernel/random/boot_id";
// The boot id in `file` (one line), trimmed; empty when it cannot be read.
std::string read_boot_id(const std::filesystem::path& file = kBootIdFile);

// Where the reboot task notes that it is about to reboot the node, before its hook runs: the
// journal (below), or nothing where there is no reboot to come back from.
class RebootNotes {
 public:
  virtual ~RebootNotes() = default;
  // Saved before it returns; throws StateError when it cannot be.
  virtual void reboot_started(const std::string& task_id, const std::string& boot_id) = 0;
};

class TaskJournal final : public RebootNotes {
 public:
  enum class Seen {
    kNew,       // never taken: run it
    kRunning,   // taken and not ended: still running here, or cut short by a restart
    kFinished,  // ended: its result is remembered
  };

  // Loads `file` when it exists. Tasks taken but not finished before a restart end now, with
  // a failed result: they may have done part of their work, and an id never runs twice. A
  // reboot task noted with a boot id other than `boot_id` (the current one, read_boot_id;
  // empty: unknown) ends succeeded instead, "rebooted: boot id changed": the node went down
  // and came back while the agent waited for it.
  // Throws StateError for a file that is not a journal.
  // `limit` entries are kept (tests make it small).
  explicit TaskJournal(std::filesystem::path file, std::size_t limit = kJournalEntries,
                       std::string boot_id = "");

  Seen seen(const std::string& task_id) const;
  // Records the id before the task is acked and started (and saved before it returns).
  void begin(const std::string& task_id);
  // Records the result; a result for an id already finished is ignored.
  void finish(const agent_proto::TaskResult& result);
  // RebootNotes: the running task `task_id` reboots the node, started in boot `boot_id`.
  void reboot_started(const std::string& task_id, const std::string& boot_id) override;
  std::optional<agent_proto::TaskResult> result_of(const std::string& task_id) const;
  // After the server acked the result: not sent again on the next connection.
  void mark_acked(const std::string& task_id);
  // Finished results the server has not acked yet, oldest first.
  std::vector<agent_proto::TaskResult> unacked_results() const;
  // The newest ids first, at most `limit`: a hello's recent_task_ids.
  std::vector<std::string> recent_ids(std::size_t limit = agent_proto::kMaxTaskIds) const;

 private:
  struct Entry {
    std::string task_id;
    std::optional<agent_proto::TaskResult> result;
    bool acked = false;
    std::optional<std::string> reboot_boot_id;  // a reboot task's boot when it was started
  };
  Entry* find(const std::string& task_id);
  const Entry* find(const std::string& task_id) const;
  void save() const;

  std::filesystem::path file_;
  std::size_t limit_;
  mutable std::mutex mutex_;
  std::deque<Entry> entries_;  // oldest first
};

}  // namespace gpurent::agent
