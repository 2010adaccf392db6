// Beast's TLS and WebSocket client for the agent: synchronous handshakes, then one io thread
// per channel, so a receive can wait with a timeout while another thread sends.
#include "agent/channel.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <boost/beast/websocket.hpp>
#include <boost/beast/websocket/ssl.hpp>

#include <openssl/ssl.h>

#include <condition_variable>
#include <deque>
#include <future>
#include <mutex>
#include <thread>

namespace gpurent::agent {

namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
namespace websocket = boost::beast::websocket;
namespace net = boost::asio;
namespace ssl = boost::asio::ssl;
using tcp = net::ip::tcp;

namespace {

// The listener's limit: a bigger message from the server is not one.
constexpr std::size_t kMaxMessageBytes = 256 * 1024;
constexpr std::size_t kMaxHttpBodyBytes = 64 * 1024;

std::unique_ptr<ssl::context> client_context(const std::string& ca_pem,
                                             const std::string& certificate_pem = "",
                                             const std::string& key_pem = "") {
  auto ctx = std::make_unique<ssl::context>(ssl::context::tls_client);
  ctx->set_options(ssl::context::no_sslv2 | ssl::context::no_sslv3 | ssl::context::no_tlsv1 |
                   ssl::context::no_tlsv1_1);
  beast::error_code ec;
  // Only the given CA: never the system's store.
  ctx->add_certificate_authority(net::buffer(ca_pem), ec);
  if (ec) throw ChannelError("the CA certificate is not usable: " + ec.message());
  ctx->set_verify_mode(ssl::verify_peer);
  if (!certificate_pem.empty()) {
    ctx->use_certificate(net::buffer(certificate_pem), ssl::context::pem, ec);
    if (!ec) ctx->use_private_key(net::buffer(key_pem), ssl::context::pem, ec);
    if (ec) throw ChannelError("the agent's certificate or key is not usable: " + ec.message());
  }
  return ctx;
}

// TCP and TLS to the URL's host, its certificate checked against that name.
template <typename SslStream>
void connect_tls(SslStream& stream, net::io_context& ioc, const ServerUrl& url,
                 std::chrono::seconds timeout) {
  beast::error_code ec;
  tcp::resolver resolver(ioc);
  auto endpoints = resolver.resolve(url.host, std::to_string(url.port), ec);
  if (ec) throw ChannelError("cannot resolve " + url.host + ": " + ec.message());
  auto& tcp_layer = beast::get_lowest_layer(stream);
  tcp_layer.expires_after(timeout);
  tcp_layer.connect(endpoints, ec);
  if (ec) throw ChannelError("cannot connect to " + url.host + ": " + ec.message());
  if (!SSL_set_tlsext_host_name(stream.native_handle(), url.host.c_str())) {
    throw ChannelError("cannot set the TLS server name " + url.host);
  }
  stream.set_verify_callback(ssl::host_name_verification(url.host));
  stream.handshake(ssl::stream_base::client, ec);
  if (ec) throw ChannelError("TLS with " + url.host + " failed: " + ec.message());
}

// The io thread runs every operation on the stream after the handshakes: TLS and WebSocket
// streams are not safe for a read on one thread and a write on another. Writes are queued,
// since a WebSocket takes one write at a time.
class BeastChannel final : public Channel {
 public:
  BeastChannel(const ServerUrl& url, const TlsIdentity& identity, std::chrono::seconds timeout)
      : ctx_(client_context(identity.ca_pem, identity.certificate_pem, identity.key_pem)),
        ws_(ioc_, *ctx_) {
    connect_tls(ws_.next_layer(), ioc_, url, timeout);
    beast::get_lowest_layer(ws_).expires_never();  // the WebSocket's own timeouts take over
    websocket::stream_base::timeout limits{};
    limits.handshake_timeout = timeout;
    // Pings at half of it find a dead server even when it has nothing to say.
    limits.idle_timeout = std::chrono::seconds(60);
    limits.keep_alive_pings = true;
    ws_.set_option(limits);
    ws_.read_message_max(kMaxMessageBytes);
    websocket::response_type res;
    beast::error_code ec;
    ws_.handshake(res, url.host, "/agent/v1/connect", ec);
    if (ec) {
      throw ChannelError(
          "the agent listener refused the channel: " + std::to_string(res.result_int()) + " " +
          ec.message() + (res.body().empty() ? "" : " " + res.body()));
    }
    ws_.text(true);
    read_next();
    io_ = std::thread([this] { ioc_.run(); });
  }

  ~BeastChannel() override {
    net::post(ioc_, [this] {
      beast::error_code ignored;
      beast::get_lowest_layer(ws_).socket().shutdown(tcp::socket::shutdown_both, ignored);
      beast::get_lowest_layer(ws_).socket().close(ignored);
      // The WebSocket's keep-alive timer would hold run() until its next ping (half the idle
      // timeout); nothing is left to do on this context once the socket is closed.
      ioc_.stop();
    });
    work_.reset();
    if (io_.joinable()) io_.join();
  }

  void send(const std::string& text) override {
    auto pending = std::make_shared<Pending>();
    pending->text = text;
    auto done = pending->written.get_future();
    net::post(ioc_, [this, pending] {
      if (done_flag()) {
        pending->written.set_value(net::error::operation_aborted);
        return;
      }
      outbox_.push_back(pending);
      if (outbox_.size() == 1) write_next();
    });
    auto ec = done.get();
    if (ec) throw ChannelError("sending on the channel failed: " + ec.message());
  }

  std::optional<std::string> receive(std::chrono::milliseconds timeout) override {
    std::unique_lock lock(mutex_);
    arrived_.wait_for(lock, timeout, [&] { return !inbox_.empty() || done_; });
    if (inbox_.empty()) return std::nullopt;
    std::string text = std::move(inbox_.front());
    inbox_.pop_front();
    return text;
  }

  bool closed() const override { return done_flag(); }

  void close() override {
    std::promise<void> finished;
    auto f = finished.get_future();
    net::post(ioc_, [this, &finished] {
      if (done_flag()) {
        finished.set_value();
        return;
      }
      ws_.async_close(websocket::close_code::going_away,
                      [&finished](beast::error_code) { finished.set_value(); });
    });
    // A server that does not answer the close is cut when the channel is destroyed.
    f.wait_for(std::chrono::seconds(5));
  }

 private:
  struct Pending {
    std::string text;
    std::promise<beast::error_code> written;
  };

  bool done_flag() const {
    std::lock_guard lock(mutex_);
    return done_;
  }

  void read_next() {
    ws_.async_read(buffer_, [this](beast::error_code ec, std::size_t) {
      std::lock_guard lock(mutex_);
      if (ec) {
        done_ = true;
        arrived_.notify_all();
        return;
      }
      // Binary frames are not messages in this protocol; the server sends none.
      if (ws_.got_text()) inbox_.push_back(beast::buffers_to_string(buffer_.data()));
      buffer_.consume(buffer_.size());
      arrived_.notify_all();
      read_next();
    });
  }

  void write_next() {
    auto pending = outbox_.front();
    ws_.async_write(net::buffer(pending->text), [this, pending](beast::error_code ec, std::size_t) {
      pending->written.set_value(ec);
      outbox_.pop_front();
      if (ec) {
        std::lock_guard lock(mutex_);
        done_ = true;
        arrived_.notify_all();
      }
      if (ec) {
        for (auto& p : outbox_) p->written.set_value(ec);
        outbox_.clear();
      } else if (!outbox_.empty()) {
        write_next();
      }
    });
  }

  net::io_context ioc_;
  // Keeps run() going after the channel closed, so a late send fails rather than hangs.
  net::executor_work_guard<net::io_context::executor_type> work_{ioc_.get_executor()};
  std::unique_ptr<ssl::context> ctx_;
  websocket::stream<beast::ssl_stream<beast::tcp_stream>> ws_;
  beast::flat_buffer buffer_;
  std::deque<std::shared_ptr<Pending>> outbox_;  // io thread only
  std::thread io_;
  mutable std::mutex mutex_;
  std::condition_variable arrived_;
  std::deque<std::string> inbox_;
  bool done_ = false;
};

}  // namespace

HttpsResponse https_post_json(const ServerUrl& url, const std::string& ca_pem,
                              const std::string& target, const std::string& body,
                              std::chrono::seconds timeout) {
  net::io_context ioc;
  auto ctx = client_context(ca_pem);
  beast::ssl_stream<beast::tcp_stream> stream(ioc, *ctx);
  connect_tls(stream, ioc, url, timeout);
  bhttp::request<bhttp::string_body> req{bhttp::verb::post, target, 11};
  req.set(bhttp::field::host, url.host);
  req.set(bhttp::field::content_type, "application/json");
  req.set(bhttp::field::user_agent, "gpurent-agent/" GPURENT_VERSION);
  req.body() = body;
  req.prepare_payload();
  beast::error_code ec;
  beast::get_lowest_layer(stream).expires_after(timeout);
  bhttp::write(stream, req, ec);
  if (ec) throw ChannelError("sending the request failed: " + ec.message());
  beast::flat_buffer buffer;
  bhttp::response_parser<bhttp::string_body> parser;
  parser.body_limit(kMaxHttpBodyBytes);
  bhttp::read(stream, buffer, parser, ec);
  if (ec) throw ChannelError("reading the response failed: " + ec.message());
  // The response is complete (its length was known): a polite TLS close, but not a wait for
  // a server that keeps the connection open for another request.
  beast::error_code ignored;
  beast::get_lowest_layer(stream).expires_after(std::chrono::milliseconds(500));
  stream.shutdown(ignored);
  const auto& res = parser.get();
  return {static_cast<int>(res.result_int()), res.body()};
}

std::unique_ptr<Channel> open_channel(const ServerUrl& url, const TlsIdentity& identity,
                                      std::chrono::seconds timeout) {
  return std::make_unique<BeastChannel>(url, identity, timeout);
}

}  // namespace gpurent::agent
