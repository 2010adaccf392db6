// Builds the OpenAPI 3.1 document from the router, so the two cannot drift apart.
#pragma once

#include "api/router.h"

#include <nlohmann/json_fwd.hpp>

namespace gpurent::http {

// Every documented route appears under its path and method with its summary and path
// parameters; shared schemas (Error, Money) sit under components.
nlohmann::json build_openapi(const Router& router, const std::string& version);

}  // namespace gpurent::http
