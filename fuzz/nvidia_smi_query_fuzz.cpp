// Fuzz target: the `nvidia-smi --query-gpu` CSV reader, with and without a header. Any input
// either yields GPUs whose telemetry the control plane accepts (the JSON form reads back equal)
// or is refused with a QueryGpuParseError whose message is printable ASCII.
#include "agent_proto/nvidia_smi_query.h"

#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

namespace {

void check(const std::vector<gpurent::agent_proto::GpuTelemetry>& gpus) {
  using namespace gpurent::agent_proto;
  for (const auto& gpu : gpus) {
    try {
      auto json = nlohmann::json::parse(to_json(gpu).dump());
      if (!(gpu_telemetry_from_json(json, "gpu") == gpu)) abort();
    } catch (const std::exception&) {
      abort();
    }
  }
}

void check_message(const char* what) {
  for (unsigned char c : std::string_view(what)) {
    if (c < 0x20 || c > 0x7e) abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace gpurent::agent_proto;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    check(parse_query_gpu_csv(text));
  } catch (const QueryGpuParseError& e) {
    check_message(e.what());
  }
  static const std::vector<std::string> kFields = {"index",
                                                   "uuid",
                                                   "temperature.gpu",
                                                   "temperature.gpu.tlimit",
                                                   "power.draw",
                                                   "utilization.gpu",
                                                   "ecc.errors.uncorrected.volatile.total",
                                                   "remapped_rows.pending",
                                                   "clocks_event_reasons.active"};
  try {
    check(parse_query_gpu_csv(text, kFields));
  } catch (const QueryGpuParseError& e) {
    check_message(e.what());
  }
  return 0;
}
