// What the agent does for each task kind. The simulated executors stand in for the real ones
// (imaging, sshd configuration, disk wipes): they take the same payloads, report progress
// the same way, and leave files a test can look at.
#pragma once

#include "agent/gpu_backend.h"
#include "agent_proto/messages.h"

#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>

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

struct SimulatedExecutorOptions {
  // install_access writes <access_root>/<rental_id>/access.json; revoke_access and wipe
  // remove it.
  std::filesystem::path access_root;
  std::chrono::milliseconds provision_delay{2000};
};

// `backend` answers health_probe; it outlives the executor.
std::unique_ptr<TaskExecutor> make_simulated_executor(const SimulatedExecutorOptions& options,
                                                      GpuBackend& backend);

}  // namespace gpurent::agent
