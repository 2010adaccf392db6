// nvidia-smi as a subprocess; its output is parsed by agent_proto's readers, not here.
#include "agent/nvidia_smi.h"

#include "core/subprocess.h"

namespace gpurent::agent {

namespace {

std::string join(const std::vector<std::string>& fields) {
  std::string out;
  for (const auto& f : fields) out += (out.empty() ? "" : ",") + f;
  return out;
}

}  // namespace

const std::vector<std::string>& query_gpu_fields() {
  static const std::vector<std::string> kFields = {
      "index",
      "uuid",
      "name",
      "pci.bus_id",
      "temperature.gpu",
      "temperature.gpu.tlimit",
      "power.draw",
      "power.limit",
      "utilization.gpu",
      "clocks.current.sm",
      "memory.used",
      "memory.total",
      "ecc.errors.corrected.volatile.total",
      "ecc.errors.uncorrected.volatile.total",
      "ecc.errors.uncorrected.aggregate.total",
      "retired_pages.single_bit_ecc.count",
      "retired_pages.double_bit.count",
      "retired_pages.pending",
      "remapped_rows.correctable",
      "remapped_rows.uncorrectable",
      "remapped_rows.pending",
      "remapped_rows.failure",
      "clocks_event_reasons.active",
  };
  return kFields;
}

std::optional<std::string> run_for_output(const std::vector<std::string>& argv) {
  try {
    auto r = run_subprocess(argv);
    if (r.exit_code != 0) return std::nullopt;
    return r.output;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

std::optional<std::string> run_query_gpu() {
  // Older drivers know neither the tlimit temperature nor the clocks_event name; the
  // fallback asks only what every driver answers.
  static const std::vector<std::string> kBasic = {"index",
                                                  "uuid",
                                                  "name",
                                                  "pci.bus_id",
                                                  "temperature.gpu",
                                                  "power.draw",
                                                  "power.limit",
                                                  "utilization.gpu",
                                                  "memory.used",
                                                  "memory.total",
                                                  "ecc.errors.uncorrected.volatile.total"};
  for (const auto* fields : {&query_gpu_fields(), &kBasic}) {
    if (auto out = run_for_output({"nvidia-smi", "--query-gpu=" + join(*fields), "--format=csv"})) {
      return out;
    }
  }
  return std::nullopt;
}

std::optional<std::string> run_topo_m() {
  return run_for_output({"nvidia-smi", "topo", "-m"});
}

}  // namespace gpurent::agent
