// How a rental prints (API.md "Rentals"): the API's answers and the webhooks' rental events
// (docs/webhooks.md) share this one encoder, so a receiver sees the rental as the API shows it.
#pragma once

#include "scheduler/records.h"

#include <nlohmann/json.hpp>

namespace gpurent::http {

nlohmann::json period_json(const scheduler::Period& p);
// The rental with `ssh` null: the owner's views, which read the node, fill it in.
nlohmann::json rental_json(const scheduler::RentalRecord& r);

}  // namespace gpurent::http
