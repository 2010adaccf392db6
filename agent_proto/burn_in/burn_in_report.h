// `gpurent-agent burn-in --from DIR`: the captured outputs of the burn-in tools in a folder,
// parsed into one JSON object (field names: docs/burn-in.md).
#pragma once

#include "agent_proto/burn_in/dcgmi_diag.h"
#include "agent_proto/burn_in/dcgmproftester.h"
#include "agent_proto/burn_in/gpu_burn.h"
#include "agent_proto/burn_in/nccl_tests.h"
#include "agent_proto/burn_in/nvbandwidth.h"
#include "agent_proto/burn_in/nvlink_status.h"
#include "agent_proto/burn_in/p2p_bandwidth.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace gpurent::burn_in {

nlohmann::json to_json(const NcclPerfResult& result);
nlohmann::json to_json(const NvbandwidthResult& result);
nlohmann::json to_json(const DcgmDiagResult& result);
nlohmann::json to_json(const GpuBurnResult& result);
nlohmann::json to_json(const ProftesterResult& result);
nlohmann::json to_json(const std::vector<NvlinkGpuStatus>& result);
nlohmann::json to_json(const std::vector<NvlinkGpuErrors>& result);
nlohmann::json to_json(const P2pBandwidthResult& result);

// The raw text of each tool's capture; absent when its file is not there.
struct BurnInInputs {
  std::optional<std::string> all_reduce_perf;  // DIR/all_reduce_perf.txt
  std::optional<std::string> nvbandwidth;      // DIR/nvbandwidth.txt
  std::optional<std::string> dcgmi_diag;       // DIR/dcgmi_diag.txt
  std::optional<std::string> gpu_burn;         // DIR/gpu_burn.txt
  std::optional<std::string> dcgmproftester;   // DIR/dcgmproftester.txt (-t 1004)
  std::optional<std::string> nvlink_status;    // DIR/nvlink_status.txt (nvidia-smi nvlink -s)
  std::optional<std::string> nvlink_errors;    // DIR/nvlink_errors.txt (nvidia-smi nvlink -e)
  std::optional<std::string> p2p_bandwidth;    // DIR/p2p_bandwidth.txt (p2pBandwidthLatencyTest)
};

// Reads the files that are present; a file over kMaxToolOutputBytes is read only that far
// plus one byte, so its parser refuses it without the whole file in memory.
BurnInInputs read_burn_in_dir(const std::filesystem::path& dir);

struct BurnInReport {
  // {"nccl_all_reduce": ..., "nvbandwidth": ..., "dcgmi_diag": ..., "gpu_burn": ...}, a member
  // for each input present that parsed.
  nlohmann::json json;
  std::vector<std::string> problems;  // one line per input that did not parse, naming its file
};

// Parses every present input. No input at all is a problem too ("nothing to report").
BurnInReport burn_in_report(const BurnInInputs& inputs);

}  // namespace gpurent::burn_in
