// The measured figures' JSON.
#include "api/handlers/measured_json.h"

#include "api/handlers/json_values.h"

#include <cmath>

namespace gpurent::http {

namespace {

// The day's price over the shape's TFLOP/s, or null without a figure. The figure is
// `per_gpu / divisor` TFLOP/s per GPU: Gflop/s arrive with a divisor of 1000.
nlohmann::json price_per(const Money& price_per_day, const std::optional<double>& per_gpu,
                         double divisor, int gpu_count) {
  if (!per_gpu || *per_gpu <= 0 || gpu_count <= 0) return nullptr;
  double tflops = *per_gpu / divisor * gpu_count;
  return Money(static_cast<long long>(
                   std::llround(static_cast<double>(price_per_day.amount_minor()) / tflops)),
               price_per_day.currency())
      .to_json();
}

}  // namespace

nlohmann::json measured_fields(const std::optional<inventory::ModelMeasurement>& measured,
                               const Money& price_per_day, int gpu_count) {
  if (!measured) {
    return {{"measured", nullptr},
            {"price_per_measured_tflops_day", nullptr},
            {"price_per_measured_tensor_tflops_day", nullptr}};
  }
  const auto& m = *measured;
  return {{"measured",
           {{"gflops_per_gpu", optional_json(m.gflops_per_gpu)},
            {"peer_gbps", optional_json(m.peer_gbps)},
            {"nccl_bus_gbps", optional_json(m.nccl_bus_gbps)},
            {"tensor_tflops_per_gpu", optional_json(m.tensor_tflops_per_gpu)},
            {"memory_gbps_per_gpu", optional_json(m.memory_gbps_per_gpu)},
            {"nodes", m.nodes}}},
          {"price_per_measured_tflops_day",
           price_per(price_per_day, m.gflops_per_gpu, 1000.0, gpu_count)},
          {"price_per_measured_tensor_tflops_day",
           price_per(price_per_day, m.tensor_tflops_per_gpu, 1.0, gpu_count)}};
}

}  // namespace gpurent::http
