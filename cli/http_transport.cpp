// The CLI's HTTP/1.1 client over Boost.Beast, plain or TLS: the only CLI file that includes
// Beast and Asio. One connection per request ("Connection: close"): the CLI sends a handful
// of requests per run, and a fresh connection keeps retries simple — an attempt never
// inherits a connection a proxy or load balancer has silently dropped.
//
// Every step runs asynchronously on a private io_context with a deadline (Beast's
// tcp_stream timers only apply to asynchronous operations), and the caller blocks until it
// is done: resolve and connect within the connect timeout, the TLS handshake and the write
// within it too, the whole answer within the request's read timeout.
#include "cli/http_transport.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <boost/beast/version.hpp>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include <algorithm>
#include <cctype>
#include <optional>

namespace gpurent::cli {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
namespace ssl = net::ssl;
using tcp = net::ip::tcp;

// Answers larger than this are refused: an invoice's CSV is the largest thing the API sends.
constexpr std::uint64_t kMaxBodyBytes = 64ull << 20;

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

// Runs the io_context until the one pending operation has finished; its error code.
beast::error_code run_one(net::io_context& ioc, const std::optional<beast::error_code>& result) {
  ioc.restart();
  ioc.run();
  return result.value_or(beast::error_code(net::error::operation_aborted));
}

class BeastTransport : public Transport {
 public:
  BeastTransport(Endpoint endpoint, TransportOptions options)
      : endpoint_(std::move(endpoint)), options_(std::move(options)) {}

  HttpResponse send(const HttpRequest& request) override {
    net::io_context ioc;
    auto endpoints = resolve(ioc);
    http::request<http::string_body> req{verb_of(request.method),
                                         endpoint_.base_path + request.target, 11};
    req.set(http::field::host, host_header());
    req.set(http::field::user_agent, "gpurent-cli/" GPURENT_VERSION);
    req.set(http::field::connection, "close");
    for (const auto& [name, value] : request.headers) req.set(name, value);
    if (!request.body.empty() || request.method == "POST") {
      req.body() = request.body;
      req.prepare_payload();
    }
    if (endpoint_.tls) {
      ssl::context ctx = tls_context();
      beast::ssl_stream<beast::tcp_stream> stream(ioc, ctx);
      // SNI, and the name the certificate must carry.
      if (!SSL_set_tlsext_host_name(stream.native_handle(), endpoint_.host.c_str())) {
        throw TransportError("cannot set the TLS server name for " + endpoint_.host);
      }
      if (!options_.insecure)
        stream.set_verify_callback(ssl::host_name_verification(endpoint_.host));
      connect(ioc, beast::get_lowest_layer(stream), endpoints);
      std::optional<beast::error_code> hs;
      beast::get_lowest_layer(stream).expires_after(options_.connect_timeout);
      stream.async_handshake(ssl::stream_base::client, [&](beast::error_code ec) { hs = ec; });
      if (auto ec = run_one(ioc, hs)) {
        bool rejected = ec.category() == net::error::get_ssl_category() &&
                        ERR_GET_REASON(ec.value()) == SSL_R_CERTIFICATE_VERIFY_FAILED;
        throw TransportError("TLS handshake with " + where() + " failed: " + ec.message(),
                             rejected);
      }
      auto response = exchange(ioc, stream, beast::get_lowest_layer(stream), req, request);
      // A polite close; the answer is complete whatever the server says to it.
      std::optional<beast::error_code> shut;
      beast::get_lowest_layer(stream).expires_after(std::chrono::seconds(2));
      stream.async_shutdown([&](beast::error_code ec) { shut = ec; });
      run_one(ioc, shut);
      return response;
    }
    beast::tcp_stream stream(ioc);
    connect(ioc, stream, endpoints);
    auto response = exchange(ioc, stream, stream, req, request);
    beast::error_code ignored;
    stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
    return response;
  }

 private:
  std::string where() const { return endpoint_.host + ":" + endpoint_.port; }

  std::string host_header() const {
    bool v6 = endpoint_.host.find(':') != std::string::npos;
    std::string host = v6 ? "[" + endpoint_.host + "]" : endpoint_.host;
    bool default_port = endpoint_.port == (endpoint_.tls ? "443" : "80");
    return default_port ? host : host + ":" + endpoint_.port;
  }

  static http::verb verb_of(const std::string& method) {
    auto v = http::string_to_verb(method);
    if (v == http::verb::unknown) throw TransportError("unknown HTTP method " + method);
    return v;
  }

  ssl::context tls_context() const {
    ssl::context ctx(ssl::context::tls_client);
    ctx.set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                    ssl::context::no_sslv3 | ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1);
    if (options_.insecure) {
      ctx.set_verify_mode(ssl::verify_none);
      return ctx;
    }
    ctx.set_verify_mode(ssl::verify_peer);
    beast::error_code ec;
    if (!options_.ca_file.empty()) {
      ctx.load_verify_file(options_.ca_file, ec);
      if (ec) throw TransportError("cannot read CA file " + options_.ca_file + ": " + ec.message());
    } else {
      ctx.set_default_verify_paths(ec);
      if (ec) throw TransportError("cannot load the system's CA certificates: " + ec.message());
    }
    return ctx;
  }

  tcp::resolver::results_type resolve(net::io_context& ioc) {
    tcp::resolver resolver(ioc);
    std::optional<beast::error_code> done;
    tcp::resolver::results_type results;
    resolver.async_resolve(endpoint_.host, endpoint_.port,
                           [&](beast::error_code ec, tcp::resolver::results_type r) {
                             done = ec;
                             results = std::move(r);
                           });
    // The resolver has no timer of its own: a deadline cancels it.
    net::steady_timer timer(ioc, options_.connect_timeout);
    timer.async_wait([&](beast::error_code ec) {
      if (!ec) resolver.cancel();
    });
    ioc.restart();
    ioc.run_one();  // the lookup or the deadline, whichever comes first
    timer.cancel();
    resolver.cancel();
    ioc.run();
    if (!done || *done) {
      throw TransportError("cannot resolve " + endpoint_.host + ": " +
                           (done ? done->message() : std::string("timed out")));
    }
    return results;
  }

  void connect(net::io_context& ioc, beast::tcp_stream& stream,
               const tcp::resolver::results_type& endpoints) {
    std::optional<beast::error_code> done;
    stream.expires_after(options_.connect_timeout);
    stream.async_connect(endpoints, [&](beast::error_code ec, const tcp::endpoint&) { done = ec; });
    if (auto ec = run_one(ioc, done)) {
      throw TransportError("cannot connect to " + where() + ": " + ec.message());
    }
  }

  template <typename Stream>
  HttpResponse exchange(net::io_context& ioc, Stream& stream, beast::tcp_stream& lowest,
                        http::request<http::string_body>& req, const HttpRequest& request) {
    std::optional<beast::error_code> wrote;
    lowest.expires_after(options_.connect_timeout);
    http::async_write(stream, req, [&](beast::error_code ec, std::size_t) { wrote = ec; });
    if (auto ec = run_one(ioc, wrote)) {
      throw TransportError("sending to " + where() + " failed: " + ec.message());
    }
    beast::flat_buffer buffer;
    http::response_parser<http::string_body> parser;
    parser.body_limit(kMaxBodyBytes);
    parser.header_limit(64 * 1024);
    std::optional<beast::error_code> read;
    lowest.expires_after(request.read_timeout);
    http::async_read(stream, buffer, parser, [&](beast::error_code ec, std::size_t) { read = ec; });
    if (auto ec = run_one(ioc, read)) {
      if (ec == beast::error::timeout) {
        throw TransportError("no answer from " + where() + " within " +
                             std::to_string(request.read_timeout.count() / 1000) + " s");
      }
      throw TransportError("the connection to " + where() +
                           " ended before an answer: " + ec.message());
    }
    auto& res = parser.get();
    HttpResponse out;
    out.status = static_cast<int>(res.result_int());
    for (const auto& field : res) {
      out.headers.emplace_back(lower(std::string(field.name_string())), std::string(field.value()));
    }
    out.body = std::move(res.body());
    return out;
  }

  Endpoint endpoint_;
  TransportOptions options_;
};

}  // namespace

std::unique_ptr<Transport> make_http_transport(const Endpoint& endpoint,
                                               const TransportOptions& options) {
  return std::make_unique<BeastTransport>(endpoint, options);
}

}  // namespace gpurent::cli
