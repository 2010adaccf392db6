// Ending a login's processes: getpwnam_r, /proc/<pid>/status, SIGKILL until none are left.
#include "agent/login_sessions.h"

#include <pwd.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace gpurent::agent {

namespace fs = std::filesystem;

namespace {

// The value of a "Name:\t..." line of a status text; nullopt when there is none.
std::optional<std::string> status_field(const std::string& text, std::string_view name) {
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.size() > name.size() && line.compare(0, name.size(), name) == 0 &&
        line[name.size()] == ':') {
      return line.substr(name.size() + 1);
    }
  }
  return std::nullopt;
}

std::optional<pid_t> pid_name(const std::string& name) {
  pid_t pid = 0;
  auto [end, ec] = std::from_chars(name.data(), name.data() + name.size(), pid);
  if (ec != std::errc() || end != name.data() + name.size() || pid <= 0) return std::nullopt;
  return pid;
}

}  // namespace

std::optional<uid_t> login_uid(const std::string& login) {
  long size = ::sysconf(_SC_GETPW_R_SIZE_MAX);
  std::vector<char> buffer(size > 0 ? static_cast<std::size_t>(size) : 16384);
  passwd pw{};
  passwd* found = nullptr;
  for (;;) {
    int rc = ::getpwnam_r(login.c_str(), &pw, buffer.data(), buffer.size(), &found);
    if (rc == ERANGE && buffer.size() < (1u << 20)) {
      buffer.resize(buffer.size() * 2);
      continue;
    }
    if (rc != 0 || !found) return std::nullopt;
    return found->pw_uid;
  }
}

std::optional<ProcessUids> status_uids(const std::string& status_text) {
  auto value = status_field(status_text, "Uid");
  if (!value) return std::nullopt;
  std::istringstream words(*value);
  unsigned long long ids[3] = {};
  for (auto& id : ids) {
    std::string word;
    if (!(words >> word)) return std::nullopt;
    auto [end, ec] = std::from_chars(word.data(), word.data() + word.size(), id);
    if (ec != std::errc() || end != word.data() + word.size() || id > 0xffffffffull) {
      return std::nullopt;
    }
  }
  return ProcessUids{.real = static_cast<uid_t>(ids[0]),
                     .effective = static_cast<uid_t>(ids[1]),
                     .saved = static_cast<uid_t>(ids[2])};
}

bool status_is_zombie(const std::string& status_text) {
  auto state = status_field(status_text, "State");
  if (!state) return false;
  auto first = state->find_first_not_of(" \t");
  return first != std::string::npos && ((*state)[first] == 'Z' || (*state)[first] == 'X');
}

std::vector<pid_t> processes_of(uid_t uid, const fs::path& proc_root) {
  std::vector<pid_t> out;
  std::error_code ec;
  const pid_t self = ::getpid();
  for (fs::directory_iterator it(proc_root, ec), end; !ec && it != end; it.increment(ec)) {
    auto pid = pid_name(it->path().filename().string());
    if (!pid || *pid == self) continue;
    // A process that ended since the listing has no status any more: it is not there.
    std::ifstream in(it->path() / "status");
    if (!in) continue;
    std::ostringstream text;
    text << in.rdbuf();
    auto uids = status_uids(text.str());
    if (!uids || status_is_zombie(text.str())) continue;
    if (uids->real == uid || uids->effective == uid || uids->saved == uid) out.push_back(*pid);
  }
  std::sort(out.begin(), out.end());
  return out;
}

KillReport kill_processes_of(uid_t uid, std::chrono::milliseconds bound,
                             const fs::path& proc_root) {
  if (uid == 0) throw std::invalid_argument("the processes of uid 0 are never killed");
  KillReport report;
  std::set<pid_t> signalled;
  const auto until = std::chrono::steady_clock::now() + bound;
  for (;;) {
    auto found = processes_of(uid, proc_root);
    if (found.empty()) {
      report.left.clear();
      return report;
    }
    if (std::chrono::steady_clock::now() >= until) {
      report.left = std::move(found);
      return report;
    }
    for (pid_t pid : found) {
      if (::kill(pid, SIGKILL) == 0 && signalled.insert(pid).second) ++report.killed;
    }
    // A killed process leaves /proc (or turns zombie) within moments; one that forked in
    // between is found by the next scan.
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

}  // namespace gpurent::agent
