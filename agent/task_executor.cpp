// The agent's task executors: provisioning through the operator's hook (or a simulated
// delay), the access files and their hook, the wipe hook, and the health probe.
#include "agent/task_executor.h"

#include "agent/access_files.h"
#include "agent/hook_runner.h"
#include "agent/sshd_banner.h"
#include "agent_proto/health_rules.h"

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

std::string joined_indices(const nlohmann::json& payload) {
  std::string out;
  if (!payload.contains("gpu_indices") || !payload["gpu_indices"].is_array()) return out;
  for (const auto& i : payload["gpu_indices"]) {
    if (!i.is_number_integer()) continue;
    if (!out.empty()) out += ',';
    out += std::to_string(i.get<int>());
  }
  return out;
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
        int removed = revoke_access(options_.access_root, rental(task));
        if (auto hook = run_access_hook(task, "revoke", "", stop); !hook)
          return std::nullopt;
        else if (!hook->empty())
          return failed(*hook);
        return done("access revoked (" + std::to_string(removed) + " user(s))");
      }
      case proto::TaskKind::kWipe:
        return wipe(task, stop);
      case proto::TaskKind::kHealthProbe:
        return health_probe();
    }
    return failed("unknown task kind");
  }

 private:
  // Rental ids are validated by the decoder (rnt_ and base62), so they are safe as names.
  static std::string rental(const proto::Task& task) { return task.rental_id.value_or("node"); }

  std::map<std::string, std::string> hook_env(const proto::Task& task) const {
    return {
        {"GPURENT_TASK_ID", task.task_id},
        {"GPURENT_TASK_KIND", std::string(proto::to_string(task.kind))},
        {"GPURENT_RENTAL_ID", rental(task)},
        {"GPURENT_GPU_INDICES", joined_indices(task.payload)},
        {"GPURENT_IMAGE_ID", task.payload.is_object() ? task.payload.value("image_id", "") : ""},
        {"GPURENT_ACCESS_ROOT", options_.access_root.string()}};
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
         .input = task.payload.dump(),
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
    try {
      grant = access_grant_from(rental(task), task.payload);
    } catch (const std::invalid_argument& e) {
      return failed(std::string("install_access: ") + e.what());
    }
    install_access(options_.access_root, grant);
    if (auto hook = run_access_hook(task, "install", grant.user, stop); !hook)
      return std::nullopt;
    else if (!hook->empty())
      return failed(*hook);
    // Ready only when the rental could be used now: healthy GPUs and an answering sshd.
    auto health = health_probe();
    std::string verdict = health.result ? health.result->value("health", "ok") : "ok";
    if (verdict != "ok") return failed("GPU health probe: " + health.message);
    nlohmann::json result{{"user", grant.user},
                          {"authorized_keys", grant.authorized_keys.size()},
                          {"principals", grant.principals},
                          {"health", verdict}};
    std::string checked = "GPUs healthy";
    if (!options_.sshd_address.empty()) {
      auto address = parse_host_port(options_.sshd_address);
      std::optional<std::string> banner;
      auto until = std::chrono::steady_clock::now() + options_.sshd_wait;
      while (address && !banner && !stop.stop_requested()) {
        banner = sshd_banner(*address, std::chrono::seconds(3));
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

  // The access hook after the files changed (create or lock the user, reload sshd): nullopt
  // when stopped, "" when it succeeded or there is none, else why it failed.
  std::optional<std::string> run_access_hook(const proto::Task& task, const std::string& action,
                                             const std::string& user, const std::stop_token& stop) {
    if (options_.access_hook.empty()) return "";
    auto env = hook_env(task);
    env["GPURENT_ACCESS_ACTION"] = action;
    env["GPURENT_ACCESS_USER"] = user;
    auto r = run_hook({.argv = options_.access_hook,
                       .env = env,
                       .input = task.payload.dump(),
                       .timeout = options_.hook_timeout},
                      nullptr, stop);
    if (r.end == HookResult::End::kStopped) return std::nullopt;
    if (!r.ok()) return "access hook " + r.describe();
    return "";
  }

  std::optional<TaskOutcome> wipe(const proto::Task& task, const std::stop_token& stop) {
    revoke_access(options_.access_root, rental(task));  // nothing of the rental outlives it
    if (options_.wipe_hook.empty()) return done("wiped");
    auto r = run_hook({.argv = options_.wipe_hook,
                       .env = hook_env(task),
                       .input = task.payload.dump(),
                       .timeout = options_.hook_timeout},
                      nullptr, stop);
    if (r.end == HookResult::End::kStopped) return std::nullopt;
    if (!r.ok()) return failed("wipe hook " + r.describe());
    return done("wiped");
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

std::unique_ptr<TaskExecutor> make_executor(const ExecutorOptions& options, GpuBackend& backend) {
  return std::make_unique<NodeExecutor>(options, backend);
}

std::unique_ptr<TaskExecutor> make_simulated_executor(const SimulatedExecutorOptions& options,
                                                      GpuBackend& backend) {
  return make_executor(
      {.access_root = options.access_root, .provision_delay = options.provision_delay}, backend);
}

}  // namespace gpurent::agent
