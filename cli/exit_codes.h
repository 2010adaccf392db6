// The CLI's exit codes: a stable contract for scripts and CI pipelines (docs/cli.md).
#pragma once

#include <string>
#include <string_view>

namespace gpurent::cli {

enum ExitCode : int {
  kExitOk = 0,
  kExitApiError = 1,    // any other refusal by the API (400, 409 invalid_state, 422, …)
  kExitUsage = 2,       // bad arguments or configuration; nothing was sent
  kExitAuth = 3,        // 401 unauthenticated, 403 forbidden
  kExitNoCapacity = 4,  // 409 insufficient_capacity
  kExitNoFunds = 5,     // 402 insufficient_funds
  kExitTimeout = 6,     // --wait/--timeout ran out before the state was reached
  kExitNotFound = 7,    // 404 not_found
  kExitServer = 8,      // 5xx, or the server unreachable, after the retries
  kExitUnhealthy = 9,   // doctor: a check failed
};

// The exit code for an API error answer: its HTTP status and the contract's error code.
int exit_code_for(int status, std::string_view error_code);

// The table printed by `gpurent --help` and in docs/cli.md.
std::string exit_code_help();

}  // namespace gpurent::cli
