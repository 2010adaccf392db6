// gpurentd's lifecycle: database (embedded or external), migrations, routes, HTTP server.
#pragma once

#include "core/config.h"

namespace gpurent {

// Runs the server until SIGINT/SIGTERM; returns the process exit code.
int run_server(const Config& config);

// Applies pending migrations and exits; returns the process exit code.
int run_migrate(const Config& config);

}  // namespace gpurent
