// A shape's measured performance as the catalog's answers print it (GET /v1/offers, POST
// /v1/advisor): its model's figures from the fleet's burn-ins and the price of a measured
// TFLOP/s a day (docs/burn-in.md, "Measured performance in the catalog").
#pragma once

#include "core/money.h"
#include "inventory/burn_in_store.h"

#include <nlohmann/json.hpp>

#include <optional>

namespace gpurent::http {

// {"measured": {gflops_per_gpu, peer_gbps, nccl_bus_gbps, tensor_tflops_per_gpu,
//  memory_gbps_per_gpu, nodes} | null, "price_per_measured_tflops_day": money | null,
//  "price_per_measured_tensor_tflops_day": money | null}: the price per day over the shape's
// measured TFLOP/s (gflops_per_gpu × gpu_count / 1000; tensor_tflops_per_gpu × gpu_count),
// rounded to the minor unit.
nlohmann::json measured_fields(const std::optional<inventory::ModelMeasurement>& measured,
                               const Money& price_per_day, int gpu_count);

}  // namespace gpurent::http
