// The CLI's API client: attaches the token, retries what is safe to retry, and turns an
// error answer into ApiError with the exit code it deserves.
#include "cli/api_client.h"

#include "cli/exit_codes.h"

#include <openssl/rand.h>

#include <cctype>
#include <random>
#include <thread>

namespace gpurent::cli {

nlohmann::json ApiResponse::json() const {
  auto parsed = nlohmann::json::parse(body, nullptr, false);
  if (parsed.is_discarded()) {
    throw ApiError(status, "invalid_response", "The server's answer is not JSON.", nullptr,
                   kExitServer);
  }
  return parsed;
}

ClientHooks default_hooks() {
  return {.sleep = [](std::chrono::milliseconds d) { std::this_thread::sleep_for(d); },
          .random01 =
              [] {
                static std::mt19937_64 engine{std::random_device{}()};
                return std::uniform_real_distribution<double>(0.0, 1.0)(engine);
              }};
}

std::string new_idempotency_key() {
  unsigned char bytes[16];
  if (RAND_bytes(bytes, sizeof bytes) != 1) {
    std::random_device rd;
    for (auto& b : bytes) b = static_cast<unsigned char>(rd());
  }
  static const char* hex = "0123456789abcdef";
  std::string out = "gpurent-cli-";
  for (unsigned char b : bytes) {
    out += hex[b >> 4];
    out += hex[b & 15];
  }
  return out;
}

std::string url_encode(const std::string& value) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : value) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

ApiClient::ApiClient(Transport& transport, std::string token, RetryPolicy policy, std::ostream& log,
                     std::string idempotency_key, ClientHooks hooks)
    : transport_(transport),
      token_(std::move(token)),
      policy_(policy),
      log_(log),
      idempotency_key_(std::move(idempotency_key)),
      hooks_(std::move(hooks)) {}

ApiResponse ApiClient::get(const std::string& target, std::chrono::milliseconds read_timeout) {
  HttpRequest r{.method = "GET", .target = target, .read_timeout = read_timeout};
  // A long-poll may legitimately take its whole timeout: the read waits a little longer.
  return send(std::move(r), false);
}

ApiResponse ApiClient::post(const std::string& target, const nlohmann::json& body,
                            std::chrono::milliseconds read_timeout) {
  HttpRequest r{
      .method = "POST", .target = target, .body = body.dump(), .read_timeout = read_timeout};
  r.headers.emplace_back("Content-Type", "application/json");
  // One key per invocation; only a second, different POST needs a key of its own.
  std::string signature = target + "\n" + r.body;
  std::string key = idempotency_key_;
  if (posts_ == 0) {
    first_post_ = signature;
  } else if (signature != first_post_) {
    key += "-" + std::to_string(posts_ + 1);
  }
  ++posts_;
  r.headers.emplace_back("Idempotency-Key", key);
  return send(std::move(r), true);
}

ApiResponse ApiClient::put(const std::string& target, const nlohmann::json& body) {
  HttpRequest r{.method = "PUT", .target = target, .body = body.dump()};
  r.headers.emplace_back("Content-Type", "application/json");
  return send(std::move(r), false);
}

ApiResponse ApiClient::del(const std::string& target) {
  return send(HttpRequest{.method = "DELETE", .target = target}, false);
}

ApiResponse ApiClient::send(HttpRequest request, bool idempotent_post) {
  request.headers.emplace_back("Accept", "application/json");
  if (!token_.empty()) request.headers.emplace_back("Authorization", "Bearer " + token_);
  const std::string what = request.method + " " + request.target;
  for (int attempt = 1;; ++attempt) {
    last_attempts_ = attempt;
    AttemptOutcome outcome{.has_idempotency_key = idempotent_post};
    HttpResponse response;
    std::string failure;
    std::string code;
    try {
      response = transport_.send(request);
      outcome.status = response.status;
      if (response.status >= 400) {
        auto parsed = nlohmann::json::parse(response.body, nullptr, false);
        if (parsed.is_object() && parsed.contains("error") && parsed["error"].is_object()) {
          code = parsed["error"].value("code", "");
        }
      }
      outcome.error_code = code;
    } catch (const TransportError& e) {
      outcome.transport_failed = true;
      outcome.tls_verification_failed = e.certificate_rejected();
      failure = e.what();
    }
    bool retry = attempt <= policy_.max_attempts - 1 && is_retryable(outcome);
    // A DELETE whose first attempt may have been carried out before its answer was lost
    // finds nothing to delete the second time: that is the outcome it wanted.
    if (request.method == "DELETE" && attempt > 1 && outcome.status == 404) {
      return ApiResponse{.status = 204, .body = "", .raw = response};
    }
    if (!retry) {
      if (outcome.transport_failed) {
        throw ApiError(
            0, "unreachable",
            failure + (attempt > 1 ? " (after " + std::to_string(attempt) + " attempts)" : ""),
            nullptr, kExitServer);
      }
      if (response.status >= 400) {
        auto parsed = nlohmann::json::parse(response.body, nullptr, false);
        std::string message = "The server answered " + std::to_string(response.status) + ".";
        nlohmann::json details = nullptr;
        if (parsed.is_object() && parsed.contains("error") && parsed["error"].is_object()) {
          message = parsed["error"].value("message", message);
          if (parsed["error"].contains("details")) details = parsed["error"]["details"];
        }
        throw ApiError(response.status, code, message, details,
                       exit_code_for(response.status, code));
      }
      return ApiResponse{.status = response.status, .body = response.body, .raw = response};
    }
    std::optional<std::chrono::milliseconds> after;
    if (!outcome.transport_failed) after = parse_retry_after(response.header("retry-after"));
    auto delay = retry_delay(policy_, attempt, after, hooks_.random01());
    if (!delay) {
      throw ApiError(response.status, code,
                     "The server asks to retry after " + response.header("retry-after") +
                         " s, longer than this command waits.",
                     nullptr, exit_code_for(response.status, code));
    }
    std::string reason = outcome.transport_failed ? failure
                                                  : "HTTP " + std::to_string(response.status) +
                                                        (code.empty() ? "" : " " + code);
    log_ << "gpurent: " << what << ": " << reason << "; retrying in "
         << (delay->count() + 50) / 100 / 10.0 << " s (attempt " << attempt + 1 << " of "
         << policy_.max_attempts << ")\n";
    log_.flush();
    hooks_.sleep(*delay);
  }
}

}  // namespace gpurent::cli
