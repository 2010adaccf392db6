// The simulated executors: a provisioning delay, access files, a wipe, a health probe.
#include "agent/task_executor.h"

#include "agent/state_files.h"
#include "agent_proto/health_rules.h"

#include <condition_variable>
#include <mutex>

namespace gpurent::agent {

namespace proto = agent_proto;
namespace fs = std::filesystem;

namespace {

// Sleeps `d`, waking early when stop is requested; false when it was.
bool sleep_unless_stopped(std::chrono::milliseconds d, const std::stop_token& stop) {
  std::mutex m;
  std::condition_variable_any cv;
  std::unique_lock lock(m);
  return !cv.wait_for(lock, stop, d, [] { return false; }) && !stop.stop_requested();
}

class SimulatedExecutor final : public TaskExecutor {
 public:
  SimulatedExecutor(SimulatedExecutorOptions options, GpuBackend& backend)
      : options_(std::move(options)), backend_(backend) {}

  std::optional<TaskOutcome> execute(const proto::Task& task, const ProgressFn& progress,
                                     const std::stop_token& stop) override {
    switch (task.kind) {
      case proto::TaskKind::kProvision: {
        // Three steps, as imaging reports them: started, image written, booted.
        progress(0, "provisioning");
        if (!sleep_unless_stopped(options_.provision_delay / 2, stop)) return std::nullopt;
        progress(50, "image written");
        if (!sleep_unless_stopped(options_.provision_delay / 2, stop)) return std::nullopt;
        progress(100, "ready");
        return TaskOutcome{.ok = true, .message = "provisioned", .result = std::nullopt};
      }
      case proto::TaskKind::kInstallAccess: {
        fs::path dir = rental_dir(task);
        fs::create_directories(dir);
        write_file_atomic(dir / "access.json", task.payload.dump(2) + "\n", 0600);
        return TaskOutcome{.ok = true, .message = "access installed", .result = std::nullopt};
      }
      case proto::TaskKind::kRevokeAccess: {
        // Revoking what is not there is done already: the task is safe to repeat.
        fs::remove(rental_dir(task) / "access.json");
        return TaskOutcome{.ok = true, .message = "access revoked", .result = std::nullopt};
      }
      case proto::TaskKind::kWipe: {
        fs::remove_all(rental_dir(task));
        return TaskOutcome{.ok = true, .message = "wiped", .result = std::nullopt};
      }
      case proto::TaskKind::kHealthProbe: {
        auto gpus = backend_.telemetry();
        std::vector<proto::HealthVerdict> verdicts;
        nlohmann::json listed = nlohmann::json::array();
        for (const auto& gpu : gpus) {
          verdicts.push_back(proto::gpu_health(std::nullopt, gpu, {}));
          listed.push_back({{"index", gpu.index},
                            {"health", std::string(proto::to_string(verdicts.back().severity))}});
        }
        auto node = proto::node_health(verdicts, std::chrono::seconds(0), std::chrono::seconds(10));
        return TaskOutcome{
            .ok = true,
            .message = "health " + std::string(proto::to_string(node.severity)),
            .result = nlohmann::json{{"health", std::string(proto::to_string(node.severity))},
                                     {"gpus", listed}}};
      }
    }
    return TaskOutcome{.ok = false, .message = "unknown task kind", .result = std::nullopt};
  }

 private:
  // Rental ids are validated by the decoder (rnt_ and base62), so they are safe as a name.
  fs::path rental_dir(const proto::Task& task) const {
    return options_.access_root / task.rental_id.value_or("node");
  }

  SimulatedExecutorOptions options_;
  GpuBackend& backend_;
};

}  // namespace

std::unique_ptr<TaskExecutor> make_simulated_executor(const SimulatedExecutorOptions& options,
                                                      GpuBackend& backend) {
  return std::make_unique<SimulatedExecutor>(options, backend);
}

}  // namespace gpurent::agent
