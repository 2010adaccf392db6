// The CLI's commands over the API client: each reads its options, makes its requests and
// prints a table (or, with --json, the API's JSON on stdout); messages go to stderr.
#pragma once

#include "cli/api_client.h"
#include "cli/args.h"

#include <chrono>
#include <functional>
#include <ostream>

namespace gpurent::cli {

struct CommandContext {
  const ParsedArgs& args;
  ApiClient& api;
  std::ostream& out;  // data only
  std::ostream& err;  // progress and messages
  bool json = false;
  std::function<std::chrono::steady_clock::time_point()> now = [] {
    return std::chrono::steady_clock::now();
  };
};

// Runs the parsed command; its exit code. Throws UsageError and ApiError.
int run_command(CommandContext& ctx);

// Waits (long-polling GET /v1/rentals/{id}/wait) until rental `rental` reaches `target`;
// `rental` is updated to the last answer. 0 on success, kExitTimeout when the time ran
// out, kExitApiError when the rental ended in another final state first.
int wait_for_state(CommandContext& ctx, nlohmann::json& rental, const std::string& target,
                   long long timeout_s);

// The body of POST /v1/rentals and /v1/quotes from the booking options.
nlohmann::json booking_body(const ParsedArgs& args);

}  // namespace gpurent::cli
