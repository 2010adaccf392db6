// Outbound HTTP for deliveries, behind an interface so the worker's logic is tested without
// a network. The implementation (http_sender.cpp) is the webhooks' only Beast code.
#pragma once

#include "webhooks/webhook_url.h"

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace gpurent::webhooks {

struct SendResult {
  std::optional<int> status;  // the receiver's HTTP status, when it answered
  std::string error;          // why there is no status: refused address, timeout, TLS, …
};

class Sender {
 public:
  virtual ~Sender() = default;
  // POSTs `body` with `headers` to `url` and reads the status line (the body is read and
  // dropped, up to a small limit). Never follows redirects. The whole exchange, resolving
  // and connecting included, is bounded by `timeout`. Never throws for network errors.
  virtual SendResult post(const WebhookUrl& url, const std::string& body,
                          const std::vector<std::pair<std::string, std::string>>& headers,
                          std::chrono::milliseconds timeout) = 0;
};

struct HttpSenderOptions {
  // Lets deliveries reach loopback, private and link-local addresses (tests, a private
  // deployment). Off, every address a name resolves to is checked and internal ones refused.
  bool allow_internal = false;
  std::string user_agent = "gpurent-webhooks";
};

// Plain HTTP and HTTPS (TLS verified against the system's CA store and the URL's host name).
std::unique_ptr<Sender> make_http_sender(HttpSenderOptions options);

}  // namespace gpurent::webhooks
