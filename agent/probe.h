// `gpurent-agent probe`: what the agent sees on this node (GPU telemetry, the link matrix,
// XID events in the kernel log) as one JSON object, from captured files or from the node.
#pragma once

#include "agent_proto/xid_log.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace gpurent::agent {

// The raw text each reader takes; absent when it could not be had (no file, no command).
struct ProbeInputs {
  std::optional<std::string> query_csv;   // `nvidia-smi --query-gpu=… --format=csv`
  std::optional<std::string> topo_m;      // `nvidia-smi topo -m`
  std::optional<std::string> kernel_log;  // dmesg, journalctl -k, kern.log, …
};

// DIR/query.csv, DIR/topo.txt and DIR/kern.log; a missing file leaves its input absent.
ProbeInputs read_probe_dir(const std::filesystem::path& dir);

// The node itself: nvidia-smi's query and matrix, then the kernel log from `dmesg` or else
// `journalctl -k`. A command that is missing or fails leaves its input absent.
ProbeInputs collect_probe_inputs();

struct ProbeReport {
  nlohmann::json json;                // {"gpus": [...], "topology": {...}, "events": [...]}
  std::vector<std::string> problems;  // inputs present but unreadable, one line each
};

// Each present input becomes its member; one that does not parse is left out and named in
// `problems`, so one bad reader does not hide what the others found. Events carry "kind":
// "xid" and the health rules' "severity".
ProbeReport probe(const ProbeInputs& inputs, const agent_proto::KernelLogClock& clock);

// The clock of this machine's kernel-log stamps: the current year and local offset.
agent_proto::KernelLogClock local_kernel_log_clock();

}  // namespace gpurent::agent
