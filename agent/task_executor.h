// What the agent does for each task kind: provisioning and wiping through the operator's hooks
// (or simulated), the access files sshd reads (access_files.h), the login probe that proves
// them (login_probe.h), the end of a rental's logins (login_sessions.h), a health probe,
// notices to the node's tenants (notice_file.h) with their checkpoint commands
// (checkpoint_runner.h), and a reboot of the whole node through the operator's hook.
// Hooks get the task's facts in GPURENT_* variables and a versioned JSON document on
// standard input (hook_input below; hook_runner.h).
#pragma once

#include "agent/gpu_backend.h"
#include "agent/task_journal.h"
#include "agent_proto/messages.h"

#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

namespace gpurent::agent {

struct TaskOutcome {
  bool ok = false;
  std::string message;
  std::optional<nlohmann::json> result;
};

using ProgressFn = std::function<void(int percent, const std::string& message)>;

class TaskExecutor {
 public:
  virtual ~TaskExecutor() = default;
  // Runs one task to its end. `stop` asks it to give up (the agent is stopping): it returns
  // nullopt, the task is left unfinished, and after a restart it ends as interrupted.
  virtual std::optional<TaskOutcome> execute(const agent_proto::Task& task,
                                             const ProgressFn& progress,
                                             const std::stop_token& stop) = 0;
};

// What the executors do on this node. Without hooks the executor simulates: provisioning is
// a delay and a wipe removes the access files only; the access files are written either way.
struct ExecutorOptions {
  // Where the access files go (access_files.h).
  std::filesystem::path access_root;
  // The provisioning hook (hook_runner.h): writes the image the payload names onto the
  // node's disks for the payload's GPUs and prints `progress <0-100> <message>` lines, which
  // become the task's progress. Empty: a simulated delay instead.
  std::vector<std::string> provision_hook;
  std::chrono::milliseconds provision_timeout{std::chrono::minutes(30)};
  std::chrono::milliseconds provision_delay{2000};
  // Run after the access files changed, with GPURENT_ACCESS_ACTION install or revoke and
  // GPURENT_ACCESS_USER (the login): creates the Unix user and reloads sshd, or removes the
  // user once its processes are gone. Revoking runs it once per login. Empty: none.
  std::vector<std::string> access_hook;
  // Wipes what the rental left (scratch disks, GPU memory) after its access is gone.
  std::vector<std::string> wipe_hook;
  std::chrono::milliseconds hook_timeout{std::chrono::minutes(10)};  // access and wipe hooks
  // The burn-in hook: runs the operator's burn-in tools and writes their outputs into the
  // folder GPURENT_BURN_IN_DIR names (all_reduce_perf.txt, nvbandwidth.txt, dcgmi_diag.txt,
  // gpu_burn.txt; whichever it runs, as `gpurent-agent burn-in --from` reads them). The agent
  // parses them and reports the figures (agent_proto/burn_in/figures.h). Empty: the simulated
  // backend's outputs, or nothing measured.
  std::vector<std::string> burn_in_hook;
  std::chrono::milliseconds burn_in_timeout{std::chrono::minutes(30)};
  // Before install_access reports the access ready: the GPUs' health probe, and a login to
  // the node's sshd at this "host:port" with the payload's probe certificate for
  // `probe_key`, retried for `sshd_wait` (the access hook may just have reloaded sshd); a
  // payload without a probe gets the older check, sshd's SSH banner. Empty: no sshd to check
  // (the simulated backend).
  std::string sshd_address;
  std::chrono::milliseconds sshd_wait{std::chrono::seconds(15)};
  // The agent's probe key (login_probe.h, `<state-dir>/ssh_probe_key`); empty: none.
  std::filesystem::path probe_key;
  // How long revoke_access and wipe keep killing a login's processes before they fail.
  std::chrono::milliseconds kill_wait{std::chrono::seconds(5)};
  // The node's notice file (notice_file.h), which the notice task writes; empty: not written.
  std::filesystem::path notice_file;
  // False: a notice's checkpoint command is never run, its result says so (the fleet
  // simulator: its rentals' logins are not this machine's).
  bool run_checkpoints = true;
  // The reboot hook: reboots the node (`systemctl reboot`). Before it runs the task notes the
  // current boot id (`boot_id_file`) in `reboot_notes` (the task journal), so that the agent
  // after the reboot reports it succeeded when the boot id changed. A hook that exits non-zero
  // fails the task; after one that exits 0 (or that a signal ended: the shutdown's) the task
  // waits `reboot_settle` for the node to go down, which stops the agent and leaves the task
  // to the journal, and reports by the hook's status if it did not.
  // Empty: a simulated reboot, `reboot_delay` long.
  std::vector<std::string> reboot_hook;
  std::chrono::milliseconds reboot_timeout{std::chrono::minutes(2)};
  std::chrono::milliseconds reboot_delay{2000};
  std::chrono::milliseconds reboot_settle{std::chrono::seconds(30)};
  RebootNotes* reboot_notes = nullptr;  // outlives the executor; none: nothing noted
  std::filesystem::path boot_id_file = kBootIdFile;
};

// What a hook reads on standard input, a JSON object (hook_version 1):
//   {"hook_version": 1, "task_id": "tsk_…", "kind": "install_access", "rental_id": "rnt_…"
//    or null, "gpu_indices": [0, 1], "image_id": "img_…" or null, "access_root": "/etc/…",
//    "access": {"action": "install"|"revoke", "user": "gpu-…"} (the access hook only),
//    "payload": {the task's payload}}
// `access_action` empty: no "access" member.
inline constexpr int kHookInputVersion = 1;
nlohmann::json hook_input(const agent_proto::Task& task, const std::filesystem::path& access_root,
                          const std::string& access_action = "",
                          const std::string& access_user = "");

// `backend` answers health_probe; it outlives the executor.
std::unique_ptr<TaskExecutor> make_executor(const ExecutorOptions& options, GpuBackend& backend);

// The executor without hooks, as the fleet simulator and tests run it.
struct SimulatedExecutorOptions {
  std::filesystem::path access_root;
  std::chrono::milliseconds provision_delay{2000};
  std::filesystem::path notice_file;  // empty: none written
  std::chrono::milliseconds reboot_delay{2000};
};
std::unique_ptr<TaskExecutor> make_simulated_executor(const SimulatedExecutorOptions& options,
                                                      GpuBackend& backend);

}  // namespace gpurent::agent
