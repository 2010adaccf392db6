// The measured figures' JSON.
#include "api/handlers/measured_json.h"

#include "api/handlers/json_values.h"

#include <cmath>

namespace gpurent::http {

nlohmann::json measured_fields(const std::optional<inventory::ModelMeasurement>& measured,
                               const Money& price_per_day, int gpu_count) {
  if (!measured) return {{"measured", nullptr}, {"price_per_measured_tflops_day", nullptr}};
  const auto& m = *measured;
  nlohmann::json price = nullptr;
  if (m.gflops_per_gpu && *m.gflops_per_gpu > 0 && gpu_count > 0) {
    double tflops = *m.gflops_per_gpu / 1000.0 * gpu_count;
    price = Money(static_cast<long long>(
                      std::llround(static_cast<double>(price_per_day.amount_minor()) / tflops)),
                  price_per_day.currency())
                .to_json();
  }
  return {{"measured",
           {{"gflops_per_gpu", optional_json(m.gflops_per_gpu)},
            {"peer_gbps", optional_json(m.peer_gbps)},
            {"nccl_bus_gbps", optional_json(m.nccl_bus_gbps)},
            {"nodes", m.nodes}}},
          {"price_per_measured_tflops_day", price}};
}

}  // namespace gpurent::http
