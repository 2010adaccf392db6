// The API as the CLI's commands see it: JSON in, JSON out, the token attached, failures
// retried by the rules of retry.h, and errors turned into ApiError with the contract's code.
#pragma once

#include "cli/http_transport.h"
#include "cli/retry.h"

#include <nlohmann/json.hpp>

#include <chrono>
#include <functional>
#include <ostream>
#include <stdexcept>
#include <string>

namespace gpurent::cli {

// The API refused (4xx/5xx after retries) or could not be reached; exit_code() is the
// CLI's exit code for it.
class ApiError : public std::runtime_error {
 public:
  ApiError(int status, std::string code, const std::string& message, nlohmann::json details,
           int exit_code)
      : std::runtime_error(message),
        status_(status),
        code_(std::move(code)),
        details_(std::move(details)),
        exit_code_(exit_code) {}
  int status() const { return status_; }  // 0 when no answer came
  const std::string& code() const { return code_; }
  const nlohmann::json& details() const { return details_; }
  int exit_code() const { return exit_code_; }

 private:
  int status_;
  std::string code_;
  nlohmann::json details_;
  int exit_code_;
};

struct ApiResponse {
  int status = 0;
  std::string body;
  HttpResponse raw;
  nlohmann::json json() const;  // the body parsed; ApiError when it is not JSON
};

struct ClientHooks {
  std::function<void(std::chrono::milliseconds)> sleep;  // how to wait between attempts
  std::function<double()> random01;                      // jitter source
};

// Real sleeping and a random jitter.
ClientHooks default_hooks();

// A fresh Idempotency-Key: "gpurent-cli-" and 128 random bits in hex.
std::string new_idempotency_key();

class ApiClient {
 public:
  // `log` receives one line per retry (never the token); `idempotency_key` is the command
  // invocation's key: every POST of this client carries it (a second, different POST in
  // one invocation gets it with a suffix, so the server does not take it for a reuse).
  ApiClient(Transport& transport, std::string token, RetryPolicy policy, std::ostream& log,
            std::string idempotency_key, ClientHooks hooks = default_hooks());

  ApiResponse get(const std::string& target,
                  std::chrono::milliseconds read_timeout = std::chrono::seconds(30));
  ApiResponse post(const std::string& target, const nlohmann::json& body,
                   std::chrono::milliseconds read_timeout = std::chrono::seconds(30));
  // PUT replaces a resource with the body: the same request twice has one effect, so it is
  // retried as a GET is, without an Idempotency-Key.
  ApiResponse put(const std::string& target, const nlohmann::json& body);
  ApiResponse del(const std::string& target);

  // How many attempts the last request took (tests and the progress line).
  int last_attempts() const { return last_attempts_; }

 private:
  ApiResponse send(HttpRequest request, bool idempotent_post);

  Transport& transport_;
  std::string token_;
  RetryPolicy policy_;
  std::ostream& log_;
  std::string idempotency_key_;
  std::string first_post_;  // method+target+body of the first POST: its key is the plain one
  int posts_ = 0;
  ClientHooks hooks_;
  int last_attempts_ = 0;
};

// A query parameter's value percent-encoded (RFC 3986 unreserved characters kept).
std::string url_encode(const std::string& value);

}  // namespace gpurent::cli
