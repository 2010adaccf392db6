// The delivery client: one blocking POST with Boost.Beast over TCP or TLS, every step within
// one deadline. The only translation unit of the webhooks that includes Beast and Asio.
#include "webhooks/sender.h"

#include "core/outbound_http.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>

#include <netdb.h>
#include <netinet/in.h>
#include <openssl/ssl.h>
#include <sys/socket.h>

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <memory>
#include <mutex>
#include <system_error>
#include <thread>

namespace gpurent::webhooks {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;

// What is read of a receiver's answer: its status matters, its body does not.
constexpr std::size_t kResponseBodyLimit = 64 * 1024;

IpAddress address_of(const asio::ip::address& a) {
  IpAddress out;
  if (a.is_v4()) {
    auto b = a.to_v4().to_bytes();
    out = IpAddress::v4_of(b[0], b[1], b[2], b[3]);
  } else {
    out.v6 = true;
    auto b = a.to_v6().to_bytes();
    std::copy(b.begin(), b.end(), out.bytes.begin());
  }
  return out;
}

struct Lookup {
  std::vector<tcp::endpoint> endpoints;
  std::string error;  // empty when resolved
};

// getaddrinfo, each address as text.
HostAddresses system_resolve(const std::string& host, std::uint16_t port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_ADDRCONFIG;
  addrinfo* found = nullptr;
  HostAddresses result;
  int rc = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found);
  if (rc != 0) {
    result.error = std::string("could not resolve the host: ") + ::gai_strerror(rc);
    return result;
  }
  for (addrinfo* a = found; a; a = a->ai_next) {
    if (a->ai_family == AF_INET) {
      const auto* in = reinterpret_cast<const sockaddr_in*>(a->ai_addr);
      result.addresses.push_back(asio::ip::address_v4(ntohl(in->sin_addr.s_addr)).to_string());
    } else if (a->ai_family == AF_INET6) {
      const auto* in6 = reinterpret_cast<const sockaddr_in6*>(a->ai_addr);
      asio::ip::address_v6::bytes_type bytes;
      std::memcpy(bytes.data(), in6->sin6_addr.s6_addr, bytes.size());
      result.addresses.push_back(asio::ip::address_v6(bytes, in6->sin6_scope_id).to_string());
    }
  }
  ::freeaddrinfo(found);
  return result;
}

// The resolver on a thread of its own, waited for until the deadline. Asio's resolver runs
// it on a thread that the io_context joins when destroyed, so a resolver that hangs (an
// unreachable DNS server) would hold the delivery, and the shutdown, past every timeout; a
// detached thread finishes on its own time instead, writing into state it shares. It holds
// one of `slots` until then: with none free the attempt fails at once.
Lookup resolve(const HostResolver& resolver, const std::shared_ptr<ResolverSlots>& slots,
               const std::string& host, std::uint16_t port, Clock::time_point deadline) {
  if (!slots->try_acquire()) {
    return {{},
            "resolver busy: " + std::to_string(slots->limit()) +
                " host lookups are running already, the most webhook_max_resolving allows"};
  }
  struct Shared {
    std::mutex mutex;
    std::condition_variable done_cv;
    bool done = false;
    HostAddresses result;
  };
  auto shared = std::make_shared<Shared>();
  try {
    std::thread([shared, slots, resolver, host, port] {
      HostAddresses result;
      try {
        result = resolver(host, port);
      } catch (const std::exception& e) {
        result.error = std::string("could not resolve the host: ") + e.what();
      }
      // Free before the answer is given: whoever waited may look up again at once.
      slots->release();
      std::lock_guard lock(shared->mutex);
      shared->result = std::move(result);
      shared->done = true;
      shared->done_cv.notify_all();
    }).detach();
  } catch (const std::system_error& e) {
    slots->release();
    return {{}, std::string("could not start a host lookup: ") + e.what()};
  }
  std::unique_lock lock(shared->mutex);
  if (!shared->done_cv.wait_until(lock, deadline, [&] { return shared->done; })) {
    return {{}, "timed out resolving the host"};
  }
  if (!shared->result.error.empty()) return {{}, shared->result.error};
  Lookup out;
  for (const auto& text : shared->result.addresses) {
    beast::error_code ec;
    auto address = asio::ip::make_address(text, ec);
    if (!ec) out.endpoints.emplace_back(address, port);
  }
  return out;
}

class HttpSender final : public Sender {
 public:
  explicit HttpSender(HttpSenderOptions options)
      : options_(std::move(options)), tls_(asio::ssl::context::tls_client) {
    if (!options_.resolver_slots) options_.resolver_slots = std::make_shared<ResolverSlots>(16);
    if (!options_.resolve) options_.resolve = system_resolve;
    tls_.set_default_verify_paths();
    tls_.set_verify_mode(asio::ssl::verify_peer);
    tls_.set_options(asio::ssl::context::default_workarounds | asio::ssl::context::no_sslv2 |
                     asio::ssl::context::no_sslv3 | asio::ssl::context::no_tlsv1 |
                     asio::ssl::context::no_tlsv1_1);
  }

  SendResult post(const WebhookUrl& url, const std::string& body,
                  const std::vector<std::pair<std::string, std::string>>& headers,
                  std::chrono::milliseconds timeout) override {
    try {
      return exchange(url, body, headers, Clock::now() + timeout);
    } catch (const std::exception& e) {
      return {std::nullopt, e.what()};
    }
  }

 private:
  static bool run_until(asio::io_context& ioc, const bool& done, Clock::time_point deadline) {
    return outbound_http::run_until(ioc, done, deadline);
  }

  SendResult exchange(const WebhookUrl& url, const std::string& body,
                      const std::vector<std::pair<std::string, std::string>>& headers,
                      Clock::time_point deadline) {
    asio::io_context ioc;
    // Resolve, then keep only addresses that may be reached; the connection goes to one of
    // exactly those, so a name cannot pass the check and then resolve elsewhere.
    auto lookup = resolve(options_.resolve, options_.resolver_slots, url.host, url.port, deadline);
    if (!lookup.error.empty()) return {std::nullopt, lookup.error};
    beast::error_code ec;
    std::vector<tcp::endpoint> allowed;
    bool refused = false;
    for (const auto& endpoint : lookup.endpoints) {
      if (!options_.allow_internal && is_internal_address(address_of(endpoint.address()))) {
        refused = true;
        continue;
      }
      allowed.push_back(endpoint);
    }
    if (allowed.empty()) {
      return {std::nullopt, refused ? "the host resolves to an internal address, which is refused"
                                    : "the host has no address"};
    }

    beast::tcp_stream tcp_stream(ioc);
    bool connected = false;
    tcp_stream.async_connect(allowed, [&](beast::error_code e, const tcp::endpoint&) {
      ec = e;
      connected = true;
    });
    if (!run_until(ioc, connected, deadline)) {
      tcp_stream.socket().close(ec);
      return {std::nullopt, "timed out connecting"};
    }
    if (ec) return {std::nullopt, "could not connect: " + ec.message()};

    http::request<http::string_body> req{http::verb::post, url.target, 11};
    req.set(http::field::host, url.host_is_ip && url.host.find(':') != std::string::npos
                                   ? "[" + url.host + "]"
                                   : url.host);
    req.set(http::field::user_agent, options_.user_agent);
    req.set(http::field::content_type, "application/json");
    req.set(http::field::connection, "close");
    for (const auto& [name, value] : headers) req.set(name, value);
    req.body() = body;
    req.prepare_payload();

    if (!url.https) return talk(ioc, tcp_stream, req, deadline);

    beast::ssl_stream<beast::tcp_stream> tls(std::move(tcp_stream), tls_);
    if (!url.host_is_ip &&
        !SSL_set_tlsext_host_name(tls.native_handle(), const_cast<char*>(url.host.c_str()))) {
      return {std::nullopt, "could not set the TLS server name"};
    }
    tls.set_verify_callback(asio::ssl::host_name_verification(url.host));
    switch (outbound_http::handshake(ioc, tls, deadline, ec)) {
      case outbound_http::Handshake::kTimedOut:
        return {std::nullopt, "timed out in the TLS handshake"};
      case outbound_http::Handshake::kFailed:
        return {std::nullopt, "TLS handshake failed: " + ec.message()};
      case outbound_http::Handshake::kDone:
        break;
    }
    return talk(ioc, tls, req, deadline);
  }

  template <typename Stream>
  static SendResult talk(asio::io_context& ioc, Stream& stream,
                         http::request<http::string_body>& req, Clock::time_point deadline) {
    outbound_http::Exchange x;
    outbound_http::exchange(ioc, stream, req, deadline, kResponseBodyLimit, x);
    switch (x.ending) {
      case outbound_http::Ending::kWriteTimedOut:
        return {std::nullopt, "timed out sending the request"};
      case outbound_http::Ending::kWriteFailed:
        return {std::nullopt, "could not send the request: " + x.error.message()};
      case outbound_http::Ending::kReadTimedOut:
        return {std::nullopt, "timed out waiting for the response"};
      case outbound_http::Ending::kAnswered:
      case outbound_http::Ending::kReadFailed:
        break;
    }
    // A status line was read even when the body broke a limit: the status is the answer.
    if (x.parser.is_header_done()) {
      beast::error_code ignored;
      beast::get_lowest_layer(stream).socket().shutdown(tcp::socket::shutdown_both, ignored);
      return {static_cast<int>(x.parser.get().result_int()), ""};
    }
    return {std::nullopt, "no HTTP response: " + x.error.message()};
  }

  HttpSenderOptions options_;
  asio::ssl::context tls_;
};

}  // namespace

ResolverSlots::ResolverSlots(std::size_t limit) : limit_(std::max<std::size_t>(limit, 1)) {}

bool ResolverSlots::try_acquire() {
  std::lock_guard lock(mutex_);
  if (in_use_ >= limit_) {
    ++busy_;
    return false;
  }
  ++in_use_;
  return true;
}

void ResolverSlots::release() {
  std::lock_guard lock(mutex_);
  --in_use_;
}

std::size_t ResolverSlots::in_use() const {
  std::lock_guard lock(mutex_);
  return in_use_;
}

std::uint64_t ResolverSlots::busy_total() const {
  std::lock_guard lock(mutex_);
  return busy_;
}

std::unique_ptr<Sender> make_http_sender(HttpSenderOptions options) {
  return std::make_unique<HttpSender>(std::move(options));
}

}  // namespace gpurent::webhooks
