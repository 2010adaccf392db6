// The simulated burn-in tools' outputs.
#include "agent/simulated_burn_in.h"

#include <algorithm>
#include <cstdio>
#include <tuple>

namespace gpurent::agent {
namespace {

constexpr double kPcieGbps = 24.5;         // a PCIe Gen5 x16 peer copy, as nvbandwidth shows it
constexpr double kNvlinkLaneGbps = 25.0;   // one NVLink 4 link, per direction
constexpr double kCopyEfficiency = 0.878;  // 395 of 450 GB/s on a healthy HGX H100
constexpr double kSlowShare = 0.4;

// Single-precision Gflop/s gpu_burn prints on the model's class: illustrative, only their
// ratios matter to the rules (a GPU against its siblings and the fleet).
double nominal_gflops(const std::string& model) {
  for (auto [name, gflops] : {std::pair{"H200", 52000.0},
                              {"H100", 51000.0},
                              {"A100", 19000.0},
                              {"L40S", 36000.0},
                              {"4090", 41000.0},
                              {"L4", 12000.0}}) {
    if (model.find(name) != std::string::npos) return gflops;
  }
  return 10000.0;
}

// dcgmproftester -t 1004's fp16 tensor GEMM (GFLOP/s) and nvbandwidth's device_local_copy
// (GB/s) on the model's class: illustrative as above (an HGX H100 prints ~1,519 GB/s).
std::pair<double, double> nominal_tensor_and_memory(const std::string& model) {
  for (auto [name, tensor, memory] : {std::tuple{"H200", 690000.0, 2150.0},
                                      {"H100", 660000.0, 1519.0},
                                      {"A100", 250000.0, 1310.0},
                                      {"L40S", 290000.0, 380.0},
                                      {"4090", 160000.0, 430.0},
                                      {"L4", 95000.0, 130.0}}) {
    if (model.find(name) != std::string::npos) return {tensor, memory};
  }
  return {100000.0, 300.0};
}

bool has(const std::vector<SimulatedFault>& faults, SimulatedFault::Kind kind, int gpu) {
  return std::any_of(faults.begin(), faults.end(),
                     [&](const auto& f) { return f.kind == kind && f.gpu == gpu; });
}

// Per direction, GB/s: "NV18" is eighteen links.
double link_gbps(const topology::Matrix& m, const std::vector<SimulatedFault>& faults, int a,
                 int b) {
  const std::string& kind = m.links[a][b];
  if (has(faults, SimulatedFault::Kind::kNvlinkDown, a) ||
      has(faults, SimulatedFault::Kind::kNvlinkDown, b) || !kind.starts_with("NV")) {
    return kPcieGbps;
  }
  return std::stoi(kind.substr(2)) * kNvlinkLaneGbps * kCopyEfficiency;
}

std::string fixed(double v, int decimals = 2) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

std::string padded(const std::string& s, std::size_t width) {
  return std::string(width > s.size() ? width - s.size() : 0, ' ') + s;
}

std::string gpu_burn(const std::string& model, int gpus,
                     const std::vector<SimulatedFault>& faults) {
  std::string out = "Burning for 60 seconds.\n";
  for (int i = 0; i < gpus; ++i) {
    char uuid[64];
    std::snprintf(uuid, sizeof uuid, "GPU-5a1e0000-0000-4000-8000-%012d", i);
    out += "GPU " + std::to_string(i) + ": " + model + " (UUID: " + uuid + ")\n";
  }
  std::string progress = "100.0%  proc'd: ";
  std::string errors = "   errors: ";
  std::string temps = "   temps: ";
  for (int i = 0; i < gpus; ++i) {
    double gflops =
        nominal_gflops(model) *
        (has(faults, SimulatedFault::Kind::kSlowGpu, i) ? kSlowShare : 1.0 - 0.002 * (i % 3));
    std::string sep = i == 0 ? "" : " - ";
    progress += sep + "9000 (" + fixed(gflops, 0) + " Gflop/s)";
    errors += sep + "0";
    temps += sep + std::to_string(61 + i % 4) + " C";
  }
  out += progress + errors + temps + " \nKilling processes.. done\n\nTested " +
         std::to_string(gpus) + " GPUs:\n";
  for (int i = 0; i < gpus; ++i) out += "\tGPU " + std::to_string(i) + ": OK\n";
  return out;
}

// A run of dcgmproftester12 -t 1004: five samples a GPU, the workers' lines interleaved.
std::string dcgmproftester(const std::string& model, int gpus,
                           const std::vector<SimulatedFault>& faults) {
  std::string out;
  for (int s = 0; s < 5; ++s) {
    for (int i = 0; i < gpus; ++i) {
      double g = nominal_tensor_and_memory(model).first *
                 (has(faults, SimulatedFault::Kind::kSlowGpu, i) ? kSlowShare : 1.0) *
                 (0.97 + 0.01 * s - 0.002 * (i % 3));
      out += "Worker " + std::to_string(i) +
             ":0[1004]: TensorEngineActive: generated ???, dcgm 0.000 (" + fixed(g, 1) +
             " gflops)\n";
    }
  }
  return out;
}

// `nvidia-smi nvlink -s` and `-e`: a GPU's links are its widest NVk in the matrix; a GPU whose
// NVLinks are down shows them all inactive. No NVLink on the node: the driver's one line.
std::pair<std::string, std::string> nvlink_outputs(const std::string& model,
                                                   const topology::Matrix& m,
                                                   const std::vector<SimulatedFault>& faults) {
  std::string status, errors;
  for (int a = 0; a < m.gpus; ++a) {
    int lanes = 0;
    for (int b = 0; b < m.gpus; ++b) {
      if (a != b && m.links[a][b].starts_with("NV")) {
        lanes = std::max(lanes, std::stoi(m.links[a][b].substr(2)));
      }
    }
    char uuid[64];
    std::snprintf(uuid, sizeof uuid, "GPU-5a1e0000-0000-4000-8000-%012d", a);
    std::string header = "GPU " + std::to_string(a) + ": " + model + " (UUID: " + uuid + ")\n";
    status += header;
    errors += header;
    if (lanes == 0) {
      status += "Device does not have or support Nvlink\n";
      errors += "Device does not have or support Nvlink\n";
      continue;
    }
    bool down = has(faults, SimulatedFault::Kind::kNvlinkDown, a);
    for (int l = 0; l < lanes; ++l) {
      std::string link = "\t Link " + std::to_string(l) + ": ";
      status += link + (down ? "<inactive>" : "26.562 GB/s") + "\n";
      for (const char* counter : {"Replay Errors", "Recovery Errors", "CRC Errors"}) {
        errors += link + counter + ": 0\n";
      }
    }
  }
  return {status, errors};
}

std::string nvbandwidth(const std::string& model, const topology::Matrix& m,
                        const std::vector<SimulatedFault>& faults) {
  std::string out = "nvbandwidth Version: v0.10.0\nBuilt from Git version: v0.10.0\n\n";
  // The copy within each GPU's own memory.
  out += "Running device_local_copy.\nmemcpy local GPU(column) bandwidth (GB/s)\n   ";
  double local_sum = 0;
  for (int c = 0; c < m.gpus; ++c) out += padded(std::to_string(c), 10);
  out += "\n 0 ";
  for (int c = 0; c < m.gpus; ++c) {
    double v = nominal_tensor_and_memory(model).second * (1.0 - 0.001 * (c % 3));
    local_sum += v;
    out += padded(fixed(v), 10);
  }
  out += "\n\nSUM device_local_copy " + fixed(local_sum) + "\n\n";
  if (m.gpus < 2) return out;
  out +=
      "Running device_to_device_memcpy_read_ce.\n"
      "memcpy CE GPU(row) -> GPU(column) bandwidth (GB/s)\n   ";
  for (int c = 0; c < m.gpus; ++c) out += padded(std::to_string(c), 10);
  out += "\n";
  double sum = 0;
  for (int r = 0; r < m.gpus; ++r) {
    out += padded(std::to_string(r), 2) + " ";
    for (int c = 0; c < m.gpus; ++c) {
      if (r == c) {
        out += padded("N/A", 10);
        continue;
      }
      double v = link_gbps(m, faults, r, c);
      sum += v;
      out += padded(fixed(v), 10);
    }
    out += "\n";
  }
  out += "\nSUM device_to_device_memcpy_read_ce " + fixed(sum) + "\n";
  return out;
}

std::string all_reduce_perf(const std::string& model, const topology::Matrix& m,
                            const std::vector<SimulatedFault>& faults) {
  // A ring's bus bandwidth is its slowest link's; NVSwitch reductions run a little above the
  // copy engine's figure (448 GB/s on an HGX H100).
  double slowest = 1e9;
  for (int a = 0; a < m.gpus; ++a) {
    for (int b = a + 1; b < m.gpus; ++b) slowest = std::min(slowest, link_gbps(m, faults, a, b));
  }
  double bus = slowest * 1.13;
  std::string out =
      "# nThread 1 nGpus " + std::to_string(m.gpus) +
      " minBytes 268435456 maxBytes 2147483648 step: 2(factor) warmup iters: 5 iters: 20 agg "
      "iters: 1 validation: 1 graph: 0\n#\n# Using devices\n";
  for (int i = 0; i < m.gpus; ++i) {
    char line[160];
    std::snprintf(line, sizeof line,
                  "#  Rank %2d Group  0 Pid  4242 on     node device %2d [0x%02x] %s\n", i, i,
                  0x18 + i, model.c_str());
    out += line;
  }
  out +=
      "#\n#                                                              out-of-place           "
      "            in-place\n#       size         count      type   redop    root     time   "
      "algbw   busbw #wrong     time   algbw   busbw #wrong\n#        (B)    (elements)        "
      "                       (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)\n";
  const double factor = 2.0 * (m.gpus - 1) / m.gpus;  // busbw = algbw * 2(n-1)/n
  for (long long size = 268435456; size <= 2147483648LL; size *= 2) {
    double algbw = bus / factor;
    double time_us = static_cast<double>(size) / (algbw * 1e3);
    // Every column after a space of its own: a slow node's times run wider than the header.
    std::string half = " " + padded(fixed(time_us, 1), 8) + " " + padded(fixed(algbw), 7) + " " +
                       padded(fixed(bus), 7) + " " + padded("0", 6);
    out += padded(std::to_string(size), 12) + padded(std::to_string(size / 4), 14) +
           "     float     sum      -1" + half + half + "\n";
  }
  out += "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : " + fixed(bus, 3) + "\n#\n";
  return out;
}

}  // namespace

burn_in::BurnInInputs simulated_burn_in_outputs(const std::string& model,
                                                const topology::Matrix& links,
                                                const std::vector<SimulatedFault>& struck) {
  auto [status, errors] = nvlink_outputs(model, links, struck);
  burn_in::BurnInInputs in{.nvbandwidth = nvbandwidth(model, links, struck),
                           .gpu_burn = gpu_burn(model, links.gpus, struck),
                           .dcgmproftester = dcgmproftester(model, links.gpus, struck),
                           .nvlink_status = std::move(status),
                           .nvlink_errors = std::move(errors)};
  if (links.gpus > 1) in.all_reduce_perf = all_reduce_perf(model, links, struck);
  return in;
}

}  // namespace gpurent::agent
