// The agent's task executors: provisioning through the operator's hook (or a simulated
// delay), the access files and their hook, the wipe hook, the health probe, notices with
// their checkpoint commands, and reboots through the operator's hook (or simulated).
#include "agent/task_executor.h"

#include "agent_proto/burn_in/figures.h"

#include "agent/access_files.h"
#include "agent/checkpoint_runner.h"
#include "agent/hook_runner.h"
#include "agent/login_probe.h"
#include "agent/login_sessions.h"
#include "agent/notice_file.h"
#include "agent/sshd_banner.h"
#include "agent/state_files.h"
#include "agent_proto/burn_in/figures.h"
#include "agent_proto/health_rules.h"
#include "core/clock.h"

#include <algorithm>
#include <charconv>
#include <condition_variable>
#include <mutex>

namespace gpurent::agent {

namespace proto = agent_proto;

namespace {

// Sleeps `d`, waking early when stop is requested; false when it was.
bool sleep_unless_stopped(std::chrono::milliseconds d, const std::stop_token& stop) {
  std::mutex m;
  std::condition_variable_any cv;
  std::unique_lock lock(m);
  return !cv.wait_for(lock, stop, d, [] { return false; }) && !stop.stop_requested();
}

TaskOutcome done(std::string message, std::optional<nlohmann::json> result = std::nullopt) {
  return {.ok = true, .message = std::move(message), .result = std::move(result)};
}
TaskOutcome failed(std::string message) {
  return {.ok = false, .message = std::move(message), .result = std::nullopt};
}

// A provisioning hook's progress line, `progress <0-100> <message>`; nullopt for any other.
std::optional<std::pair<int, std::string>> progress_line(const std::string& line) {
  constexpr std::string_view kPrefix = "progress ";
  if (line.rfind(kPrefix, 0) != 0) return std::nullopt;
  int percent = -1;
  const char* begin = line.data() + kPrefix.size();
  const char* end = line.data() + line.size();
  auto [after, ec] = std::from_chars(begin, end, percent);
  if (ec != std::errc() || percent < 0 || percent > 100 || (after != end && *after != ' ')) {
    return std::nullopt;
  }
  std::string message = after == end ? "" : std::string(after + 1, end);
  return std::make_pair(percent, message);
}

std::vector<int> gpu_indices(const nlohmann::json& payload) {
  std::vector<int> out;
  if (!payload.is_object() || !payload.contains("gpu_indices") ||
      !payload["gpu_indices"].is_array()) {
    return out;
  }
  for (const auto& i : payload["gpu_indices"]) {
    if (i.is_number_integer() && i.get<long long>() >= 0 && i.get<long long>() < 1024) {
      out.push_back(i.get<int>());
    }
  }
  return out;
}

std::string joined_indices(const nlohmann::json& payload) {
  std::string out;
  for (int i : gpu_indices(payload)) {
    if (!out.empty()) out += ',';
    out += std::to_string(i);
  }
  return out;
}

// A notice task's payload: {"notice": {…} (notice_file.h), "login", "checkpoint_command"
// (absent, null or "": none), "checkpoint_timeout_s" (1..86400, default 600)}. Other members
// are ignored. Throws std::invalid_argument naming the field.
struct NoticeTask {
  Notice notice;
  std::optional<std::string> login;
  std::optional<std::string> checkpoint_command;
  std::chrono::seconds checkpoint_timeout{600};
};

constexpr std::size_t kMaxCheckpointCommand = 8192;
constexpr long long kMaxCheckpointSeconds = 86400;

NoticeTask notice_task_from(const nlohmann::json& payload) {
  if (!payload.is_object()) throw std::invalid_argument("the payload must be an object");
  auto member = [&](const char* name) -> const nlohmann::json* {
    auto it = payload.find(name);
    return it == payload.end() || it->is_null() ? nullptr : &*it;
  };
  NoticeTask t;
  const auto* notice = member("notice");
  if (!notice) throw std::invalid_argument("notice is required");
  t.notice = notice_from(*notice);
  if (const auto* login = member("login")) {
    if (!login->is_string() || !valid_login_name(login->get<std::string>())) {
      throw std::invalid_argument("login must be a login name");
    }
    t.login = login->get<std::string>();
  }
  if (const auto* command = member("checkpoint_command")) {
    if (!command->is_string()) throw std::invalid_argument("checkpoint_command must be a string");
    const auto& text = command->get_ref<const std::string&>();
    if (text.size() > kMaxCheckpointCommand || text.find('\0') != std::string::npos) {
      throw std::invalid_argument("checkpoint_command must be at most " +
                                  std::to_string(kMaxCheckpointCommand) + " bytes, with no NUL");
    }
    if (!text.empty()) t.checkpoint_command = text;
  }
  if (const auto* timeout = member("checkpoint_timeout_s")) {
    if (!timeout->is_number_integer() || timeout->get<long long>() < 1 ||
        (timeout->is_number_unsigned() &&
         timeout->get<unsigned long long>() >
             static_cast<unsigned long long>(kMaxCheckpointSeconds)) ||
        timeout->get<long long>() > kMaxCheckpointSeconds) {
      throw std::invalid_argument("checkpoint_timeout_s must be an integer from 1 to " +
                                  std::to_string(kMaxCheckpointSeconds));
    }
    t.checkpoint_timeout = std::chrono::seconds(timeout->get<long long>());
  }
  if (t.checkpoint_command && !t.login) {
    throw std::invalid_argument("login is required with a checkpoint_command");
  }
  return t;
}

std::string image_id(const nlohmann::json& payload) {
  if (!payload.is_object() || !payload.contains("image_id") || !payload["image_id"].is_string())
    return "";
  return payload["image_id"].get<std::string>();
}

class NodeExecutor final : public TaskExecutor {
 public:
  NodeExecutor(ExecutorOptions options, GpuBackend& backend)
      : options_(std::move(options)), backend_(backend) {}

  std::optional<TaskOutcome> execute(const proto::Task& task, const ProgressFn& progress,
                                     const std::stop_token& stop) override {
    switch (task.kind) {
      case proto::TaskKind::kProvision:
        return provision(task, progress, stop);
      case proto::TaskKind::kInstallAccess:
        return install(task, stop);
      case proto::TaskKind::kRevokeAccess: {
        // Revoking what is not there is done already: the task is safe to repeat.
        auto ended = end_access(task, stop);
        if (!ended || !ended->ok) return ended;
        return done("access revoked (" + ended->message + ")", ended->result);
      }
      case proto::TaskKind::kWipe:
        return wipe(task, stop);
      case proto::TaskKind::kHealthProbe:
        return health_probe();
      case proto::TaskKind::kBurnIn:
      case proto::TaskKind::kDoctor:  // the hook sees the kind and the payload's allow_busy_gpus
        return run_burn_in(task, progress, stop);
      case proto::TaskKind::kNotice:
        return notice(task, stop);
      case proto::TaskKind::kReboot:
        return reboot(task, stop);
    }
    return failed("unknown task kind");
  }

 private:
  // Rental ids are validated by the decoder (rnt_ and base62), so they are safe as names.
  static std::string rental(const proto::Task& task) { return task.rental_id.value_or("node"); }

  std::map<std::string, std::string> hook_env(const proto::Task& task) const {
    return {{"GPURENT_TASK_ID", task.task_id},
            {"GPURENT_TASK_KIND", std::string(proto::to_string(task.kind))},
            {"GPURENT_RENTAL_ID", rental(task)},
            {"GPURENT_GPU_INDICES", joined_indices(task.payload)},
            {"GPURENT_IMAGE_ID", image_id(task.payload)},
            {"GPURENT_ACCESS_ROOT", options_.access_root.string()}};
  }

  std::string hook_stdin(const proto::Task& task, const std::string& action = "",
                         const std::string& user = "") const {
    return hook_input(task, options_.access_root, action, user).dump();
  }

  std::optional<TaskOutcome> provision(const proto::Task& task, const ProgressFn& progress,
                                       const std::stop_token& stop) {
    if (options_.provision_hook.empty()) {
      // Simulated: three steps, as imaging reports them: started, image written, booted.
      progress(0, "provisioning");
      if (!sleep_unless_stopped(options_.provision_delay / 2, stop)) return std::nullopt;
      progress(50, "image written");
      if (!sleep_unless_stopped(options_.provision_delay / 2, stop)) return std::nullopt;
      progress(100, "ready");
      return done("provisioned");
    }
    progress(0, "provisioning");
    auto r = run_hook(
        {.argv = options_.provision_hook,
         .env = hook_env(task),
         .input = hook_stdin(task),
         .timeout = options_.provision_timeout},
        [&](const std::string& line) {
          if (auto p = progress_line(line)) progress(p->first, p->second);
        },
        stop);
    if (r.end == HookResult::End::kStopped) return std::nullopt;
    if (!r.ok()) return failed("provisioning hook " + r.describe());
    return done("provisioned");
  }

  std::optional<TaskOutcome> install(const proto::Task& task, const std::stop_token& stop) {
    AccessGrant grant;
    std::optional<ProbeGrant> probe;
    try {
      grant = access_grant_from(rental(task), task.payload);
      if (task.payload.contains("probe"))
        probe = probe_grant_from(rental(task), task.payload["probe"]);
    } catch (const std::invalid_argument& e) {
      return failed(std::string("install_access: ") + e.what());
    }
    std::optional<HostPort> sshd;
    if (!options_.sshd_address.empty()) sshd = parse_host_port(options_.sshd_address);
    if (probe && (!sshd || options_.probe_key.empty())) {
      return failed(
          "install_access: the payload has a login probe, but this agent has no sshd to probe "
          "(--sshd-address none)");
    }
    try {
      // While the probe runs its principal is accepted for the login too; removed after.
      install_access(
          options_.access_root, grant,
          probe ? std::vector<std::string>{probe->principal} : std::vector<std::string>{});
    } catch (const std::exception& e) {
      return failed(std::string("install_access: ") + e.what());
    }
    if (auto hook = run_access_hook(task, "install", grant.user, stop); !hook) {
      drop_probe_principal(grant, probe);
      return std::nullopt;
    } else if (!hook->empty()) {
      drop_probe_principal(grant, probe);
      return failed(*hook);
    }
    // Ready only when the rental could be used now: healthy GPUs and a login that works.
    auto health = health_probe();
    std::string verdict = health.result ? health.result->value("health", "ok") : "ok";
    if (verdict != "ok") {
      drop_probe_principal(grant, probe);
      return failed("GPU health probe: " + health.message);
    }
    nlohmann::json result{{"user", grant.user},
                          {"authorized_keys", grant.authorized_keys.size()},
                          {"principals", grant.principals},
                          {"health", verdict},
                          {"login_verified", false}};
    std::string checked = "GPUs healthy";
    if (probe) {
      auto verified = probe_login(grant, *probe, *sshd, stop);
      // The probe's principal goes whatever the probe said: it is for the agent alone.
      if (auto dropped = drop_probe_principal(grant, probe); !dropped.empty()) {
        return failed("install_access: " + dropped);
      }
      if (!verified) return std::nullopt;
      if (!verified->empty()) return failed(*verified);
      result["login_verified"] = true;
      checked += "; login as " + grant.user + " verified";
    } else if (!options_.sshd_address.empty()) {
      std::optional<std::string> banner;
      auto until = std::chrono::steady_clock::now() + options_.sshd_wait;
      while (sshd && !banner && !stop.stop_requested()) {
        banner = sshd_banner(*sshd, std::chrono::seconds(3));
        if (banner || std::chrono::steady_clock::now() >= until) break;
        if (!sleep_unless_stopped(std::chrono::milliseconds(250), stop)) return std::nullopt;
      }
      if (stop.stop_requested()) return std::nullopt;
      if (!banner) {
        return failed("sshd at " + options_.sshd_address + " did not answer with an SSH banner");
      }
      result["sshd_banner"] = *banner;
      checked += "; sshd answered " + *banner;
    }
    return done("access installed for " + grant.user + "; " + checked, result);
  }

  // Logs in as the grant's user with the probe certificate until it works or sshd_wait has
  // passed: nullopt when stopped, "" when it worked, else why not (ssh's words, and what the
  // agent can see in the way itself).
  std::optional<std::string> probe_login(const AccessGrant& grant, const ProbeGrant& probe,
                                         const HostPort& sshd, const std::stop_token& stop) {
    auto until = std::chrono::steady_clock::now() + options_.sshd_wait;
    ProbeOutcome last;
    for (;;) {
      last = run_login_probe(grant.user, sshd, probe, options_.probe_key,
                             options_.probe_key.parent_path(), std::chrono::seconds(10), stop);
      if (last.stopped || stop.stop_requested()) return std::nullopt;
      if (last.ok) return "";
      // sshd answered, checked the host and refused the login: its files are read at each
      // login, so trying again gives the same answer. What is worth waiting for is an sshd
      // that is not listening yet, or not yet serving its new host certificate (a reload).
      if (last.reason.find("Permission denied") != std::string::npos) break;
      if (std::chrono::steady_clock::now() >= until) break;
      if (!sleep_unless_stopped(std::chrono::milliseconds(500), stop)) return std::nullopt;
    }
    std::string why = "login as " + grant.user + " to sshd at " + options_.sshd_address +
                      " failed: " + last.reason;
    if (auto problem = sshd_access_problem(options_.access_root)) {
      why += "; sshd cannot read its files: " + *problem;
    }
    return why;
  }

  // The principals file without the probe's principal: "" when done (or nothing to do),
  // else why it could not be rewritten.
  std::string drop_probe_principal(const AccessGrant& grant,
                                   const std::optional<ProbeGrant>& probe) {
    if (!probe) return "";
    try {
      write_principals(options_.access_root, grant);
    } catch (const std::exception& e) {
      return std::string("cannot remove the probe principal: ") + e.what();
    }
    return "";
  }

  // The end of a rental's logins, for revoke_access and wipe: each login's files removed,
  // then every process of its uid killed, then the access hook told (revoke, the login).
  // nullopt when stopped; a failure; or done with "N login(s), M process(es) ended".
  std::optional<TaskOutcome> end_access(const proto::Task& task, const std::stop_token& stop) {
    auto logins = revoke_access(options_.access_root, rental(task));
    // The payload names the rental's login: a revoke repeated after its files went still
    // ends what runs as it (never a login another rental's files name).
    if (task.payload.is_object() && task.payload.contains("user") &&
        task.payload["user"].is_string()) {
      auto user = task.payload["user"].get<std::string>();
      if (valid_login_name(user) &&
          !login_taken_by_other(options_.access_root, user, rental(task)) &&
          std::find(logins.begin(), logins.end(), user) == logins.end()) {
        logins.push_back(user);
      }
    }
    int killed = 0;
    for (const auto& login : logins) {
      auto uid = login_uid(login);
      if (!uid) continue;  // no such user: nothing runs as it
      if (*uid == 0) return failed("login " + login + " is uid 0: not a rental's login");
      auto report = kill_processes_of(*uid, options_.kill_wait);
      killed += report.killed;
      if (!report.left.empty()) {
        return failed(std::to_string(report.left.size()) + " process(es) of " + login +
                      " still running after " + std::to_string(options_.kill_wait.count()) +
                      " ms of SIGKILL");
      }
    }
    for (const auto& login : logins) {
      if (auto hook = run_access_hook(task, "revoke", login, stop); !hook)
        return std::nullopt;
      else if (!hook->empty())
        return failed(*hook);
    }
    return done(std::to_string(logins.size()) + " login(s), " + std::to_string(killed) +
                    " process(es) ended",
                nlohmann::json{{"users", logins}, {"processes_killed", killed}});
  }

  // The access hook after the files changed (create or remove the user, reload sshd):
  // nullopt when stopped, "" when it succeeded or there is none, else why it failed.
  std::optional<std::string> run_access_hook(const proto::Task& task, const std::string& action,
                                             const std::string& user, const std::stop_token& stop) {
    if (options_.access_hook.empty()) return "";
    auto env = hook_env(task);
    env["GPURENT_ACCESS_ACTION"] = action;
    env["GPURENT_ACCESS_USER"] = user;
    auto r = run_hook({.argv = options_.access_hook,
                       .env = env,
                       .input = hook_stdin(task, action, user),
                       .timeout = options_.hook_timeout},
                      nullptr, stop);
    if (r.end == HookResult::End::kStopped) return std::nullopt;
    if (!r.ok()) return "access hook " + r.describe();
    return "";
  }

  std::optional<TaskOutcome> wipe(const proto::Task& task, const std::stop_token& stop) {
    // Nothing of the rental outlives it: its logins end before anything is wiped.
    auto ended = end_access(task, stop);
    if (!ended || !ended->ok) return ended;
    if (options_.wipe_hook.empty()) return done("wiped", ended->result);
    auto r = run_hook({.argv = options_.wipe_hook,
                       .env = hook_env(task),
                       .input = hook_stdin(task),
                       .timeout = options_.hook_timeout},
                      nullptr, stop);
    if (r.end == HookResult::End::kStopped) return std::nullopt;
    if (!r.ok()) return failed("wipe hook " + r.describe());
    return done("wiped", ended->result);
  }

  // The tools' outputs, parsed into figures on the node: the server judges them
  // (inventory/burn_in_rules.h). The task fails only when the tools could not be run; what they
  // measured, good or bad, is its result.
  std::optional<TaskOutcome> run_burn_in(const proto::Task& task, const ProgressFn& progress,
                                         const std::stop_token& stop) {
    progress(0, "burn-in");
    std::optional<burn_in::BurnInInputs> outputs;
    if (!options_.burn_in_hook.empty()) {
      std::error_code ec;
      auto dir = std::filesystem::temp_directory_path(ec) / ("gpurent-burn-in-" + task.task_id);
      std::filesystem::remove_all(dir, ec);
      std::filesystem::create_directories(dir, ec);
      if (ec) return failed("burn-in: cannot make " + dir.string() + ": " + ec.message());
      auto env = hook_env(task);
      env["GPURENT_BURN_IN_DIR"] = dir.string();
      auto r = run_hook(
          {.argv = options_.burn_in_hook,
           .env = env,
           .input = hook_stdin(task),
           .timeout = options_.burn_in_timeout},
          [&](const std::string& line) {
            if (auto p = progress_line(line)) progress(p->first, p->second);
          },
          stop);
      if (r.end != HookResult::End::kStopped && r.ok()) outputs = burn_in::read_burn_in_dir(dir);
      std::filesystem::remove_all(dir, ec);
      if (r.end == HookResult::End::kStopped) return std::nullopt;
      if (!r.ok()) return failed("burn-in hook " + r.describe());
    } else {
      outputs = backend_.simulated_burn_in();
      if (outputs && !sleep_unless_stopped(options_.provision_delay / 2, stop)) return std::nullopt;
    }
    auto figures = outputs ? burn_in::figures_of(*outputs) : burn_in::BurnInFigures{};
    progress(100, "measured");
    std::string tools;
    for (const auto& t : figures.tools) tools += (tools.empty() ? "" : ", ") + t;
    return done(tools.empty() ? "burn-in: nothing measured" : "burn-in: measured with " + tools,
                burn_in::to_json(figures));
  }

  // The notice is delivered once it is in the notice file, and the task succeeds then: the
  // checkpoint command is the tenant's, and whatever became of it is only reported.
  std::optional<TaskOutcome> notice(const proto::Task& task, const std::stop_token& stop) {
    NoticeTask t;
    try {
      t = notice_task_from(task.payload);
    } catch (const std::invalid_argument& e) {
      return failed(std::string("notice: ") + e.what());
    }
    std::string delivered = "notice " + t.notice.id;
    if (options_.notice_file.empty()) {
      delivered += " delivered (no notice file)";
    } else {
      try {
        publish_notice(options_.notice_file, t.notice, SystemClock().now());
      } catch (const std::exception& e) {
        return failed(delivered + ": " + e.what());
      }
      delivered += " written";
    }
    CheckpointResult checkpoint;
    if (!t.checkpoint_command) {
      checkpoint.skipped = "no checkpoint command";
    } else if (!options_.run_checkpoints) {
      checkpoint.skipped = "this node runs no checkpoint commands (simulated)";
    } else if (task.rental_id &&
               login_taken_by_other(options_.access_root, *t.login, *task.rental_id)) {
      checkpoint.skipped = "login " + *t.login + " belongs to another rental";
    } else {
      // A stop (the agent is stopping) ends the command; the notice is delivered all the
      // same, and the result says the checkpoint was stopped.
      checkpoint = run_checkpoint({.login = *t.login,
                                   .command = *t.checkpoint_command,
                                   .timeout = t.checkpoint_timeout,
                                   .notice = t.notice,
                                   .notice_file = options_.notice_file},
                                  stop);
    }
    nlohmann::json notice_file = options_.notice_file.empty()
                                     ? nlohmann::json(nullptr)
                                     : nlohmann::json(options_.notice_file.string());
    return done(delivered + "; checkpoint " + checkpoint.describe(),
                nlohmann::json{{"notice_file", notice_file}, {"checkpoint", checkpoint.to_json()}});
  }

  std::optional<TaskOutcome> reboot(const proto::Task& task, const std::stop_token& stop) {
    if (options_.reboot_hook.empty()) {
      if (!sleep_unless_stopped(options_.reboot_delay, stop)) return std::nullopt;
      return done("simulated reboot");
    }
    std::string boot_id = read_boot_id(options_.boot_id_file);
    if (options_.reboot_notes) {
      try {
        options_.reboot_notes->reboot_started(task.task_id, boot_id);
      } catch (const std::exception& e) {
        return failed(std::string("reboot: cannot note it in the task journal: ") + e.what());
      }
    }
    auto env = hook_env(task);
    env["GPURENT_BOOT_ID"] = boot_id;
    auto r = run_hook({.argv = options_.reboot_hook,
                       .env = env,
                       .input = hook_stdin(task),
                       .timeout = options_.reboot_timeout},
                      nullptr, stop);
    if (r.end == HookResult::End::kStopped) return std::nullopt;
    // A hook that says it did not reboot is believed at once; otherwise the node may be going
    // down, and the shutdown stopping the agent leaves the task to the journal.
    bool refused = r.end == HookResult::End::kNotStarted || r.end == HookResult::End::kTimedOut ||
                   (r.end == HookResult::End::kExited && r.exit_code > 0);
    if (!refused && !sleep_unless_stopped(options_.reboot_settle, stop)) return std::nullopt;
    if (!r.ok()) return failed("reboot hook " + r.describe());
    return done("reboot requested: the reboot hook exited 0",
                nlohmann::json{{"boot_id_before", boot_id}});
  }

  TaskOutcome health_probe() {
    auto gpus = backend_.telemetry();
    std::vector<proto::HealthVerdict> verdicts;
    nlohmann::json listed = nlohmann::json::array();
    for (const auto& gpu : gpus) {
      verdicts.push_back(proto::gpu_health(std::nullopt, gpu, {}));
      listed.push_back({{"index", gpu.index},
                        {"health", std::string(proto::to_string(verdicts.back().severity))}});
    }
    auto node = proto::node_health(verdicts, std::chrono::seconds(0), std::chrono::seconds(10));
    return done(
        "health " + std::string(proto::to_string(node.severity)),
        nlohmann::json{{"health", std::string(proto::to_string(node.severity))}, {"gpus", listed}});
  }

  ExecutorOptions options_;
  GpuBackend& backend_;
};

}  // namespace

nlohmann::json hook_input(const proto::Task& task, const std::filesystem::path& access_root,
                          const std::string& access_action, const std::string& access_user) {
  std::string image = image_id(task.payload);
  nlohmann::json doc{
      {"hook_version", kHookInputVersion},
      {"task_id", task.task_id},
      {"kind", std::string(proto::to_string(task.kind))},
      {"rental_id", task.rental_id ? nlohmann::json(*task.rental_id) : nlohmann::json(nullptr)},
      {"gpu_indices", gpu_indices(task.payload)},
      {"image_id", image.empty() ? nlohmann::json(nullptr) : nlohmann::json(image)},
      {"access_root", access_root.string()},
      {"payload", task.payload}};
  if (!access_action.empty()) doc["access"] = {{"action", access_action}, {"user", access_user}};
  return doc;
}

std::unique_ptr<TaskExecutor> make_executor(const ExecutorOptions& options, GpuBackend& backend) {
  return std::make_unique<NodeExecutor>(options, backend);
}

std::unique_ptr<TaskExecutor> make_simulated_executor(const SimulatedExecutorOptions& options,
                                                      GpuBackend& backend) {
  return make_executor({.access_root = options.access_root,
                        .provision_delay = options.provision_delay,
                        .notice_file = options.notice_file,
                        .run_checkpoints = false,
                        .reboot_delay = options.reboot_delay},
                       backend);
}

}  // namespace gpurent::agent
