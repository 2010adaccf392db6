// Where the agent's view of its GPUs comes from: nvidia-smi on a real node, or a simulated
// node that declares its shape (for development, tests and the fleet simulator).
#pragma once

#include "agent/fault_schedule.h"
#include "agent_proto/burn_in/burn_in_report.h"
#include "agent_proto/messages.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace gpurent::agent {

class GpuBackend {
 public:
  virtual ~GpuBackend() = default;
  // What a hello reports; read again on every connection. Throws std::runtime_error when
  // the GPUs cannot be read at all: the agent has nothing true to say.
  virtual agent_proto::GpuInventory inventory() = 0;
  virtual topology::Matrix topology() = 0;
  // A heartbeat's telemetry now; empty when it cannot be read this time.
  virtual std::vector<agent_proto::GpuTelemetry> telemetry() = 0;
  // XID events since the previous call.
  virtual std::vector<agent_proto::XidEvent> new_events() = 0;
  // The node has stopped answering (a simulated hang): the agent sends no heartbeats, as a
  // hung node sends none, and the control plane judges it by its silence.
  virtual bool hung() { return false; }
  // A simulated node's burn-in tools' outputs (agent/simulated_burn_in.h); none on a real
  // node, whose burn-in runs the operator's hook.
  virtual std::optional<burn_in::BurnInInputs> simulated_burn_in() { return std::nullopt; }
};

struct SimulatedNode {
  int gpus = 8;
  std::string model = "NVIDIA H100 80GB HBM3";
  topology::Interconnect interconnect = topology::Interconnect::kNvswitch;
  std::string nvlink_kind = "NV18";    // Hopper HGX
  std::vector<SimulatedFault> faults;  // counted from when the backend is made
};

// Idle GPUs of the declared shape, healthy until the faults strike. Throws std::invalid_argument
// for a shape declared_matrix refuses.
std::unique_ptr<GpuBackend> make_simulated_backend(const SimulatedNode& node);

// nvidia-smi and the kernel log of this node.
std::unique_ptr<GpuBackend> make_nvidia_smi_backend();

}  // namespace gpurent::agent
