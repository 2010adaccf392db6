// GET /v1/test/sleep?ms=N holds a database connection for N ms;
// GET/POST /v1/admin/test-clock reads or moves the test clock forward;
// POST /v1/test/leak drops a 4242-byte allocation, so a test can show that the harness fails
// a server whose LeakSanitizer report appears at exit;
// POST /v1/test/lifecycle/run runs the rental lifecycle once at the test clock's now, so a
// test need not wait for the worker's thread; GET /v1/test/rentals/{id}/tasks lists a rental's
// agent tasks and POST /v1/test/tasks/{id}/complete reports one as the agent would.
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

nlohmann::json task_json(const scheduler::AgentTask& t) {
  return {{"id", t.id},
          {"node_id", t.node_id},
          {"rental_id", t.rental_id ? nlohmann::json(*t.rental_id) : nlohmann::json(nullptr)},
          {"kind", scheduler::to_string(t.kind)},
          {"state", scheduler::to_string(t.state)},
          {"payload", t.payload},
          {"result_message",
           t.result_message ? nlohmann::json(*t.result_message) : nlohmann::json(nullptr)}};
}

// Reports the task's outcome as the agent module does with an agent's report: recorded,
// and the lifecycle told in the same transaction (it makes the next task, install_access
// after the provision). not_found for no such task, invalid_state for a finished one.
scheduler::AgentTask report_task(const TestRoutesState& state, const std::string& id, bool ok,
                                 const std::string& message) {
  return state.pool->transact("test_complete_task", [&](Tx& tx) {
    if (!state.tasks->complete(tx, id, ok, message)) {
      auto existing = state.tasks->get(tx, id);
      if (!existing) throw Error(ErrorCode::kNotFound, "No such task.");
      throw Error(ErrorCode::kInvalidState, "The task is already finished.",
                  {{"state", scheduler::to_string(existing->state)}});
    }
    auto done = *state.tasks->get(tx, id);
    if (state.lifecycle && state.clock)
      state.lifecycle->task_finished(tx, done, ok, state.clock->now());
    return done;
  });
}

}  // namespace

void add_test_routes(Router& router, TestRoutesState& state) {
  router.add({.method = Method::kGet,
              .pattern = "/v1/test/openapi-check",
              .handler =
                  [&state](const Request&, const Principal&) {
                    return json_response(200, {{"disagreements", state.openapi->disagreements()}});
                  },
              .execution = Execution::kInline,
              .access = Access::kAnyone,
              .summary = "Test mode: where the router and the OpenAPI fragments disagree.",
              .tag = "test",
              .documented = false});

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

  router.add({.method = Method::kPost,
              .pattern = "/v1/test/lifecycle/run",
              .handler =
                  [&state](const Request&, const Principal&) {
                    if (state.fleet) state.fleet->fail_silent_nodes(state.clock->now());
                    int moved = state.lifecycle->run_once(*state.pool, state.clock->now());
                    return json_response(200, {{"moved", moved}});
                  },
              .execution = Execution::kWorker,
              .access = Access::kAnyone,
              .summary = "Test mode: run the rental lifecycle once at the test clock's now.",
              .tag = "test",
              .documented = false,
              .idempotency_key = false});

  router.add({.method = Method::kGet,
              .pattern = "/v1/test/rentals/{id}/tasks",
              .handler =
                  [&state](const Request& req, const Principal&) {
                    std::string id(req.path_param("id"));
                    auto tasks = state.pool->read("test_rental_tasks", [&](Tx& tx) {
                      return state.tasks->for_rental(tx, id);
                    });
                    nlohmann::json data = nlohmann::json::array();
                    for (const auto& t : tasks) data.push_back(task_json(t));
                    return json_response(200, {{"items", data}});
                  },
              .execution = Execution::kWorker,
              .access = Access::kAnyone,
              .summary = "Test mode: a rental's agent tasks, oldest first.",
              .tag = "test",
              .documented = false});

  router.add({.method = Method::kPost,
              .pattern = "/v1/test/tasks/{id}/complete",
              .handler =
                  [&state](const Request& req, const Principal&) {
                    std::string id(req.path_param("id"));
                    auto body = parse_json_body(req);
                    JsonObjectReader reader(body);
                    auto ok = reader.optional_bool("ok");
                    auto message = reader.optional_string("message", 1000).value_or("");
                    reader.finish();
                    if (!ok) throw Error::invalid_field("ok", "is required");
                    return json_response(200, task_json(report_task(state, id, *ok, message)));
                  },
              .execution = Execution::kWorker,
              .access = Access::kAnyone,
              .summary = "Test mode: report an agent task's outcome as the agent would.",
              .tag = "test",
              .documented = false,
              .idempotency_key = false});
}

}  // namespace gpurent::http
