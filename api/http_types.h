// Plain request/response types that handlers see; the Beast layer converts to and from them,
// so no handler includes Beast or Asio.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gpurent::http {

enum class Method { kGet, kHead, kPost, kPut, kPatch, kDelete, kOptions, kOther };

Method parse_method(std::string_view name);

// Whether an X-Forwarded-Proto value says https. A chain of proxies may append one value
// each ("https, http"); the last is what the peer itself was reached by, so only it counts.
// Case and spaces around it are ignored.
bool forwarded_proto_is_https(std::string_view value);
std::string_view method_name(Method m);

// Looks up request headers without copying them out of the transport's buffer.
class HeaderSource {
 public:
  virtual ~HeaderSource() = default;
  // Case-insensitive; empty when absent.
  virtual std::string_view get(std::string_view name) const = 0;
};

struct Request {
  Method method = Method::kGet;
  std::string_view target;  // as received: path and query
  std::string_view path;    // target up to '?'
  std::string_view query;   // after '?', without it
  std::string_view body;
  std::string_view request_id;
  std::string_view remote_ip;
  // The client reached the platform over TLS: this listener's own HTTPS, or a trusted proxy
  // (trusted_proxies) that says so in X-Forwarded-Proto; any other peer's header is ignored,
  // as its X-Forwarded-For is.
  bool secure = false;
  const HeaderSource* headers = nullptr;
  std::vector<std::pair<std::string, std::string>> path_params;  // filled by the router

  std::string_view header(std::string_view name) const {
    return headers ? headers->get(name) : std::string_view();
  }
  // The first value of a query parameter, percent-decoded.
  std::optional<std::string> query_param(std::string_view name) const;
  // A path parameter captured by the route pattern ({id}); empty when absent.
  std::string_view path_param(std::string_view name) const;
};

// A worker handler's "not yet": it cannot answer until something running elsewhere ends (a
// retry waiting for the first request with its Idempotency-Key), and waiting would hold a
// worker. The server calls the handler again after `delay`, then after twice that, up to
// `max_delay` (the last pause cut to end at the deadline, where it is called once more),
// holding no thread in between, until it answers without this or `patience` has passed
// since the first such answer; then the response that carries it is sent as it is (a
// long-poll's "the rental as it is now"). At shutdown the request is answered 503 unavailable
// instead. Inline routes never set it.
struct CallAgain {
  std::chrono::milliseconds delay{20};
  std::chrono::milliseconds max_delay{200};
  std::chrono::milliseconds patience{0};
};

struct Response {
  int status = 200;
  // Points to static storage (a literal or a table entry); never to a temporary.
  std::string_view content_type = "application/json";
  std::string body;
  // A body shared between responses (cached documents); used instead of `body` when set.
  std::shared_ptr<const std::string> shared_body;
  std::vector<std::pair<std::string, std::string>> headers;
  bool close = false;  // close the connection after this response
  // Set: the handler is not done (see CallAgain); the rest is what is sent if the wait ends
  // without another answer.
  std::optional<CallAgain> call_again;

  std::string_view body_view() const { return shared_body ? *shared_body : body; }
  void set_header(std::string name, std::string value) {
    headers.emplace_back(std::move(name), std::move(value));
  }
};

// Percent-decodes a URL component; nullopt on a malformed escape or a NUL byte.
std::optional<std::string> percent_decode(std::string_view s, bool plus_as_space);

// The standard reason phrase for a status code.
std::string_view reason_phrase(int status);

}  // namespace gpurent::http
