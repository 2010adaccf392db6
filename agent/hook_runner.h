// Runs the operator's hooks: the commands a node's owner configures for what the agent cannot
// do itself (write an image, wipe scratch disks, reload sshd). A hook gets the task's facts in
// its environment and its payload on standard input, its output is read line by line as it
// comes (a provisioning hook reports progress that way), and it has a time limit after which
// its whole process group is killed, as it is when the agent stops.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <stop_token>
#include <string>
#include <vector>

namespace gpurent::agent {

struct HookRun {
  std::vector<std::string> argv;           // argv[0] a path, or a name looked up on PATH
  std::map<std::string, std::string> env;  // added to the agent's own environment
  std::string input;                       // written to its standard input, which then closes
  std::chrono::milliseconds timeout{std::chrono::minutes(10)};
};

struct HookResult {
  enum class End { kExited, kTimedOut, kStopped, kNotStarted };
  End end = End::kNotStarted;
  int exit_code = -1;  // kExited: its status; -1 when a signal ended it
  std::string tail;    // the last lines of its output (standard output and error), ≤ 4 KiB

  bool ok() const { return end == End::kExited && exit_code == 0; }
  // One line for a task's result: "exited with 3: <last line>", "timed out after 30s", ….
  std::string describe() const;
};

// Runs the hook to its end, calling on_line (on this thread) for every line it prints, each
// cut to 1,000 bytes. A time limit or a stop request sends SIGTERM to its process group and,
// two seconds later, SIGKILL. Never throws for the hook's sake: a command that cannot be
// started ends kNotStarted with the reason in `tail`.
HookResult run_hook(const HookRun& run, const std::function<void(const std::string&)>& on_line,
                    const std::stop_token& stop);

// A hook's command line from its configured form: words split on white space, with no
// quoting and no shell (a hook that needs either is a script). Empty when `command` is blank.
std::vector<std::string> hook_argv(const std::string& command);

}  // namespace gpurent::agent
