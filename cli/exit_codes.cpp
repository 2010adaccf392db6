// Maps API answers to the CLI's exit codes, in one place so every command agrees.
#include "cli/exit_codes.h"

namespace gpurent::cli {

int exit_code_for(int status, std::string_view error_code) {
  if (status >= 200 && status < 300) return kExitOk;
  if (status == 401 || status == 403) return kExitAuth;
  if (status == 402) return kExitNoFunds;
  if (status == 404) return kExitNotFound;
  // 409 also means invalid_state and conflict, which more capacity would not cure.
  if (status == 409 && error_code == "insufficient_capacity") return kExitNoCapacity;
  if (status >= 500) return kExitServer;
  return kExitApiError;
}

std::string exit_code_help() {
  return "Exit codes:\n"
         "  0  ok\n"
         "  1  other API error (invalid request, invalid state, quota exceeded, rental failed)\n"
         "  2  usage or configuration error (nothing was sent)\n"
         "  3  authentication or permission (401, 403)\n"
         "  4  no capacity (409 insufficient_capacity)\n"
         "  5  no funds (402 insufficient_funds)\n"
         "  6  timeout (--wait or --timeout ran out)\n"
         "  7  not found (404)\n"
         "  8  server error or unreachable (5xx, connection or TLS failure) after retries\n"
         "  9  doctor found a failed check\n";
}

}  // namespace gpurent::cli
