// run_checkpoint: who the command may run as (getpwnam_r, getgrouplist), its environment,
// and run_hook to start, time and kill it.
#include "agent/checkpoint_runner.h"

#include "agent/access_files.h"
#include "agent/hook_runner.h"

#include <grp.h>
#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <vector>

namespace gpurent::agent {

namespace {

struct LoginAccount {
  uid_t uid = 0;
  gid_t gid = 0;
  std::string home;
};

std::optional<LoginAccount> login_account(const std::string& login) {
  std::vector<char> buffer(16384);
  for (;;) {
    passwd entry{};
    passwd* found = nullptr;
    int e = ::getpwnam_r(login.c_str(), &entry, buffer.data(), buffer.size(), &found);
    if (e == ERANGE && buffer.size() < (1u << 20)) {
      buffer.resize(buffer.size() * 2);
      continue;
    }
    if (e != 0 || !found) return std::nullopt;
    return LoginAccount{
        .uid = entry.pw_uid, .gid = entry.pw_gid, .home = entry.pw_dir ? entry.pw_dir : ""};
  }
}

// The supplementary groups initgroups would give the login, read here: the child that
// switches to it may not (hook_runner.h).
std::vector<gid_t> login_groups(const std::string& login, gid_t gid) {
  std::vector<gid_t> groups(64);
  for (int attempt = 0; attempt < 8; ++attempt) {
    int n = static_cast<int>(groups.size());
    if (::getgrouplist(login.c_str(), gid, groups.data(), &n) >= 0) {
      groups.resize(static_cast<std::size_t>(n));
      return groups;
    }
    groups.resize(static_cast<std::size_t>(std::max(n, static_cast<int>(groups.size()) * 2)));
  }
  return {gid};
}

std::string checkpoint_seconds(double seconds) {
  char text[32];
  std::snprintf(text, sizeof text, "%.0f s", seconds);
  return text;
}

}  // namespace

std::string CheckpointResult::describe() const {
  if (skipped) return "skipped: " + *skipped;
  if (stopped) return "stopped after " + checkpoint_seconds(seconds);
  if (timed_out) return "timed out after " + checkpoint_seconds(seconds);
  if (exit_code)
    return "exited " + std::to_string(*exit_code) + " after " + checkpoint_seconds(seconds);
  return "ended by a signal after " + checkpoint_seconds(seconds);
}

nlohmann::json CheckpointResult::to_json() const {
  nlohmann::json out{{"ran", ran},
                     {"exit_code", exit_code ? nlohmann::json(*exit_code) : nlohmann::json()},
                     {"timed_out", timed_out},
                     {"seconds", std::round(seconds * 1000) / 1000},
                     {"output_tail", output_tail}};
  if (skipped) out["skipped"] = *skipped;
  return out;
}

CheckpointResult run_checkpoint(const CheckpointRun& run, const std::stop_token& stop) {
  CheckpointResult result;
  auto skip = [&](std::string why) {
    result.skipped = std::move(why);
    return result;
  };
  if (!valid_login_name(run.login)) return skip("'" + run.login + "' is not a login name");
  auto account = login_account(run.login);
  if (!account) return skip("no login " + run.login + " on this node");
  if (account->uid == 0)
    return skip("login " + run.login + " is uid 0: checkpoints never run as root");
  std::optional<HookUser> user;
  if (account->uid != ::geteuid()) {
    if (::geteuid() != 0) {
      return skip("the agent runs as uid " + std::to_string(::geteuid()) +
                  ", not root: it cannot run a command as " + run.login);
    }
    user = HookUser{
        .uid = account->uid, .gid = account->gid, .groups = login_groups(run.login, account->gid)};
  }
  std::error_code ec;
  std::string home = account->home;
  // A home that is missing (nobody's /nonexistent) is not a reason to skip the checkpoint.
  std::string working_dir = !home.empty() && std::filesystem::is_directory(home, ec) ? home : "/";

  HookRun hook{.argv = {"/bin/sh", "-c", run.command},
               .env = {{"HOME", home.empty() ? "/" : home},
                       {"USER", run.login},
                       {"LOGNAME", run.login},
                       {"SHELL", "/bin/sh"},
                       {"PATH", kCheckpointPath},
                       {"GPURENT_NOTICE_FILE", run.notice_file.string()},
                       {"GPURENT_NOTICE_ID", run.notice.id},
                       {"GPURENT_NOTICE_KIND", std::string(to_string(run.notice.kind))},
                       {"GPURENT_NOTICE_STARTS_AT", format_rfc3339(run.notice.starts_at)}},
               .input = "",
               .timeout = run.timeout,
               .clean_env = true,
               .user = user,
               .working_dir = working_dir,
               .kill_grace = kCheckpointKillGrace};
  auto started = std::chrono::steady_clock::now();
  auto r = run_hook(hook, nullptr, stop);
  result.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  if (r.end == HookResult::End::kNotStarted) return skip("could not start: " + r.tail);
  result.ran = true;
  result.timed_out = r.end == HookResult::End::kTimedOut;
  result.stopped = r.end == HookResult::End::kStopped;
  if (r.end == HookResult::End::kExited && r.exit_code >= 0) result.exit_code = r.exit_code;
  result.output_tail = r.tail;
  return result;
}

}  // namespace gpurent::agent
