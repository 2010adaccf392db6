// GET /v1/test/sleep?ms=N holds a database connection for N ms;
// GET/POST /v1/admin/test-clock reads or moves the test clock forward;
// POST /v1/test/leak drops a 4242-byte allocation, so a test can show that the harness fails
// a server whose LeakSanitizer report appears at exit.
#include "api/handlers/test_handlers.h"

#include "api/json_body.h"
#include "api/responses.h"
#include "core/db_health.h"

#include <charconv>
#include <cstdlib>
#include <cstring>

namespace gpurent::http {
namespace {

constexpr std::int64_t kMaxSleepMs = 60'000;
constexpr std::size_t kLeakBytes = 4242;
constexpr std::int64_t kMaxAdvanceSeconds = 10LL * 366 * 24 * 3600;

nlohmann::json clock_json(const TestClock& clock) {
  return {
      {"now", format_rfc3339(clock.now())},
      {"offset_seconds", std::chrono::duration_cast<std::chrono::seconds>(clock.offset()).count()}};
}

// Kept out of line and written through a volatile pointer, so the compiler can neither
// drop the allocation nor keep the last pointer to it alive in a register.
void* volatile g_leak_sink = nullptr;
[[gnu::noinline]] void leak_on_purpose(std::size_t bytes) {
  g_leak_sink = std::malloc(bytes);
  std::memset(g_leak_sink, 0x5a, bytes);
  g_leak_sink = nullptr;
}

}  // namespace

void add_test_routes(Router& router, TestRoutesState& state) {
  router.add({.method = Method::kGet,
              .pattern = "/v1/test/sleep",
              .handler =
                  [&state](const Request& req, const Principal&) {
                    auto ms_text = req.query_param("ms").value_or("");
                    std::int64_t ms = -1;
                    auto [p, ec] =
                        std::from_chars(ms_text.data(), ms_text.data() + ms_text.size(), ms);
                    if (ec != std::errc() || p != ms_text.data() + ms_text.size() || ms < 0 ||
                        ms > kMaxSleepMs) {
                      throw Error::invalid_field("ms", "must be an integer from 0 to 60000");
                    }
                    hold_database_connection(*state.pool, std::chrono::milliseconds(ms));
                    return json_response(200, {{"slept_ms", ms}});
                  },
              .execution = Execution::kWorker,
              .access = Access::kAnyone,
              .summary = "Test mode: hold a database connection for ?ms= milliseconds.",
              .tag = "test",
              .documented = false});

  router.add({.method = Method::kGet,
              .pattern = "/v1/admin/test-clock",
              .handler =
                  [&state](const Request&, const Principal&) {
                    return json_response(200, clock_json(*state.clock));
                  },
              .execution = Execution::kInline,
              .access = Access::kAnyone,
              .summary = "Test mode: read the test clock.",
              .tag = "test",
              .documented = false});

  router.add({.method = Method::kPost,
              .pattern = "/v1/admin/test-clock",
              .handler =
                  [&state](const Request& req, const Principal&) {
                    auto body = parse_json_body(req);
                    JsonObjectReader reader(body);
                    auto seconds = reader.required_int("advance_seconds", 0, kMaxAdvanceSeconds);
                    reader.finish();
                    state.clock->advance(std::chrono::seconds(seconds));
                    return json_response(200, clock_json(*state.clock));
                  },
              .execution = Execution::kInline,
              .access = Access::kAnyone,
              .summary = "Test mode: move the test clock forward by advance_seconds.",
              .tag = "test",
              .documented = false,
              .idempotency_key = false});

  router.add({.method = Method::kPost,
              .pattern = "/v1/test/leak",
              .handler =
                  [](const Request&, const Principal&) {
                    leak_on_purpose(kLeakBytes);
                    return json_response(200, {{"leaked_bytes", kLeakBytes}});
                  },
              .execution = Execution::kInline,
              .access = Access::kAnyone,
              .summary = "Test mode: leak 4242 bytes (proves the harness's leak check).",
              .tag = "test",
              .documented = false,
              .idempotency_key = false});
}

}  // namespace gpurent::http
