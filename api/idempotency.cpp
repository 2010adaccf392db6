// IdempotencyGuard: claim the key, run the handler once, seal and store its response.
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

  auto claim =
      pool_.transact("idempotency_claim", [&](Tx& tx) { return store_.claim(tx, ref, hash); });
  using Kind = identity::IdempotencyClaim::Kind;
  if (claim.kind == Kind::kMismatch) {
    throw Error(ErrorCode::kIdempotencyKeyReused,
                "This Idempotency-Key was used for a different request.");
  }
  if (claim.kind == Kind::kDone) {
    auto text = crypto::open(seal_key, claim.response, sealing_aad(ref, hash));
    if (!text) throw Error(ErrorCode::kInternal, "A stored idempotent response is unreadable.");
    return from_envelope(claim.status, *text);
  }
  if (claim.kind == Kind::kRunning) {
    // Sleeping here would hold a worker for as long as the first request runs, and a few
    // retries would stall all database work: the server calls again later instead, with
    // no thread held, and sends the 409 once the wait is over.
    Response r = still_running();
    r.call_again = CallAgain{.delay = std::chrono::milliseconds(20),
                             .max_delay = std::chrono::milliseconds(200),
                             .patience = options_.wait};
    return r;
  }

  Response response;
  try {
    response = inner(req, p);
  } catch (const Error& e) {
    if (status_for(e.code()) >= 500) {
      release_quietly(ref, hash);
      throw;
    }
    response = error_response(e);
  } catch (...) {
    // The handler's own transaction rolled back: let a retry run it again.
    release_quietly(ref, hash);
    throw;
  }
  if (is_replayable_status(response.status)) {
    std::string sealed = crypto::seal(seal_key, envelope(response), sealing_aad(ref, hash));
    bool stored = pool_.transact("idempotency_complete", [&](Tx& tx) {
      return store_.complete(tx, ref, hash, response.status, sealed);
    });
    if (!stored) {
      log::warn("idempotency claim lost before completion; the response was not stored");
    }
  } else {
    release_quietly(ref, hash);
  }
  maybe_purge();
  return response;
}

// A release that fails leaves the claim to expire with its lease; the caller's own outcome
// matters more than the bookkeeping.
void IdempotencyGuard::release_quietly(const identity::IdempotencyKeyRef& ref,
                                       const std::string& hash) {
  try {
    pool_.transact("idempotency_release", [&](Tx& tx) { store_.release(tx, ref, hash); });
  } catch (const std::exception& e) {
    log::warn("releasing an idempotency claim failed: {}", e.what());
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
