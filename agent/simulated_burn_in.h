// What the burn-in tools would print on a simulated node, in their real formats (gpu_burn,
// dcgmproftester -t 1004, nvbandwidth's local and peer copy tests, nccl-tests' all_reduce_perf,
// nvidia-smi nvlink -s and -e), so that on a simulated fleet the
// agent's parsers, the server's rules and the lifecycle run exactly as on a real one. The
// figures are the model's class and its links' nominal bandwidth at a healthy node's typical
// efficiency; the burn-in faults that have struck change them: slow-gpu runs the GPU at 40% of
// its throughput (gpu_burn and the tensor GEMM), nvlink-down shows the GPU's NVLinks inactive and
// drops its peers' copies to PCIe speed (and the node's NCCL bus bandwidth with them).
#pragma once

#include "agent/fault_schedule.h"
#include "agent_proto/burn_in/burn_in_report.h"
#include "agent_proto/topology.h"

#include <string>
#include <vector>

namespace gpurent::agent {

// `model`: nvidia-smi's name; `links`: the node's matrix; `struck`: the faults in effect.
burn_in::BurnInInputs simulated_burn_in_outputs(const std::string& model,
                                                const topology::Matrix& links,
                                                const std::vector<SimulatedFault>& struck);

}  // namespace gpurent::agent
