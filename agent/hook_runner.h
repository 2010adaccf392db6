// Runs the operator's hooks: the commands a node's owner configures for what the agent cannot
// do itself (write an image, wipe scratch disks, reload sshd). A hook gets the task's facts in
// its environment and its payload on standard input, its output is read line by line as it
// comes (a provisioning hook reports progress that way), and it has a time limit after which
// its whole process group is killed, as it is when the agent stops. The same runner starts a
// rental's own commands on the node (checkpoint_runner.h): as the rental's login, in a clean
// environment.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

namespace gpurent::agent {

// The user a command runs as: the child sets its group, its supplementary groups and then its
// user before exec, and refuses to run if any of them fails (the agent must be root).
struct HookUser {
  uid_t uid = 0;
  gid_t gid = 0;
  std::vector<gid_t> groups;  // supplementary groups, as getgrouplist gives them
};

struct HookRun {
  std::vector<std::string> argv;           // argv[0] a path, or a name looked up on PATH
  std::map<std::string, std::string> env;  // added to the agent's own environment
  std::string input;                       // written to its standard input, which then closes
  std::chrono::milliseconds timeout{std::chrono::minutes(10)};
  // True: the environment is `env` alone, nothing of the agent's own.
  bool clean_env = false;
  // Set: it runs as this user (HookUser). Unset: as the agent.
  std::optional<HookUser> user;
  // Where it starts, entered after the switch to `user`; empty: the agent's own folder.
  std::string working_dir;
  // Between the SIGTERM of a time limit or a stop and the SIGKILL.
  std::chrono::milliseconds kill_grace{std::chrono::seconds(2)};
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
// kill_grace later, SIGKILL. Never throws for the hook's sake: a command that cannot be
// started (exec, the switch to its user or its working folder failed) ends kNotStarted with
// the reason in `tail`.
HookResult run_hook(const HookRun& run, const std::function<void(const std::string&)>& on_line,
                    const std::stop_token& stop);

// A hook's command line from its configured form: words split on white space, with no
// quoting and no shell (a hook that needs either is a script). Empty when `command` is blank.
std::vector<std::string> hook_argv(const std::string& command);

}  // namespace gpurent::agent
