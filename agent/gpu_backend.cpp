// The simulated and nvidia-smi backends.
#include "agent/gpu_backend.h"

#include "agent/nvidia_smi.h"
#include "agent/probe.h"
#include "agent/simulated_burn_in.h"
#include "agent_proto/nvidia_smi_query.h"
#include "agent_proto/xid_log.h"
#include "core/log.h"

#include <cctype>
#include <cstdio>
#include <regex>
#include <set>
#include <stdexcept>

namespace gpurent::agent {

namespace proto = agent_proto;

namespace {

class SimulatedBackend final : public GpuBackend {
 public:
  explicit SimulatedBackend(const SimulatedNode& node)
      : node_(node),
        matrix_(topology::declared_matrix(node.interconnect, node.gpus, node.nvlink_kind)),
        started_(std::chrono::steady_clock::now()),
        reported_(node.faults.size(), false) {}

  proto::GpuInventory inventory() override {
    return {.count = node_.gpus,
            .model = node_.model,
            .driver_version = "550.54.15",
            .cuda_version = "12.4"};
  }

  topology::Matrix topology() override { return matrix_; }

  std::optional<burn_in::BurnInInputs> simulated_burn_in() override {
    std::vector<SimulatedFault> struck_now;
    for (const auto& f : node_.faults) {
      if (struck(f)) struck_now.push_back(f);
    }
    return simulated_burn_in_outputs(node_.model, matrix_, struck_now);
  }

  std::vector<proto::GpuTelemetry> telemetry() override {
    std::vector<proto::GpuTelemetry> out;
    for (int i = 0; i < node_.gpus; ++i) {
      proto::GpuTelemetry gpu;
      gpu.index = i;
      gpu.name = node_.model;
      gpu.pci_bus_id = bus(i);
      gpu.temperature_c = 34 + i % 4;
      gpu.power_w = 70;
      gpu.power_limit_w = 700;
      gpu.utilization_pct = 0;
      // Clocks held at the boost clock, as fleets that lock application clocks run them.
      gpu.sm_clock_mhz = 1980;
      gpu.memory_used_mib = 0;
      gpu.memory_total_mib = 81559;
      gpu.ecc_volatile_sbe = 0;
      gpu.ecc_volatile_dbe = 0;
      gpu.retired_pages_pending = false;
      gpu.remapped_rows_pending = false;
      gpu.remapped_rows_failure = false;
      for (const auto& f : node_.faults) {
        if (f.gpu != i || !struck(f)) continue;
        if (f.kind == SimulatedFault::Kind::kDoubleBitEcc) {
          gpu.ecc_volatile_dbe = 1;
          gpu.ecc_aggregate_dbe = 1;
        } else if (f.kind == SimulatedFault::Kind::kThermalSlowdown) {
          gpu.temperature_c = 94;
          gpu.throttle_reasons = {"hw_thermal_slowdown"};
          gpu.sm_clock_mhz = 1095;
        } else if (f.kind == SimulatedFault::Kind::kSlowGpu) {
          gpu.sm_clock_mhz = 1095;
        }
      }
      out.push_back(std::move(gpu));
    }
    return out;
  }

  // Each XID fault once, when its time has come, as the kernel logs it for the GPU's bus.
  std::vector<proto::XidEvent> new_events() override {
    std::vector<proto::XidEvent> out;
    for (std::size_t k = 0; k < node_.faults.size(); ++k) {
      const auto& f = node_.faults[k];
      if (f.kind != SimulatedFault::Kind::kXid || reported_[k] || !struck(f)) continue;
      reported_[k] = true;
      out.push_back({.pci = "0000:" + bus(f.gpu).substr(9, 5),
                     .xid = f.xid,
                     .pid = std::nullopt,
                     .process = std::nullopt,
                     .message = f.xid == 79 ? "pid='<unknown>', name=<unknown>, GPU has fallen "
                                              "off the bus."
                                            : "pid='<unknown>', name=<unknown>, simulated",
                     .at = std::nullopt});
    }
    return out;
  }

  bool hung() override {
    for (const auto& f : node_.faults) {
      if (f.kind == SimulatedFault::Kind::kHang && struck(f)) return true;
    }
    return false;
  }

 private:
  bool struck(const SimulatedFault& f) const {
    return std::chrono::steady_clock::now() - started_ >= f.at;
  }
  // "00000000:18:00.0": two PCIe roots, as an HGX board has them.
  std::string bus(int i) const {
    char text[32];
    std::snprintf(text, sizeof(text), "00000000:%02X:00.0", (i < node_.gpus / 2 ? 0x18 : 0x98) + i);
    return text;
  }

  SimulatedNode node_;
  topology::Matrix matrix_;
  std::chrono::steady_clock::time_point started_;
  std::vector<bool> reported_;
};

// "CUDA Version: 12.4" in nvidia-smi's banner; the query interface has no field for it.
std::string cuda_version() {
  auto banner = run_for_output({"nvidia-smi"});
  static const std::regex kCuda(R"(CUDA Version:\s*([0-9]+(\.[0-9]+)*))");
  std::smatch m;
  if (banner && std::regex_search(*banner, m, kCuda)) return m[1];
  return "0";
}

class NvidiaSmiBackend final : public GpuBackend {
 public:
  proto::GpuInventory inventory() override {
    auto csv =
        run_for_output({"nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"});
    if (!csv || csv->empty()) throw std::runtime_error("nvidia-smi found no GPUs");
    proto::GpuInventory inv;
    std::size_t start = 0;
    while (start < csv->size()) {
      auto end = csv->find('\n', start);
      std::string line = csv->substr(start, end == std::string::npos ? end : end - start);
      start = end == std::string::npos ? csv->size() : end + 1;
      auto comma = line.rfind(", ");
      if (comma == std::string::npos) continue;
      ++inv.count;
      inv.model = line.substr(0, comma);
      inv.driver_version = line.substr(comma + 2);
      while (!inv.driver_version.empty() && std::isspace(inv.driver_version.back())) {
        inv.driver_version.pop_back();
      }
    }
    if (inv.count == 0) throw std::runtime_error("nvidia-smi found no GPUs: " + *csv);
    inv.cuda_version = cuda_version();
    return inv;
  }

  topology::Matrix topology() override {
    auto text = run_topo_m();
    if (!text) throw std::runtime_error("nvidia-smi topo -m failed");
    return topology::parse_topo_m(*text);
  }

  std::vector<proto::GpuTelemetry> telemetry() override {
    auto csv = run_query_gpu();
    if (!csv) return {};
    try {
      return proto::parse_query_gpu_csv(*csv);
    } catch (const proto::QueryGpuParseError& e) {
      log::warn("nvidia-smi --query-gpu: {}", e.what());
      return {};
    }
  }

  // The whole kernel log is read each time; events already reported are remembered by
  // their line's content, so a ring buffer that rotates does not report one twice.
  std::vector<proto::XidEvent> new_events() override {
    auto text = run_for_output({"dmesg", "-T"});
    if (!text) text = run_for_output({"journalctl", "-k", "--no-pager", "--since", "-1h"});
    if (!text) return {};
    std::vector<proto::XidEvent> out;
    for (auto& event : proto::parse_xid_log(*text, local_kernel_log_clock())) {
      std::string key = proto::to_json(event).dump();
      if (seen_.insert(key).second) out.push_back(std::move(event));
    }
    if (first_) {
      // What the log held before the agent started was reported by the previous run.
      first_ = false;
      return {};
    }
    return out;
  }

 private:
  std::set<std::string> seen_;
  bool first_ = true;
};

}  // namespace

std::unique_ptr<GpuBackend> make_simulated_backend(const SimulatedNode& node) {
  return std::make_unique<SimulatedBackend>(node);
}

std::unique_ptr<GpuBackend> make_nvidia_smi_backend() {
  return std::make_unique<NvidiaSmiBackend>();
}

}  // namespace gpurent::agent
