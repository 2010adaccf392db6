// IdempotencyGuard: lock the key, run the handler once, seal and store its response, all in
// one transaction.
#include "api/idempotency.h"

#include "api/responses.h"
#include "core/crypto.h"
#include "core/error.h"
#include "core/log.h"

#include <nlohmann/json.hpp>

#include <array>

namespace gpurent::http {
namespace {

constexpr std::size_t kMaxKeyLength = 255;

// Responses carry their content type as a pointer to static storage; a replay maps the
// stored text back to one of the types handlers produce.
std::string_view static_content_type(std::string_view stored) {
  static constexpr std::array<std::string_view, 4> kKnown = {
      "application/json", "text/plain; charset=utf-8", "text/csv; charset=utf-8",
      "application/octet-stream"};
  for (auto known : kKnown) {
    if (known == stored) return known;
  }
  return "application/octet-stream";
}

void check_key(std::string_view key) {
  bool ok = !key.empty() && key.size() <= kMaxKeyLength;
  for (char c : key) ok = ok && c > 0x20 && c < 0x7f;
  if (!ok) {
    throw Error::invalid_field("Idempotency-Key", "must be 1 to 255 visible ASCII characters");
  }
}

std::string request_hash(const Request& req) {
  std::string material(method_name(req.method));
  material.append("\n").append(req.target).append("\n").append(req.body);
  return crypto::sha256_hex(material);
}

// Domain-separated, so the stored hash tells nothing about the sealing key.
std::string key_hash(std::string_view key) {
  std::string material("gpurent idempotency id\n");
  material.append(key);
  return crypto::sha256_hex(material);
}
std::string sealing_key(const identity::IdempotencyKeyRef& ref, std::string_view key) {
  std::string material("gpurent idempotency seal\n");
  material.append(ref.scope).append("\n").append(key);
  return crypto::sha256_raw(material);
}
std::string sealing_aad(const identity::IdempotencyKeyRef& ref, const std::string& hash) {
  std::string aad(ref.scope);
  aad.append("\n").append(ref.key_hash).append("\n").append(hash);
  return aad;
}

std::string envelope(const Response& r) {
  nlohmann::json headers = nlohmann::json::array();
  for (const auto& [name, value] : r.headers) {
    // Never replay a credential, and let the replay carry its own request id.
    if (name == "Set-Cookie" || name == "X-Request-Id") continue;
    headers.push_back({name, value});
  }
  nlohmann::json e = {
      {"content_type", r.content_type}, {"headers", std::move(headers)}, {"body", r.body_view()}};
  return e.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

Response from_envelope(int status, const std::string& text) {
  auto e = nlohmann::json::parse(text);
  Response r;
  r.status = status;
  r.content_type = static_content_type(e.at("content_type").get<std::string>());
  r.body = e.at("body").get<std::string>();
  for (const auto& h : e.at("headers")) r.set_header(h.at(0), h.at(1));
  r.set_header("Idempotent-Replayed", "true");
  return r;
}

Response still_running() {
  Response r = error_response(ErrorCode::kConflict,
                              "A request with this Idempotency-Key is still running; retry later.");
  r.set_header("Retry-After", "1");
  return r;
}

}  // namespace

bool is_replayable_status(int status) {
  if (status >= 500) return false;
  return status != 401 && status != 403 && status != 409 && status != 429;
}

Handler IdempotencyGuard::wrap(const Route& route) {
  // Keys belong to a caller, so a route anyone may call without credentials has none.
  if (route.method != Method::kPost || route.execution != Execution::kWorker ||
      !route.idempotency_key || route.access == Access::kAnyone) {
    return route.handler;
  }
  return [this, inner = route.handler](const Request& req, const Principal& p) {
    return run(inner, req, p);
  };
}

namespace {

// A response that must leave no trace: the unit rolls back and the caller gets it as it is.
struct Discard {
  Response response;
};

}  // namespace

Response IdempotencyGuard::run(const Handler& inner, const Request& req, const Principal& p) {
  std::string_view key = req.header("Idempotency-Key");
  if (key.empty()) return inner(req, p);
  check_key(key);
  // The pipeline has authenticated the caller already: an unauthenticated or forbidden
  // retry was refused before reaching the key.
  identity::IdempotencyKeyRef ref{.scope = p.org_id.value_or("-") + "/" + p.user.id,
                                  .key_hash = key_hash(key),
                                  .org_id = p.org_id,
                                  .user_id = p.user.id};
  std::string hash = request_hash(req);
  std::string seal_key = sealing_key(ref, key);

  // The work and its stored response in one unit: they commit together or not at all, so
  // a retry after any failure — a 503, a lost connection, a COMMIT in doubt, a crash —
  // finds either the first response or no trace of the first attempt, and then runs once.
  std::optional<Error> refused;  // a replayable error the handler threw
  try {
    Response response = pool_.unit("idempotent_request", [&](Tx& tx) -> Response {
      refused.reset();
      if (!store_.lock(tx, ref)) throw Discard{running_response()};
      if (auto stored = store_.find(tx, ref)) return replay(*stored, ref, hash, seal_key);
      ran_.fetch_add(1, std::memory_order_relaxed);
      Response r;
      try {
        r = inner(req, p);
      } catch (const Error& e) {
        // The handler's failure undoes everything it did (a 404 after a change must not
        // commit the change); a replayable refusal is stored on its own below.
        if (!is_replayable_status(status_for(e.code()))) throw;
        refused = e;
        throw Discard{};
      }
      // Outcomes of the moment (409, 429, …) must not be replayed, and what produced them
      // leaves no trace either: the next retry runs afresh.
      if (!is_replayable_status(r.status)) throw Discard{std::move(r)};
      keep(tx, ref, hash, seal_key, r);
      return r;
    });
    maybe_purge();
    return response;
  } catch (Discard& d) {
    if (!refused) return std::move(d.response);
  }
  // The refusal is stored in a unit of its own, with the key's lock taken again: if a retry
  // ran meanwhile and stored its outcome, that one is the answer.
  return pool_.unit("idempotent_refusal", [&](Tx& tx) -> Response {
    if (!store_.lock(tx, ref)) return running_response();
    if (auto stored = store_.find(tx, ref)) return replay(*stored, ref, hash, seal_key);
    Response r = error_response(*refused);
    keep(tx, ref, hash, seal_key, r);
    return r;
  });
}

void IdempotencyGuard::add_metrics(Metrics& metrics) const {
  metrics.add_collector([this](std::string& out) {
    append_family(out, "gpurent_idempotent_requests_total", "counter",
                  "Requests with an Idempotency-Key, by outcome: ran, replayed, or busy (the "
                  "first is still running).");
    auto line = [&out](const char* outcome, std::uint64_t n) {
      out.append("gpurent_idempotent_requests_total{outcome=\"")
          .append(outcome)
          .append("\"} ")
          .append(std::to_string(n))
          .append("\n");
    };
    line("ran", ran_.load(std::memory_order_relaxed));
    line("replayed", replayed_.load(std::memory_order_relaxed));
    line("busy", busy_.load(std::memory_order_relaxed));
  });
}

Response IdempotencyGuard::running_response() const {
  busy_.fetch_add(1, std::memory_order_relaxed);
  // Sleeping here would hold a worker for as long as the first request runs, and a few
  // retries would stall all database work: the server calls again later instead, with
  // no thread held, and sends the 409 once the wait is over.
  Response r = still_running();
  r.call_again = CallAgain{.delay = std::chrono::milliseconds(20),
                           .max_delay = std::chrono::milliseconds(200),
                           .patience = options_.wait};
  return r;
}

Response IdempotencyGuard::replay(const identity::StoredResponse& stored,
                                  const identity::IdempotencyKeyRef& ref, const std::string& hash,
                                  const std::string& seal_key) const {
  if (stored.request_hash != hash) {
    throw Error(ErrorCode::kIdempotencyKeyReused,
                "This Idempotency-Key was used for a different request.");
  }
  auto text = crypto::open(seal_key, stored.response, sealing_aad(ref, hash));
  if (!text) throw Error(ErrorCode::kInternal, "A stored idempotent response is unreadable.");
  replayed_.fetch_add(1, std::memory_order_relaxed);
  return from_envelope(stored.status, *text);
}

void IdempotencyGuard::keep(Tx& tx, const identity::IdempotencyKeyRef& ref, const std::string& hash,
                            const std::string& seal_key, const Response& response) {
  std::string sealed = crypto::seal(seal_key, envelope(response), sealing_aad(ref, hash));
  if (!store_.store(tx, ref, hash, response.status, sealed)) {
    // Only a writer that skipped the key's lock could get here; rolling back keeps the
    // work from committing without its record.
    throw Error(ErrorCode::kConflict,
                "A request with this Idempotency-Key finished at the same time; retry to get "
                "its answer.");
  }
}

void IdempotencyGuard::maybe_purge() {
  auto now = std::chrono::steady_clock::now().time_since_epoch().count();
  auto last = last_purge_ns_.load();
  auto every =
      std::chrono::duration_cast<std::chrono::steady_clock::duration>(options_.purge_every).count();
  if (now - last < every || !last_purge_ns_.compare_exchange_strong(last, now)) return;
  try {
    int n = pool_.transact("idempotency_purge", [&](Tx& tx) { return store_.purge_expired(tx); });
    if (n > 0) log::info("deleted {} expired idempotency keys", n);
  } catch (const std::exception& e) {
    log::warn("purging expired idempotency keys failed: {}", e.what());
  }
}

}  // namespace gpurent::http
