// How the agent asks nvidia-smi: the query fields agent_proto's reader maps, and the
// commands, run with core/subprocess.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace gpurent::agent {

// --query-gpu fields, one per GpuTelemetry member: the names every driver since R525 takes.
const std::vector<std::string>& query_gpu_fields();

// `nvidia-smi --query-gpu=<fields> --format=csv` (with its header, so the reader checks the
// columns), or nullopt when nvidia-smi is missing or fails. A driver that refuses one of the
// fields refuses the whole query, so a shorter list is tried before giving up.
std::optional<std::string> run_query_gpu();

// `nvidia-smi topo -m`, or nullopt.
std::optional<std::string> run_topo_m();

// Runs argv and returns its output when it exited 0.
std::optional<std::string> run_for_output(const std::vector<std::string>& argv);

}  // namespace gpurent::agent
