// Outbound HTTP for deliveries, behind an interface so the worker's logic is tested without
// a network. The implementation (http_sender.cpp) is the webhooks' only Beast code.
#pragma once

#include "webhooks/webhook_url.h"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
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

// What a host name resolved to: addresses as text ("192.0.2.1", "2001:db8::1",
// "fe80::1%eth0"), or why there are none.
struct HostAddresses {
  std::vector<std::string> addresses;
  std::string error;  // empty when resolved
};
// Resolves a host name. It may block as long as it likes (a DNS server that never answers):
// the delivery stops waiting at its deadline, and the lookup's thread ends on its own time.
using HostResolver = std::function<HostAddresses(const std::string& host, std::uint16_t port)>;

// The host lookups running at once, at most `limit`: each has a thread of its own, which a
// hung resolver holds past the delivery's timeout, so without a bound a DNS outage would
// pile up a thread per delivery attempt. Thread-safe; shared by the sender, its lookups'
// threads and whoever reports it.
class ResolverSlots {
 public:
  explicit ResolverSlots(std::size_t limit);
  // A slot, or false when all are taken (counted in busy_total()).
  bool try_acquire();
  void release();
  std::size_t limit() const { return limit_; }
  std::size_t in_use() const;
  std::uint64_t busy_total() const;

 private:
  const std::size_t limit_;
  mutable std::mutex mutex_;
  std::size_t in_use_ = 0;
  std::uint64_t busy_ = 0;
};

struct HttpSenderOptions {
  // Lets deliveries reach loopback, private and link-local addresses (tests, a private
  // deployment). Off, every address a name resolves to is checked and internal ones refused.
  bool allow_internal = false;
  std::string user_agent = "gpurent-webhooks";
  // Lookups in flight at once (webhook_max_resolving). With none free, an attempt fails at
  // once with "resolver busy" (and is retried later, as any failed attempt is). None given:
  // 16 of the sender's own.
  std::shared_ptr<ResolverSlots> resolver_slots;
  // None given: the system's resolver (getaddrinfo).
  HostResolver resolve;
};

// Plain HTTP and HTTPS (TLS verified against the system's CA store and the URL's host name).
std::unique_ptr<Sender> make_http_sender(HttpSenderOptions options);

}  // namespace gpurent::webhooks
