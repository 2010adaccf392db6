// A rental's checkpoint command, run when a notice reaches its node (the notice task): the
// tenant's own way to save its work before maintenance. It runs as the rental's login, never
// as root, through `/bin/sh -c`, in the login's home (or /), in a clean environment:
//
//   HOME, USER, LOGNAME      the login's
//   SHELL=/bin/sh, PATH=/usr/local/bin:/usr/bin:/bin
//   GPURENT_NOTICE_FILE      the node's notice file (notice_file.h)
//   GPURENT_NOTICE_ID, GPURENT_NOTICE_KIND, GPURENT_NOTICE_STARTS_AT   the notice's
//
// in a process group of its own, which is killed (SIGTERM, then SIGKILL 5 s later) when it
// outlives its time limit or the agent stops. Started by run_hook (hook_runner.h).
#pragma once

#include "agent/notice_file.h"

#include <nlohmann/json.hpp>

#include <chrono>
#include <filesystem>
#include <optional>
#include <stop_token>
#include <string>

namespace gpurent::agent {

inline constexpr std::chrono::seconds kCheckpointKillGrace{5};
inline constexpr const char* kCheckpointPath = "/usr/local/bin:/usr/bin:/bin";

struct CheckpointRun {
  std::string login;    // the rental's Unix login
  std::string command;  // given to /bin/sh -c
  std::chrono::milliseconds timeout{std::chrono::minutes(10)};
  Notice notice;                      // its GPURENT_NOTICE_* variables
  std::filesystem::path notice_file;  // GPURENT_NOTICE_FILE; empty: the variable is empty
};

struct CheckpointResult {
  bool ran = false;              // started as the login
  std::optional<int> exit_code;  // when it exited (not when a signal or a time limit ended it)
  bool timed_out = false;
  bool stopped = false;  // the agent stopped while it ran
  double seconds = 0;
  std::optional<std::string> skipped;  // why it was not run
  std::string output_tail;             // the last 4 KiB of its output, standard error too

  // "exited 0 after 2 s", "timed out after 600 s", "skipped: no login gpu-ab12cd on this node".
  std::string describe() const;
  // {"ran", "exit_code" (or null), "timed_out", "seconds", "skipped" (when skipped),
  //  "output_tail"}: the notice task's result.
  nlohmann::json to_json() const;
};

// Runs the command as the login, to its end. Not run, and `skipped` says why, when the login
// is not a login name, does not exist here or is uid 0, or when it is another user than the
// agent's own and the agent is not root (it cannot switch users then). Never throws for the
// command's sake.
CheckpointResult run_checkpoint(const CheckpointRun& run, const std::stop_token& stop);

}  // namespace gpurent::agent
