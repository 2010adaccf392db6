// Burn-in figures from the tools' parsed outputs, and their strict wire form.
#include "agent_proto/burn_in/figures.h"

#include "agent_proto/burn_in/dcgmproftester.h"
#include "agent_proto/burn_in/gpu_burn.h"
#include "agent_proto/burn_in/nccl_tests.h"
#include "agent_proto/burn_in/nvbandwidth.h"
#include "agent_proto/burn_in/p2p_bandwidth.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>
#include <set>

namespace gpurent::burn_in {
namespace {

using nlohmann::json;

// The peer copy matrix: the read test when it ran, else the write test (both copy engine).
const NvbandwidthMatrix* peer_matrix(const NvbandwidthResult& r) {
  for (const char* name : {"device_to_device_memcpy_read_ce", "device_to_device_memcpy_write_ce"}) {
    for (const auto& c : r.test_cases) {
      if (c.name != name) continue;
      for (const auto& m : c.matrices) {
        if (m.unit == "GB/s") return &m;
      }
    }
  }
  return nullptr;
}

std::optional<int> label_index(const std::string& label) {
  int v = -1;
  auto [end, ec] = std::from_chars(label.data(), label.data() + label.size(), v);
  if (ec != std::errc() || end != label.data() + label.size() || v < 0 || v >= kMaxFigureGpus) {
    return std::nullopt;
  }
  return v;
}

template <typename Matrix>
void add_links(const Matrix& m, BurnInFigures& out) {
  // Per unordered pair the slower direction: a link is as good as its worse half.
  std::map<std::pair<int, int>, double> pairs;
  for (std::size_t r = 0; r < m.rows.size() && r < m.cells.size(); ++r) {
    auto from = label_index(m.rows[r]);
    for (std::size_t c = 0; c < m.columns.size() && c < m.cells[r].size(); ++c) {
      auto to = label_index(m.columns[c]);
      const auto& cell = m.cells[r][c];
      if (!from || !to || *from == *to || !cell) continue;
      auto key = std::minmax(*from, *to);
      auto [it, fresh] = pairs.emplace(key, *cell);
      if (!fresh) it->second = std::min(it->second, *cell);
    }
  }
  for (const auto& [key, gbps] : pairs) out.links.push_back({key.first, key.second, gbps});
}

// The GPU's figure, made when it has none yet.
GpuFigure& gpu_figure(BurnInFigures& out, int index) {
  for (auto& g : out.gpus) {
    if (g.index == index) return g;
  }
  out.gpus.push_back({.index = index});
  return out.gpus.back();
}

NvlinkFigure& nvlink_figure(BurnInFigures& out, int gpu) {
  for (auto& n : out.nvlink) {
    if (n.gpu == gpu) return n;
  }
  out.nvlink.push_back({.gpu = gpu});
  return out.nvlink.back();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  auto n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

void add_proftester(const ProftesterResult& r, BurnInFigures& out) {
  std::map<int, double> gflops;  // by GPU: its workers' (MIG instances') medians added up
  for (const auto& w : r.workers) {
    if (w.gpu < 0 || w.gpu >= kMaxFigureGpus || w.gflops.empty()) continue;
    gflops[w.gpu] += median(w.gflops);
  }
  for (const auto& [gpu, g] : gflops) gpu_figure(out, gpu).tensor_tflops = g / 1000;
}

// nvbandwidth's device_local_copy: one row, a GPU per column.
void add_local_copy(const NvbandwidthResult& r, BurnInFigures& out) {
  for (const auto& c : r.test_cases) {
    if (c.name != "device_local_copy") continue;
    for (const auto& m : c.matrices) {
      if (m.unit != "GB/s" || m.cells.empty()) continue;
      for (std::size_t col = 0; col < m.columns.size() && col < m.cells[0].size(); ++col) {
        auto gpu = label_index(m.columns[col]);
        if (gpu && m.cells[0][col]) gpu_figure(out, *gpu).memory_gbps = *m.cells[0][col];
      }
      return;
    }
  }
}

void add_nvlink_status(const std::vector<NvlinkGpuStatus>& r, BurnInFigures& out) {
  for (const auto& g : r) {
    if (g.unsupported || g.gpu < 0 || g.gpu >= kMaxFigureGpus) continue;
    auto& f = nvlink_figure(out, g.gpu);
    f.all_down = g.all_inactive;
    for (const auto& l : g.links) {
      if (l.gbps) {
        ++f.active;
      } else {
        f.inactive.push_back(l.link);
      }
    }
  }
}

void add_nvlink_errors(const std::vector<NvlinkGpuErrors>& r, BurnInFigures& out) {
  for (const auto& g : r) {
    if (g.gpu < 0 || g.gpu >= kMaxFigureGpus || g.links.empty()) continue;
    std::int64_t sum = 0;
    for (const auto& l : g.links) sum += nvlink_errors(l);
    nvlink_figure(out, g.gpu).errors = sum;
  }
}

std::string clipped(std::string text) {
  if (text.size() > kMaxFigureTextBytes) text.resize(kMaxFigureTextBytes);
  return text;
}

// ---- strict reading ----

// A member name from the agent, safe to quote in a message: printable ASCII, clipped.
std::string printable(const std::string& key) {
  std::string out;
  for (unsigned char c : key.substr(0, 40))
    out += c >= 0x20 && c <= 0x7e ? static_cast<char>(c) : '?';
  return out;
}

[[noreturn]] void refuse(const std::string& path, const std::string& why) {
  throw ParseError("burn-in figures: " + path + " " + why);
}

const json& member(const json& object, const char* name, const std::string& path) {
  auto it = object.find(name);
  if (it == object.end()) refuse(path + "." + name, "is missing");
  return *it;
}

void only_members(const json& object, std::initializer_list<const char*> names,
                  const std::string& path) {
  if (!object.is_object()) refuse(path, "must be an object");
  for (const auto& [key, _] : object.items()) {
    if (std::find_if(names.begin(), names.end(), [&](const char* n) { return key == n; }) ==
        names.end()) {
      refuse(path + "." + printable(key), "is not a member");
    }
  }
}

const json& array_of(const json& v, std::size_t max, const std::string& path) {
  if (!v.is_array()) refuse(path, "must be an array");
  if (v.size() > max) refuse(path, "has more than " + std::to_string(max) + " entries");
  return v;
}

double figure(const json& v, const std::string& path) {
  if (!v.is_number()) refuse(path, "must be a number");
  double d = v.get<double>();
  if (!std::isfinite(d) || d < 0 || d > 1e9) refuse(path, "must be between 0 and 1e9");
  return d;
}

int gpu_index(const json& v, const std::string& path) {
  if (!v.is_number_integer()) refuse(path, "must be an integer");
  auto i = v.get<std::int64_t>();
  if (i < 0 || i >= kMaxFigureGpus) refuse(path, "must be a GPU index below 64");
  return static_cast<int>(i);
}

std::string text(const json& v, const std::string& path) {
  if (!v.is_string()) refuse(path, "must be a string");
  auto s = v.get<std::string>();
  if (s.size() > kMaxFigureTextBytes) refuse(path, "is too long");
  return s;
}

DiagVerdict diag_verdict(const json& v, const std::string& path) {
  std::string s = text(v, path);
  for (auto d : {DiagVerdict::kSkip, DiagVerdict::kPass, DiagVerdict::kWarn, DiagVerdict::kFail}) {
    if (to_string(d) == s) return d;
  }
  refuse(path, "must be skip, pass, warn or fail");
}

std::int64_t count(const json& v, const std::string& path) {
  if (!v.is_number_integer() || v.get<std::int64_t>() < 0) refuse(path, "must be a count");
  return v.get<std::int64_t>();
}

}  // namespace

std::int64_t nvlink_errors(const NvlinkLinkErrors& link) {
  static const std::set<std::string> kErrors{
      "replay",   "recovery",  "crc",        "malformed_packet",     "buffer_overrun",
      "rx",       "rx_remote", "rx_general", "local_link_integrity", "effective",
      "data_crc", "flit_crc",  "ecc"};
  std::int64_t sum = 0;
  for (const auto& [name, n] : link.counters) {
    // A counter of a corrupt capture may be near the limit: saturate rather than wrap.
    if (kErrors.contains(name)) sum = n > INT64_MAX - sum ? INT64_MAX : sum + n;
  }
  return sum;
}

BurnInFigures figures_of(const BurnInInputs& inputs) {
  BurnInFigures out;
  auto attempt = [&](const std::optional<std::string>& capture, const char* tool, const char* file,
                     auto read) {
    if (!capture) return;
    try {
      read(*capture);
      out.tools.emplace_back(tool);
    } catch (const ParseError& e) {
      out.problems.push_back(clipped(std::string(file) + ": " + e.what()));
    }
  };
  attempt(inputs.gpu_burn, "gpu_burn", "gpu_burn.txt", [&](const std::string& t) {
    auto r = parse_gpu_burn(t);
    for (const auto& g : r.gpus) {
      if (g.index < 0 || g.index >= kMaxFigureGpus) continue;
      GpuFigure f{.index = g.index, .gflops = g.gflops, .burn_ok = std::nullopt};
      if (g.verdict) f.burn_ok = *g.verdict == BurnVerdict::kOk && !g.died;
      if (g.died) f.burn_ok = false;
      out.gpus.push_back(f);
    }
    if (!r.finished) out.problems.push_back("gpu_burn.txt: the run did not finish");
  });
  attempt(inputs.nvbandwidth, "nvbandwidth", "nvbandwidth.txt", [&](const std::string& t) {
    auto r = parse_nvbandwidth(t);
    if (const auto* m = peer_matrix(r)) add_links(*m, out);
    add_local_copy(r, out);
  });
  // p2pBandwidthLatencyTest's unidirectional peer writes, when nvbandwidth gave no links.
  attempt(inputs.p2p_bandwidth, "p2p_bandwidth", "p2p_bandwidth.txt", [&](const std::string& t) {
    auto r = parse_p2p_bandwidth(t);
    const auto* m = r.find("Unidirectional P2P=Enabled Bandwidth");
    if (m && out.links.empty() && m->unit == "GB/s") add_links(*m, out);
  });
  attempt(inputs.dcgmproftester, "dcgmproftester", "dcgmproftester.txt",
          [&](const std::string& t) { add_proftester(parse_dcgmproftester(t), out); });
  attempt(inputs.nvlink_status, "nvlink", "nvlink_status.txt",
          [&](const std::string& t) { add_nvlink_status(parse_nvlink_status(t), out); });
  attempt(inputs.nvlink_errors, "nvlink", "nvlink_errors.txt",
          [&](const std::string& t) { add_nvlink_errors(parse_nvlink_errors(t), out); });
  // One tool, two captures (read one after the other): named once.
  out.tools.erase(std::unique(out.tools.begin(), out.tools.end()), out.tools.end());
  std::sort(out.gpus.begin(), out.gpus.end(),
            [](const auto& a, const auto& b) { return a.index < b.index; });
  std::sort(out.nvlink.begin(), out.nvlink.end(),
            [](const auto& a, const auto& b) { return a.gpu < b.gpu; });
  attempt(inputs.all_reduce_perf, "nccl", "all_reduce_perf.txt", [&](const std::string& t) {
    auto r = parse_nccl_perf(t);
    out.nccl_bus_gbps = r.avg_bus_bandwidth_gbps;
    out.nccl_wrong = r.wrong_total() + r.out_of_bounds_values.value_or(0);
  });
  attempt(inputs.dcgmi_diag, "dcgmi", "dcgmi_diag.txt", [&](const std::string& t) {
    auto r = parse_dcgmi_diag(t);
    for (const auto& test : r.tests) {
      if (out.diag.size() == kMaxFigureDiagTests) break;
      std::vector<int> failing;
      for (int g : test.failing_gpus()) {
        if (g < kMaxFigureGpus) failing.push_back(g);
      }
      out.diag.push_back({clipped(test.name), test.verdict, std::move(failing)});
    }
  });
  if (out.problems.size() > kMaxFigureProblems) out.problems.resize(kMaxFigureProblems);
  return out;
}

json to_json(const BurnInFigures& f) {
  json gpus = json::array();
  for (const auto& g : f.gpus) {
    json j = {{"index", g.index}};
    if (g.gflops) j["gflops"] = *g.gflops;
    if (g.burn_ok) j["burn_ok"] = *g.burn_ok;
    if (g.tensor_tflops) j["tensor_tflops"] = *g.tensor_tflops;
    if (g.memory_gbps) j["memory_gbps"] = *g.memory_gbps;
    gpus.push_back(std::move(j));
  }
  json links = json::array();
  for (const auto& l : f.links) links.push_back({{"a", l.a}, {"b", l.b}, {"gbps", l.gbps}});
  json diag = json::array();
  for (const auto& d : f.diag) {
    diag.push_back({{"test", d.test},
                    {"verdict", std::string(to_string(d.verdict))},
                    {"failing_gpus", d.failing_gpus}});
  }
  json out = {{"tools", f.tools},           {"gpus", std::move(gpus)}, {"links", std::move(links)},
              {"nccl_wrong", f.nccl_wrong}, {"diag", std::move(diag)}, {"problems", f.problems}};
  if (f.nccl_bus_gbps) out["nccl_bus_gbps"] = *f.nccl_bus_gbps;
  if (!f.nvlink.empty()) {
    json nvlink = json::array();
    for (const auto& n : f.nvlink) {
      json j = {
          {"gpu", n.gpu}, {"active", n.active}, {"inactive", n.inactive}, {"all_down", n.all_down}};
      if (n.errors) j["errors"] = *n.errors;
      nvlink.push_back(std::move(j));
    }
    out["nvlink"] = std::move(nvlink);
  }
  return out;
}

BurnInFigures figures_from_json(const json& j) {
  const std::string root = "result";
  only_members(
      j, {"tools", "gpus", "links", "nccl_bus_gbps", "nccl_wrong", "diag", "nvlink", "problems"},
      root);
  BurnInFigures f;
  const std::set<std::string> known_tools{"gpu_burn",       "nvbandwidth", "nccl",         "dcgmi",
                                          "dcgmproftester", "nvlink",      "p2p_bandwidth"};
  for (const auto& t : array_of(member(j, "tools", root), known_tools.size(), root + ".tools")) {
    std::string name = text(t, root + ".tools[]");
    if (!known_tools.contains(name) ||
        std::find(f.tools.begin(), f.tools.end(), name) != f.tools.end()) {
      refuse(root + ".tools", "names an unknown tool or one twice");
    }
    f.tools.push_back(name);
  }
  std::set<int> seen;
  const auto& gpus = array_of(member(j, "gpus", root), kMaxFigureGpus, root + ".gpus");
  for (std::size_t i = 0; i < gpus.size(); ++i) {
    std::string path = root + ".gpus[" + std::to_string(i) + "]";
    only_members(gpus[i], {"index", "gflops", "burn_ok", "tensor_tflops", "memory_gbps"}, path);
    GpuFigure g{.index = gpu_index(member(gpus[i], "index", path), path + ".index")};
    if (!seen.insert(g.index).second) refuse(path + ".index", "names a GPU twice");
    if (gpus[i].contains("gflops")) g.gflops = figure(gpus[i]["gflops"], path + ".gflops");
    if (gpus[i].contains("burn_ok")) {
      if (!gpus[i]["burn_ok"].is_boolean()) refuse(path + ".burn_ok", "must be true or false");
      g.burn_ok = gpus[i]["burn_ok"].get<bool>();
    }
    if (gpus[i].contains("tensor_tflops")) {
      g.tensor_tflops = figure(gpus[i]["tensor_tflops"], path + ".tensor_tflops");
    }
    if (gpus[i].contains("memory_gbps")) {
      g.memory_gbps = figure(gpus[i]["memory_gbps"], path + ".memory_gbps");
    }
    f.gpus.push_back(g);
  }
  std::set<std::pair<int, int>> pairs;
  const auto& links = array_of(member(j, "links", root), kMaxFigureLinks, root + ".links");
  for (std::size_t i = 0; i < links.size(); ++i) {
    std::string path = root + ".links[" + std::to_string(i) + "]";
    only_members(links[i], {"a", "b", "gbps"}, path);
    LinkFigure l{.a = gpu_index(member(links[i], "a", path), path + ".a"),
                 .b = gpu_index(member(links[i], "b", path), path + ".b"),
                 .gbps = figure(member(links[i], "gbps", path), path + ".gbps")};
    if (l.a >= l.b) refuse(path, "must name a below b");
    if (!pairs.insert({l.a, l.b}).second) refuse(path, "names a pair twice");
    f.links.push_back(l);
  }
  if (j.contains("nccl_bus_gbps"))
    f.nccl_bus_gbps = figure(j["nccl_bus_gbps"], root + ".nccl_bus_gbps");
  const auto& wrong = member(j, "nccl_wrong", root);
  if (!wrong.is_number_integer() || wrong.get<std::int64_t>() < 0) {
    refuse(root + ".nccl_wrong", "must be a count");
  }
  f.nccl_wrong = wrong.get<std::int64_t>();
  const auto& diag = array_of(member(j, "diag", root), kMaxFigureDiagTests, root + ".diag");
  for (std::size_t i = 0; i < diag.size(); ++i) {
    std::string path = root + ".diag[" + std::to_string(i) + "]";
    only_members(diag[i], {"test", "verdict", "failing_gpus"}, path);
    DiagFigure d{.test = text(member(diag[i], "test", path), path + ".test"),
                 .verdict = diag_verdict(member(diag[i], "verdict", path), path + ".verdict")};
    for (const auto& g :
         array_of(member(diag[i], "failing_gpus", path), kMaxFigureGpus, path + ".failing_gpus")) {
      d.failing_gpus.push_back(gpu_index(g, path + ".failing_gpus[]"));
    }
    f.diag.push_back(std::move(d));
  }
  if (j.contains("nvlink")) {
    std::set<int> gpus_seen;
    const auto& nvlink = array_of(j["nvlink"], kMaxFigureGpus, root + ".nvlink");
    for (std::size_t i = 0; i < nvlink.size(); ++i) {
      std::string path = root + ".nvlink[" + std::to_string(i) + "]";
      only_members(nvlink[i], {"gpu", "active", "inactive", "all_down", "errors"}, path);
      NvlinkFigure n{.gpu = gpu_index(member(nvlink[i], "gpu", path), path + ".gpu")};
      if (!gpus_seen.insert(n.gpu).second) refuse(path + ".gpu", "names a GPU twice");
      auto active = count(member(nvlink[i], "active", path), path + ".active");
      if (active > static_cast<std::int64_t>(kMaxNvlinkLinksPerGpu)) {
        refuse(path + ".active", "is more links than a GPU has");
      }
      n.active = static_cast<int>(active);
      for (const auto& l : array_of(member(nvlink[i], "inactive", path), kMaxNvlinkLinksPerGpu,
                                    path + ".inactive")) {
        auto link = count(l, path + ".inactive[]");
        if (link >= static_cast<std::int64_t>(kMaxNvlinkLinksPerGpu)) {
          refuse(path + ".inactive[]", "is not a link number");
        }
        n.inactive.push_back(static_cast<int>(link));
      }
      const auto& down = member(nvlink[i], "all_down", path);
      if (!down.is_boolean()) refuse(path + ".all_down", "must be true or false");
      n.all_down = down.get<bool>();
      if (nvlink[i].contains("errors")) n.errors = count(nvlink[i]["errors"], path + ".errors");
      f.nvlink.push_back(std::move(n));
    }
  }
  for (const auto& p :
       array_of(member(j, "problems", root), kMaxFigureProblems, root + ".problems")) {
    f.problems.push_back(text(p, root + ".problems[]"));
  }
  return f;
}

}  // namespace gpurent::burn_in
