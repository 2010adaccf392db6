// What ends a rental's logins on the node for good: every process running as the login's
// uid, found by reading each process's credentials in /proc (real, effective and saved uid;
// never by name, which a process chooses itself), killed with SIGKILL until a scan finds
// none. revoke_access and wipe run it after the login's access files are gone, so nothing
// the rental started (an SSH session, a tmux, a nohup'ed job) outlives its access.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace gpurent::agent {

// The uid of a login on this node (getpwnam_r); nullopt when there is no such user.
std::optional<uid_t> login_uid(const std::string& login);

// The real, effective and saved uid of a /proc/<pid>/status text ("Uid:\t1000\t1000\t1000\t
// 1000"); nullopt when it has no well-formed Uid line.
struct ProcessUids {
  uid_t real = 0;
  uid_t effective = 0;
  uid_t saved = 0;
};
std::optional<ProcessUids> status_uids(const std::string& status_text);

// Whether a status text is a zombie's ("State:\tZ (zombie)"): it has ended and runs nothing,
// only its parent has not collected it yet.
bool status_is_zombie(const std::string& status_text);

// Every live process under `proc_root` (/proc, or a test's folder of <pid>/status files)
// whose real, effective or saved uid is `uid`, in pid order. Zombies and this process are
// left out.
std::vector<pid_t> processes_of(uid_t uid, const std::filesystem::path& proc_root = "/proc");

struct KillReport {
  int killed = 0;           // distinct processes sent SIGKILL
  std::vector<pid_t> left;  // still there when `bound` ran out (none: all ended)
};

// Sends SIGKILL to every process of `uid` and scans again, until a scan finds none or
// `bound` has passed. uid 0 is refused (std::invalid_argument): no rental runs as root.
KillReport kill_processes_of(uid_t uid, std::chrono::milliseconds bound = std::chrono::seconds(5),
                             const std::filesystem::path& proc_root = "/proc");

}  // namespace gpurent::agent
