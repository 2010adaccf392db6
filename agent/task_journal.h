// The task ids this agent has taken, with their results: how it runs each id at most once
// across reconnects and restarts (agent_proto/README.md "Task delivery"). Kept in the state
// folder and rewritten whole on every change.
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

class TaskJournal {
 public:
  enum class Seen {
    kNew,       // never taken: run it
    kRunning,   // taken and not ended: still running here, or cut short by a restart
    kFinished,  // ended: its result is remembered
  };

  // Loads `file` when it exists. Tasks taken but not finished before a restart end now, with
  // a failed result: they may have done part of their work, and an id never runs twice.
  // Throws StateError for a file that is not a journal.
  // `limit` entries are kept (tests make it small).
  explicit TaskJournal(std::filesystem::path file, std::size_t limit = kJournalEntries);

  Seen seen(const std::string& task_id) const;
  // Records the id before the task is acked and started (and saved before it returns).
  void begin(const std::string& task_id);
  // Records the result; a result for an id already finished is ignored.
  void finish(const agent_proto::TaskResult& result);
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
