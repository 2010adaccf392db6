// The burn-in verdict: each figure against its nominal value and its medians.
#include "inventory/burn_in_rules.h"

#include <algorithm>
#include <cstdio>
#include <map>

namespace gpurent::inventory {
namespace {

std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  std::string s = buf;
  if (s.size() > 2 && s.ends_with(".0")) s.resize(s.size() - 2);
  return s;
}

std::string gpu(int index) {
  return "gpu" + std::to_string(index);
}

// The bar a figure must reach: the higher of its nominal share and its medians' share, with
// the words that say where it came from.
struct Bar {
  double value = 0;
  std::string why;
};

std::optional<Bar> bar_of(
    std::optional<double> nominal,
    std::initializer_list<std::pair<const char*, std::optional<double>>> medians,
    const BurnInThresholds& t) {
  std::optional<Bar> bar;
  if (nominal && *nominal > 0) {
    bar =
        Bar{*nominal * t.of_nominal, number(t.of_nominal) + " of the nominal " + number(*nominal)};
  }
  for (const auto& [name, median] : medians) {
    if (!median || *median <= 0) continue;
    double v = *median * t.of_median;
    if (!bar || v > bar->value) {
      bar = Bar{v, number(t.of_median) + " of the " + name + " median " + number(*median)};
    }
  }
  return bar;
}

void held_to(std::vector<BurnInFinding>& out, const std::string& check, const std::string& subject,
             const std::string& what, const std::string& unit, double measured,
             const std::optional<Bar>& bar) {
  BurnInFinding f{.check = check, .subject = subject, .measured = measured, .unit = unit};
  if (!bar) {
    f.detail = subject + " " + what + " " + number(measured) + " " + unit;
  } else {
    f.expected = bar->value;
    f.failed = measured < bar->value;
    f.detail = subject + " " + what + " " + number(measured) + " " + unit +
               (f.failed ? ", below " : ", at least ") + number(bar->value) + " (" + bar->why + ")";
  }
  out.push_back(std::move(f));
}

// A GPU with fewer NVLinks up than the best of its siblings lost some (a bridged PCIe pair has
// links that are never up, on both GPUs alike); errors counted on its links are a warning.
void add_nvlink_findings(std::vector<BurnInFinding>& out,
                         const std::vector<burn_in::NvlinkFigure>& nvlink) {
  int most = 0;
  for (const auto& n : nvlink) most = std::max(most, n.active);
  for (const auto& n : nvlink) {
    BurnInFinding f{.check = "nvlink",
                    .subject = gpu(n.gpu),
                    .measured = static_cast<double>(n.active),
                    .expected = static_cast<double>(most),
                    .unit = "links"};
    f.failed = n.active < most;
    f.detail = gpu(n.gpu) + " NVLink " + std::to_string(n.active) + " of " + std::to_string(most) +
               " links up";
    if (n.all_down) {
      f.detail = gpu(n.gpu) + " NVLink: all links down";
    } else if (f.failed && !n.inactive.empty()) {
      f.detail += " (inactive:";
      for (int l : n.inactive) f.detail += " " + std::to_string(l);
      f.detail += ")";
    }
    if (f.failed && most > 0) f.detail += ", while its siblings have " + std::to_string(most);
    out.push_back(std::move(f));
    if (n.errors && *n.errors > 0) {
      out.push_back({.check = "nvlink_errors",
                     .subject = gpu(n.gpu),
                     .warning = true,
                     .measured = static_cast<double>(*n.errors),
                     .expected = 0.0,
                     .unit = "errors",
                     .detail = gpu(n.gpu) + " NVLink error counters (replay, recovery, CRC…) at " +
                               std::to_string(*n.errors) + " since the driver loaded"});
    }
  }
}

}  // namespace

void add_ecc_findings(BurnInVerdict& verdict, const nlohmann::json& before,
                      const nlohmann::json& after) {
  auto by_index = [](const nlohmann::json& gpus) {
    std::map<int, const nlohmann::json*> out;
    if (!gpus.is_array()) return out;
    for (const auto& g : gpus) {
      if (g.is_object() && g.contains("index") && g["index"].is_number_integer()) {
        out[g["index"].get<int>()] = &g;
      }
    }
    return out;
  };
  auto count = [](const nlohmann::json& g, const char* key) {
    return g.contains(key) && g[key].is_number() ? g[key].get<double>() : 0.0;
  };
  auto then = by_index(before);
  std::vector<BurnInFinding> found;
  for (const auto& [index, now] : by_index(after)) {
    auto was = then.find(index);
    if (was == then.end()) continue;
    double dbe = count(*now, "ecc_volatile_dbe") - count(*was->second, "ecc_volatile_dbe");
    double sbe = count(*now, "ecc_volatile_sbe") - count(*was->second, "ecc_volatile_sbe");
    bool remap_failed = now->contains("remapped_rows_failure") &&
                        (*now)["remapped_rows_failure"].is_boolean() &&
                        (*now)["remapped_rows_failure"].get<bool>();
    if (dbe > 0 || remap_failed) {
      found.push_back({.check = "ecc",
                       .subject = gpu(index),
                       .failed = true,
                       .measured = dbe,
                       .expected = 0.0,
                       .unit = "errors",
                       .detail = gpu(index) + (remap_failed ? " failed to remap a memory row"
                                                            : " had " + number(dbe) +
                                                                  " uncorrectable memory errors "
                                                                  "during the burn-in")});
    } else if (sbe > 0) {
      found.push_back({.check = "ecc",
                       .subject = gpu(index),
                       .warning = true,
                       .measured = sbe,
                       .expected = 0.0,
                       .unit = "errors",
                       .detail = gpu(index) + " corrected " + number(sbe) +
                                 " memory errors during the burn-in"});
    }
  }
  if (found.empty()) return;
  verdict.passed = verdict.passed &&
                   std::none_of(found.begin(), found.end(), [](const auto& f) { return f.failed; });
  verdict.findings.insert(verdict.findings.begin(), found.begin(), found.end());
}

std::optional<double> median_of(std::vector<double> values) {
  if (values.empty()) return std::nullopt;
  auto mid = values.begin() + static_cast<std::ptrdiff_t>(values.size() / 2);
  std::nth_element(values.begin(), mid, values.end());
  if (values.size() % 2 == 1) return *mid;
  double upper = *mid;
  double lower = *std::max_element(values.begin(), mid);
  return (lower + upper) / 2;
}

std::string BurnInVerdict::summary() const {
  std::string out;
  for (const auto& f : findings) {
    if (!f.failed) continue;
    if (!out.empty()) out += "; ";
    out += f.detail;
  }
  return out;
}

BurnInVerdict judge_burn_in(const burn_in::BurnInFigures& figures, const BurnInNominal& nominal,
                            const BurnInMedians& medians, const BurnInThresholds& t) {
  std::vector<BurnInFinding> all;
  for (const auto& p : figures.problems) {
    all.push_back({.check = "tool_output", .subject = "node", .failed = true, .detail = p});
  }
  if (figures.tools.empty() && figures.problems.empty()) {
    all.push_back({.check = "measured",
                   .subject = "node",
                   .warning = true,
                   .detail = "nothing was measured: the node runs no burn-in tools"});
  }

  std::vector<double> gflops;
  for (const auto& g : figures.gpus) {
    if (g.gflops) gflops.push_back(*g.gflops);
  }
  auto node_gflops = median_of(gflops);
  for (const auto& g : figures.gpus) {
    if (g.gflops) {
      held_to(all, "gpu_throughput", gpu(g.index), "matmul", "Gflop/s", *g.gflops,
              bar_of(std::nullopt, {{"node's", node_gflops}, {"fleet's", medians.gflops}}, t));
    }
    if (g.burn_ok && !*g.burn_ok) {
      all.push_back({.check = "gpu_burn",
                     .subject = gpu(g.index),
                     .failed = true,
                     .detail = gpu(g.index) + " gpu_burn FAULTY: its results were wrong"});
    }
  }

  // The tensor-core GEMM and the memory bandwidth: like gpu_burn's, their figures depend on the
  // tool's version and flags, so they are held to the node's and the fleet's medians.
  std::vector<double> tensor, memory;
  for (const auto& g : figures.gpus) {
    if (g.tensor_tflops) tensor.push_back(*g.tensor_tflops);
    if (g.memory_gbps) memory.push_back(*g.memory_gbps);
  }
  auto node_tensor = median_of(tensor);
  auto node_memory = median_of(memory);
  for (const auto& g : figures.gpus) {
    if (g.tensor_tflops) {
      held_to(
          all, "gpu_tensor_throughput", gpu(g.index), "fp16 tensor GEMM", "TFLOP/s",
          *g.tensor_tflops,
          bar_of(std::nullopt, {{"node's", node_tensor}, {"fleet's", medians.tensor_tflops}}, t));
    }
    if (g.memory_gbps) {
      held_to(all, "gpu_memory_bandwidth", gpu(g.index), "memory copy", "GB/s", *g.memory_gbps,
              bar_of(std::nullopt, {{"node's", node_memory}, {"fleet's", medians.memory_gbps}}, t));
    }
  }
  add_nvlink_findings(all, figures.nvlink);

  std::vector<double> links;
  for (const auto& l : figures.links) links.push_back(l.gbps);
  auto node_links = median_of(links);
  const bool nvlinked = nominal.all_pairs_nvlinked;
  for (const auto& l : figures.links) {
    std::string subject = gpu(l.a) + "-" + gpu(l.b);
    auto bar = nvlinked ? bar_of(nominal.link_gbps,
                                 {{"node's", node_links}, {"fleet's", medians.link_gbps}}, t)
                        : std::optional<Bar>{};
    held_to(all, "peer_bandwidth", subject, "peer copy", "GB/s", l.gbps, bar);
  }

  if (figures.nccl_bus_gbps) {
    held_to(all, "nccl_bus_bandwidth", "node", "NCCL all-reduce bus bandwidth", "GB/s",
            *figures.nccl_bus_gbps,
            bar_of(nvlinked ? nominal.link_gbps : std::nullopt,
                   {{"fleet's", medians.nccl_bus_gbps}}, t));
  }
  if (figures.nccl_wrong > 0) {
    all.push_back(
        {.check = "nccl_correctness",
         .subject = "node",
         .failed = true,
         .measured = static_cast<double>(figures.nccl_wrong),
         .expected = 0.0,
         .detail = "NCCL all-reduce gave " + std::to_string(figures.nccl_wrong) + " wrong values"});
  }

  for (const auto& d : figures.diag) {
    BurnInFinding f{.check = "dcgm", .subject = d.test};
    f.failed = d.verdict == burn_in::DiagVerdict::kFail;
    f.warning = d.verdict == burn_in::DiagVerdict::kWarn;
    f.detail = "DCGM " + d.test + ": " + std::string(burn_in::to_string(d.verdict));
    for (std::size_t i = 0; i < d.failing_gpus.size(); ++i) {
      f.detail += (i == 0 ? " on " : ", ") + gpu(d.failing_gpus[i]);
    }
    all.push_back(std::move(f));
  }

  BurnInVerdict verdict;
  verdict.passed = std::none_of(all.begin(), all.end(), [](const auto& f) { return f.failed; });
  std::stable_partition(all.begin(), all.end(),
                        [](const auto& f) { return f.failed || f.warning; });
  verdict.findings = std::move(all);
  return verdict;
}

}  // namespace gpurent::inventory
