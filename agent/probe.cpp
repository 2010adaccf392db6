// Runs agent_proto's three readers over what the node (or a folder of captures) gives.
#include "agent/probe.h"

#include "agent/nvidia_smi.h"
#include "agent_proto/health_rules.h"
#include "agent_proto/nvidia_smi_query.h"
#include "agent_proto/topology.h"

#include <ctime>
#include <fstream>
#include <sstream>

namespace gpurent::agent {

namespace proto = agent_proto;

namespace {

std::optional<std::string> read_if_present(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

ProbeInputs read_probe_dir(const std::filesystem::path& dir) {
  return {.query_csv = read_if_present(dir / "query.csv"),
          .topo_m = read_if_present(dir / "topo.txt"),
          .kernel_log = read_if_present(dir / "kern.log")};
}

ProbeInputs collect_probe_inputs() {
  ProbeInputs inputs{.query_csv = run_query_gpu(), .topo_m = run_topo_m(), .kernel_log = {}};
  // dmesg -T stamps lines with wall-clock time, so events get an `at`; reading the kernel
  // ring buffer may need privileges journalctl does not.
  inputs.kernel_log = run_for_output({"dmesg", "-T"});
  if (!inputs.kernel_log) inputs.kernel_log = run_for_output({"journalctl", "-k", "--no-pager"});
  return inputs;
}

ProbeReport probe(const ProbeInputs& inputs, const proto::KernelLogClock& clock) {
  ProbeReport report{.json = nlohmann::json::object(), .problems = {}};
  if (inputs.query_csv) {
    try {
      auto gpus = nlohmann::json::array();
      for (const auto& gpu : proto::parse_query_gpu_csv(*inputs.query_csv)) {
        gpus.push_back(proto::to_json(gpu));
      }
      report.json["gpus"] = std::move(gpus);
    } catch (const proto::QueryGpuParseError& e) {
      report.problems.push_back(std::string("nvidia-smi --query-gpu: ") + e.what());
    }
  }
  if (inputs.topo_m) {
    try {
      report.json["topology"] = topology::to_json(topology::parse_topo_m(*inputs.topo_m));
    } catch (const topology::ParseError& e) {
      report.problems.push_back(std::string("nvidia-smi topo -m: ") + e.what());
    }
  }
  if (inputs.kernel_log) {
    // The XID reader skips what it does not recognise line by line; it does not fail.
    auto events = nlohmann::json::array();
    for (const auto& event : proto::parse_xid_log(*inputs.kernel_log, clock)) {
      auto e = proto::to_json(event);
      e["kind"] = "xid";
      e["severity"] = std::string(proto::to_string(proto::severity_of(event)));
      events.push_back(std::move(e));
    }
    report.json["events"] = std::move(events);
  }
  return report;
}

proto::KernelLogClock local_kernel_log_clock() {
  std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  return {.year = local.tm_year + 1900, .utc_offset = std::chrono::minutes(local.tm_gmtoff / 60)};
}

}  // namespace gpurent::agent
