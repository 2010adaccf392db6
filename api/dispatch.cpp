// Handler invocation with exception-to-response mapping and access logging.
#include "api/dispatch.h"

#include "api/auth.h"
#include "api/request_input.h"
#include "api/responses.h"
#include "core/blocking.h"
#include "core/db_errors.h"
#include "core/log.h"

#include <pqxx/except>

#include <optional>

namespace gpurent::http {
namespace {

// A database failure that escaped its handler. A constraint the request collided with
// (a value already taken, an overlapping booking, a row missing or still referenced) is the
// caller's conflict; a transaction that kept losing races after PgPool's retries is load,
// worth retrying later. A check or not-null violation is input the edge should have
// refused: a bug, left to the logged 500.
std::optional<Response> database_failure_response(const Route& route, const Request& request,
                                                  const std::exception& e) {
  if (auto v = ConstraintViolation::from(e)) {
    const char* message = nullptr;
    switch (v->kind()) {
      case DbFailure::kUniqueViolation:
        message = "This conflicts with an existing record.";
        break;
      case DbFailure::kExclusionViolation:
        message = "This overlaps with an existing booking of the same resource.";
        break;
      case DbFailure::kForeignKeyViolation:
        message =
            "This refers to something that does not exist, or something else still refers to it.";
        break;
      default:
        return std::nullopt;
    }
    log::warn("{} {}: {} ({})", method_name(request.method), route.pattern, v->what(),
              db_failure_name(v->kind()));
    nlohmann::json details = nlohmann::json::object();
    if (!v->constraint().empty()) details["constraint"] = v->constraint();
    return error_response(Error(ErrorCode::kConflict, message, std::move(details)));
  }
  // A database that failed to answer, on a path that did not go through PgPool's mapping:
  // 503 with Retry-After like every outage, never a 500. A loss during COMMIT is in doubt.
  if (dynamic_cast<const pqxx::in_doubt_error*>(&e)) {
    log::warn("{} {}: {} (in doubt)", method_name(request.method), route.pattern, e.what());
    return error_response(Error(ErrorCode::kUnavailable,
                                "The database connection was lost while committing, so whether "
                                "the change was made is unknown.",
                                {{"outcome", "unknown"}}));
  }
  if (dynamic_cast<const pqxx::broken_connection*>(&e)) {
    log::warn("{} {}: {} (connection lost)", method_name(request.method), route.pattern, e.what());
    return error_response(ErrorCode::kUnavailable, "The database connection was lost; try again.");
  }
  if (auto* sql = dynamic_cast<const pqxx::sql_error*>(&e)) {
    if (auto why = unavailable_reason(sql->sqlstate())) {
      log::warn("{} {}: {} ({})", method_name(request.method), route.pattern, e.what(),
                sql->sqlstate());
      return error_response(ErrorCode::kUnavailable, *why);
    }
  }
  DbFailure failure = classify(e);
  if (failure != DbFailure::kSerializationFailure && failure != DbFailure::kDeadlock) {
    return std::nullopt;
  }
  log::warn("{} {}: {} ({})", method_name(request.method), route.pattern, e.what(),
            db_failure_name(failure));
  Response r = error_response(ErrorCode::kUnavailable,
                              "The database is busy with conflicting changes; try again.");
  return r;
}

}  // namespace

Response invoke(const Route& route, const Request& request) {
  log::RequestScope scope(request.request_id);
  try {
    // Before any handler, so every route, including those added later, refuses text it
    // cannot use with the same 400.
    check_request_input(route, request);
    if (route.entry) return route.entry(request);
    // A route never decorated (unit tests of the router and the edge checks): no pipeline,
    // so nobody is signed in.
    return route.handler(request, Principal{});
  } catch (const WouldBlock&) {
    throw;  // an inline attempt that must run on a worker instead (core/blocking.h)
  } catch (const Error& e) {
    if (e.code() == ErrorCode::kInternal)
      log::error("{} {}: {}", method_name(request.method), route.pattern, e.what());
    return error_response(e);
  } catch (const std::exception& e) {
    if (auto r = database_failure_response(route, request, e)) return std::move(*r);
    log::error("{} {} failed: {}", method_name(request.method), route.pattern, e.what());
    return error_response(ErrorCode::kInternal, "The server failed to handle the request.");
  } catch (...) {
    // Whatever was thrown, the caller gets an answer: a worker that ends without one leaves
    // the client waiting until its connection times out.
    log::error("{} {} failed with a non-standard exception", method_name(request.method),
               route.pattern);
    return error_response(ErrorCode::kInternal, "The server failed to handle the request.");
  }
}

Response not_found_response() {
  return error_response(ErrorCode::kNotFound, "No such resource.");
}

Response method_not_allowed_response(const std::string& allow) {
  Response r =
      error_response(ErrorCode::kMethodNotAllowed,
                     "This resource does not accept that method; it accepts " + allow + ".");
  r.set_header("Allow", allow);
  return r;
}

void log_access(const Request& request, int status, std::chrono::nanoseconds latency, bool quiet) {
  auto level = quiet ? log::Level::kDebug : log::Level::kInfo;
  if (!log::enabled(level)) return;
  log::RequestScope scope(request.request_id);
  // The target's query may carry ids but never secrets: credentials travel in headers.
  log::at(level, "{} {} {} {:.3f}ms {}", method_name(request.method), request.target, status,
          static_cast<double>(latency.count()) / 1e6, request.remote_ip);
}

}  // namespace gpurent::http
