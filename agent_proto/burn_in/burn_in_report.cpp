// The typed burn-in results as JSON, and the folder of captures the command reads.
#include "agent_proto/burn_in/burn_in_report.h"

#include <fstream>

namespace gpurent::burn_in {
namespace {

using nlohmann::json;

json optional_number(const std::optional<double>& v) {
  return v ? json(*v) : json(nullptr);
}

json measurement_json(const NcclMeasurement& m) {
  json out = {{"time_us", m.time_us}, {"algbw", m.algbw_gbps}, {"busbw", m.busbw_gbps}};
  if (m.wrong) out["wrong"] = *m.wrong;
  return out;
}

std::optional<std::string> read_capped(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::string text(kMaxToolOutputBytes + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<std::size_t>(in.gcount()));
  return text;
}

}  // namespace

json to_json(const NcclPerfResult& r) {
  json devices = json::array();
  for (const auto& d : r.devices) {
    json dev = {{"rank", d.rank},     {"pid", d.pid},       {"host", d.host},
                {"device", d.device}, {"bus_id", d.bus_id}, {"model", d.model}};
    if (d.group) dev["group"] = *d.group;
    devices.push_back(std::move(dev));
  }
  json rows = json::array();
  for (const auto& row : r.rows) {
    json j = {{"size_bytes", row.size_bytes},
              {"count", row.count},
              {"type", row.type},
              {"out_of_place", measurement_json(row.out_of_place)},
              {"in_place", measurement_json(row.in_place)}};
    if (row.redop) j["redop"] = *row.redop;
    if (row.root) j["root"] = *row.root;
    rows.push_back(std::move(j));
  }
  json out = {{"avg_bus_bandwidth_gbps", r.avg_bus_bandwidth_gbps},
              {"wrong_total", r.wrong_total()},
              {"devices", std::move(devices)},
              {"rows", std::move(rows)}};
  if (r.out_of_bounds_values) out["out_of_bounds_values"] = *r.out_of_bounds_values;
  return out;
}

json to_json(const NvbandwidthResult& r) {
  json cases = json::array();
  for (const auto& c : r.test_cases) {
    json matrices = json::array();
    for (const auto& m : c.matrices) {
      json cells = json::array();
      for (const auto& row : m.cells) {
        json cells_row = json::array();
        for (const auto& cell : row) cells_row.push_back(optional_number(cell));
        cells.push_back(std::move(cells_row));
      }
      json mj = {{"title", m.title},
                 {"unit", m.unit},
                 {"columns", m.columns},
                 {"rows", m.rows},
                 {"cells", std::move(cells)}};
      if (m.sum) {
        mj["sum_name"] = *m.sum_name;
        mj["sum"] = *m.sum;
      }
      matrices.push_back(std::move(mj));
    }
    json cj = {{"name", c.name}, {"matrices", std::move(matrices)}};
    if (c.sum) cj["sum"] = *c.sum;
    cases.push_back(std::move(cj));
  }
  json out = {{"test_cases", std::move(cases)}};
  if (r.version) out["version"] = *r.version;
  if (r.driver_version) out["driver_version"] = *r.driver_version;
  return out;
}

json to_json(const DcgmDiagResult& r) {
  json tests = json::array();
  for (const auto& t : r.tests) {
    json gpus = json::array();
    for (const auto& g : t.gpus) {
      gpus.push_back({{"gpu", g.gpu}, {"verdict", std::string(to_string(g.verdict))}});
    }
    json messages = json::array();
    for (const auto& m : t.messages) messages.push_back({{"kind", m.kind}, {"text", m.text}});
    tests.push_back({{"name", t.name},
                     {"category", t.category},
                     {"verdict", std::string(to_string(t.verdict))},
                     {"all_gpus", t.all_gpus},
                     {"failing_gpus", t.failing_gpus()},
                     {"gpus", std::move(gpus)},
                     {"messages", std::move(messages)}});
  }
  json out = {
      {"passed", r.passed()}, {"gpu_device_ids", r.gpu_device_ids}, {"tests", std::move(tests)}};
  if (r.dcgm_version) out["dcgm_version"] = *r.dcgm_version;
  if (r.driver_version) out["driver_version"] = *r.driver_version;
  return out;
}

json to_json(const GpuBurnResult& r) {
  json gpus = json::array();
  for (const auto& g : r.gpus) {
    json j = {{"index", g.index}, {"died", g.died}};
    if (g.name) j["name"] = *g.name;
    if (g.gflops) j["gflops"] = *g.gflops;
    if (g.errors) j["errors"] = *g.errors;
    if (g.temperature_c) j["temperature_c"] = *g.temperature_c;
    if (g.verdict) j["verdict"] = std::string(to_string(*g.verdict));
    gpus.push_back(std::move(j));
  }
  json out = {{"finished", r.finished}, {"gpus", std::move(gpus)}};
  if (r.progress_percent) out["progress_percent"] = *r.progress_percent;
  return out;
}

json to_json(const ProftesterResult& r) {
  json workers = json::array();
  for (const auto& w : r.workers) {
    json j = {{"gpu", w.gpu}, {"gflops", w.gflops}};
    if (w.instance) j["instance"] = *w.instance;
    workers.push_back(std::move(j));
  }
  json out = {{"metric", r.metric}, {"workers", std::move(workers)}};
  if (r.test_id) out["test_id"] = *r.test_id;
  return out;
}

json to_json(const std::vector<NvlinkGpuStatus>& r) {
  json gpus = json::array();
  for (const auto& g : r) {
    json links = json::array();
    for (const auto& l : g.links)
      links.push_back({{"link", l.link}, {"gbps", optional_number(l.gbps)}});
    gpus.push_back({{"gpu", g.gpu},
                    {"name", g.name},
                    {"links", std::move(links)},
                    {"all_inactive", g.all_inactive},
                    {"unsupported", g.unsupported}});
  }
  return gpus;
}

json to_json(const std::vector<NvlinkGpuErrors>& r) {
  json gpus = json::array();
  for (const auto& g : r) {
    json links = json::array();
    for (const auto& l : g.links) links.push_back({{"link", l.link}, {"counters", l.counters}});
    gpus.push_back({{"gpu", g.gpu}, {"name", g.name}, {"links", std::move(links)}});
  }
  return gpus;
}

json to_json(const P2pBandwidthResult& r) {
  json devices = json::array();
  for (const auto& d : r.devices) {
    json j = {{"index", d.index}, {"name", d.name}};
    if (d.pci_bus_id) j["pci_bus_id"] = *d.pci_bus_id;
    devices.push_back(std::move(j));
  }
  json matrices = json::array();
  for (const auto& m : r.matrices) {
    json cells = json::array();
    for (const auto& row : m.cells) {
      json cells_row = json::array();
      for (const auto& cell : row) cells_row.push_back(optional_number(cell));
      cells.push_back(std::move(cells_row));
    }
    matrices.push_back({{"title", m.title},
                        {"unit", m.unit},
                        {"columns", m.columns},
                        {"rows", m.rows},
                        {"cells", std::move(cells)}});
  }
  return {{"devices", std::move(devices)},
          {"connectivity", r.connectivity},
          {"matrices", std::move(matrices)}};
}

BurnInInputs read_burn_in_dir(const std::filesystem::path& dir) {
  return {.all_reduce_perf = read_capped(dir / "all_reduce_perf.txt"),
          .nvbandwidth = read_capped(dir / "nvbandwidth.txt"),
          .dcgmi_diag = read_capped(dir / "dcgmi_diag.txt"),
          .gpu_burn = read_capped(dir / "gpu_burn.txt"),
          .dcgmproftester = read_capped(dir / "dcgmproftester.txt"),
          .nvlink_status = read_capped(dir / "nvlink_status.txt"),
          .nvlink_errors = read_capped(dir / "nvlink_errors.txt"),
          .p2p_bandwidth = read_capped(dir / "p2p_bandwidth.txt")};
}

BurnInReport burn_in_report(const BurnInInputs& inputs) {
  BurnInReport report{.json = json::object(), .problems = {}};
  auto one = [&](const std::optional<std::string>& text, const char* file, const char* member,
                 auto parse) {
    if (!text) return;
    try {
      report.json[member] = to_json(parse(*text));
    } catch (const ParseError& e) {
      report.problems.push_back(std::string(file) + ": " + e.what());
    }
  };
  one(inputs.all_reduce_perf, "all_reduce_perf.txt", "nccl_all_reduce", parse_nccl_perf);
  one(inputs.nvbandwidth, "nvbandwidth.txt", "nvbandwidth", parse_nvbandwidth);
  one(inputs.dcgmi_diag, "dcgmi_diag.txt", "dcgmi_diag", parse_dcgmi_diag);
  one(inputs.gpu_burn, "gpu_burn.txt", "gpu_burn", parse_gpu_burn);
  one(inputs.dcgmproftester, "dcgmproftester.txt", "dcgmproftester", parse_dcgmproftester);
  one(inputs.nvlink_status, "nvlink_status.txt", "nvlink_status", parse_nvlink_status);
  one(inputs.nvlink_errors, "nvlink_errors.txt", "nvlink_errors", parse_nvlink_errors);
  one(inputs.p2p_bandwidth, "p2p_bandwidth.txt", "p2p_bandwidth", parse_p2p_bandwidth);
  if (!inputs.all_reduce_perf && !inputs.nvbandwidth && !inputs.dcgmi_diag && !inputs.gpu_burn &&
      !inputs.dcgmproftester && !inputs.nvlink_status && !inputs.nvlink_errors &&
      !inputs.p2p_bandwidth) {
    report.problems.push_back(
        "nothing to report: none of all_reduce_perf.txt, nvbandwidth.txt, dcgmi_diag.txt, "
        "gpu_burn.txt, dcgmproftester.txt, nvlink_status.txt, nvlink_errors.txt, "
        "p2p_bandwidth.txt is there");
  }
  return report;
}

}  // namespace gpurent::burn_in
