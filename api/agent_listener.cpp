// The agent listener over Beast and OpenSSL: TLS 1.3 with optional client certificates
// (verified against the platform's CA by OpenSSL during the handshake), one request per
// connection for enrolment, and WebSocket channels for enrolled agents. The only
// translation unit with Beast's WebSocket code on the server side; TLS is api/tls_socket.h.
#include "api/agent_listener.h"

#include "api/responses.h"
#include "api/tls_socket.h"
#include "core/error.h"
#include "core/log.h"

#include <openssl/bn.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>

#include <atomic>
#include <condition_variable>
#include <csignal>
#include <deque>
#include <functional>
#include <mutex>
#include <set>
#include <thread>
#include <utility>
#include <vector>

namespace gpurent::http {

namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
namespace websocket = boost::beast::websocket;
namespace net = boost::asio;
namespace ssl = boost::asio::ssl;
using tcp = net::ip::tcp;
using WsStream = websocket::stream<TlsSocket>;

namespace {

constexpr std::size_t kEnrollBodyLimit = 64 * 1024;
constexpr std::size_t kHeaderLimit = 16 * 1024;

// The serial of the verified peer certificate, lowercase hex; empty when none was sent.
std::string peer_serial(SSL* ssl) {
  X509* cert = SSL_get0_peer_certificate(ssl);
  if (!cert || SSL_get_verify_result(ssl) != X509_V_OK) return "";
  BIGNUM* bn = ASN1_INTEGER_to_BN(X509_get0_serialNumber(cert), nullptr);
  if (!bn) return "";
  char* hex = BN_bn2hex(bn);
  std::string out = hex ? hex : "";
  OPENSSL_free(hex);
  BN_free(bn);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bhttp::response<bhttp::string_body> json_reply(int status, std::string body) {
  bhttp::response<bhttp::string_body> res{static_cast<bhttp::status>(status), 11};
  res.set(bhttp::field::content_type, "application/json");
  res.set(bhttp::field::cache_control, "no-store");
  res.keep_alive(false);
  res.body() = std::move(body);
  res.prepare_payload();
  return res;
}

bhttp::response<bhttp::string_body> error_reply(int status, const std::string& code,
                                                const std::string& message) {
  nlohmann::json body = {{"error", {{"code", code}, {"message", message}}}};
  return json_reply(status, body.dump());
}

}  // namespace

struct AgentListener::Impl {
  Impl(AgentListenerOptions o, AgentEndpoint& e, WorkerPool& w)
      : options(std::move(o)),
        endpoint(e),
        workers(w),
        ssl_ctx(ssl::context::tls_server),
        ioc(options.io_threads),
        acceptor(net::make_strand(ioc)) {}

  void configure_tls() {
    // TLS 1.3 only: every agent is ours, so there is no old client to accommodate.
    SSL_CTX_set_min_proto_version(ssl_ctx.native_handle(), TLS1_3_VERSION);
    // A channel is idle between heartbeats nearly all the time: its TLS record buffers
    // (about 34 KiB) are freed when empty and taken again for the next record.
    SSL_CTX_set_mode(ssl_ctx.native_handle(), SSL_MODE_RELEASE_BUFFERS);
    // Agents never resume a session (a reconnect is a new handshake with the certificate),
    // so no session is cached and no ticket is sent: nothing held per connection for it.
    SSL_CTX_set_session_cache_mode(ssl_ctx.native_handle(), SSL_SESS_CACHE_OFF);
    SSL_CTX_set_num_tickets(ssl_ctx.native_handle(), 0);
    ssl_ctx.use_certificate_chain(
        net::buffer(options.server_certificate_pem.data(), options.server_certificate_pem.size()));
    ssl_ctx.use_private_key(
        net::buffer(options.server_key_pem.data(), options.server_key_pem.size()),
        ssl::context::pem);
    ssl_ctx.add_certificate_authority(
        net::buffer(options.client_ca_pem.data(), options.client_ca_pem.size()));
    // A certificate is asked for but not required (enrolment has none yet); one that is sent
    // must chain to the platform's CA, or the handshake fails.
    ssl_ctx.set_verify_mode(ssl::verify_peer);
  }

  void accept() {
    acceptor.async_accept(net::make_strand(ioc), [this](beast::error_code ec, tcp::socket socket) {
      if (ec == net::error::operation_aborted || stopping) return;
      if (!ec) on_accept(std::move(socket));
      accept();
    });
  }
  void on_accept(tcp::socket socket);

  void opened(std::shared_ptr<AgentChannel> channel) {
    std::lock_guard lock(mutex);
    channels.insert(std::move(channel));
    ++stats.channels_opened_total;
  }
  void forget(const std::shared_ptr<AgentChannel>& channel) {
    std::lock_guard lock(mutex);
    channels.erase(channel);
  }
  void count(std::uint64_t AgentListenerStats::*field) {
    std::lock_guard lock(mutex);
    ++(stats.*field);
  }

  // Blocking work for the worker pool, counted until the task and what it captured are gone:
  // a task holds its connection, whose stream needs this io_context's services, so stop()
  // waits for the count to reach zero before the io_context can be destroyed.
  bool post_work(std::function<void()> task) {
    {
      std::lock_guard lock(work_mutex);
      ++work_pending;
    }
    bool posted = workers.post([this, task = std::move(task)]() mutable {
      struct Done {
        Impl* impl;
        ~Done() { impl->work_done(); }
      } done{this};
      std::exchange(task, nullptr)();  // the task, and what it holds, is gone before `done`
    });
    if (!posted) work_done();
    return posted;
  }
  void work_done() {
    std::lock_guard lock(work_mutex);
    if (--work_pending == 0) work_idle.notify_all();
  }
  void wait_for_work() {
    std::unique_lock lock(work_mutex);
    work_idle.wait(lock, [this] { return work_pending == 0; });
  }

  AgentListenerOptions options;
  AgentEndpoint& endpoint;
  WorkerPool& workers;
  ssl::context ssl_ctx;
  net::io_context ioc;
  tcp::acceptor acceptor;
  std::vector<std::thread> threads;
  std::atomic<bool> stopping{false};
  std::atomic<std::size_t> connections{0};
  std::atomic<std::size_t> outbox_messages{0};  // all channels' outboxes together
  std::atomic<std::size_t> outbox_bytes{0};
  mutable std::mutex mutex;
  std::set<std::shared_ptr<AgentChannel>> channels;
  AgentListenerStats stats;
  std::mutex work_mutex;
  std::condition_variable work_idle;
  std::size_t work_pending = 0;
};

namespace {

using Impl = AgentListener::Impl;

// An enrolled agent's WebSocket. Reads one message at a time: the next is read only when
// the endpoint has handled the last, so one agent's messages are handled in order and a
// slow database slows that agent, not the listener.
class Channel final : public AgentChannel, public std::enable_shared_from_this<Channel> {
 public:
  Channel(WsStream ws, Impl& impl, std::string node_id, std::string ip)
      : ws_(std::move(ws)), impl_(impl), node_id_(std::move(node_id)), ip_(std::move(ip)) {}

  void start(const bhttp::request<bhttp::string_body>& upgrade) {
    // The WebSocket's own timeouts from here.
    websocket::stream_base::timeout timeout{};
    timeout.handshake_timeout = impl_.options.handshake_timeout;
    // Silence for this long closes the channel; the server pings at half of it, so a live
    // agent that is merely quiet answers and stays.
    timeout.idle_timeout = impl_.options.idle_timeout;
    timeout.keep_alive_pings = true;
    ws_.set_option(timeout);
    ws_.read_message_max(impl_.options.max_message_bytes);
    ws_.async_accept(upgrade, [self = shared_from_this()](beast::error_code ec) {
      if (ec) {
        self->impl_.count(&AgentListenerStats::refused_total);
        return self->finish();
      }
      self->impl_.opened(self);
      self->open_ = true;
      self->handle([self] { self->impl_.endpoint.opened(self); });
    });
  }

  void send(std::string text) override {
    net::post(ws_.get_executor(), [self = shared_from_this(), text = std::move(text)]() mutable {
      if (self->closing_) return;
      const auto& options = self->impl_.options;
      if (!self->outbox_.empty() &&
          (self->outbox_.size() >= options.max_outbox_messages ||
           self->outbox_bytes_ + text.size() > options.max_outbox_bytes)) {
        return self->overflow(text.size());
      }
      self->outbox_bytes_ += text.size();
      self->impl_.outbox_messages.fetch_add(1);
      self->impl_.outbox_bytes.fetch_add(text.size());
      self->outbox_.push_back(std::move(text));
      if (!self->writing_) self->write_next();
    });
  }

  void close(const std::string& reason) override {
    net::post(ws_.get_executor(), [self = shared_from_this(), reason] {
      if (self->closing_) return;
      self->closing_ = true;
      websocket::close_reason why(websocket::close_code::policy_error,
                                  reason.substr(0, 120));  // a close frame holds 123 bytes
      self->ws_.async_close(why, [self](beast::error_code) { self->finish(); });
    });
  }

  void going_away() {
    net::post(ws_.get_executor(), [self = shared_from_this()] {
      if (self->closing_) return;
      self->closing_ = true;
      self->ws_.async_close(websocket::close_code::going_away,
                            [self](beast::error_code) { self->finish(); });
    });
  }

  // After the io threads stopped and the workers finished: cuts the connection if it is still
  // open and tells the endpoint, here, unless it was told already.
  void abort() {
    if (!finished_) {
      finished_ = true;
      closing_ = true;
      beast::error_code ignored;
      ws_.next_layer().socket().shutdown(tcp::socket::shutdown_both, ignored);
      ws_.next_layer().socket().close(ignored);
      impl_.connections.fetch_sub(1);
    }
    if (!open_ || told_closed_) return;
    told_closed_ = true;
    auto self = shared_from_this();
    impl_.forget(self);
    guarded([&] { impl_.endpoint.closed(self); });
  }

  const std::string& node_id() const override { return node_id_; }
  const std::string& remote_ip() const override { return ip_; }

 private:
  void read() {
    if (closing_) return;
    ws_.async_read(buffer_, [self = shared_from_this()](beast::error_code ec, std::size_t) {
      if (ec) {
        if (ec == websocket::error::message_too_big) {
          log::warn("agent {} ({}) sent a message over {} bytes; channel closed", self->node_id_,
                    self->ip_, self->impl_.options.max_message_bytes);
        }
        return self->finish();
      }
      self->impl_.count(&AgentListenerStats::messages_received_total);
      std::string text = beast::buffers_to_string(self->buffer_.data());
      // Nothing kept between messages, seconds apart: the next read takes what it needs.
      self->buffer_.clear();
      self->buffer_.shrink_to_fit();
      self->handle([self, text = std::move(text)]() mutable {
        self->impl_.endpoint.received(self, std::move(text));
      });
    });
  }

  // Runs `call` to the endpoint on a worker, then reads the next message. The endpoint hears
  // of a channel in order: opened, each message, closed; a channel that ends while a message
  // is in hand is told closed only once that message is handled.
  template <typename Call>
  void handle(Call call) {
    handling_ = true;
    bool posted = impl_.post_work([self = shared_from_this(), call = std::move(call)]() mutable {
      self->guarded(call);
      net::post(self->ws_.get_executor(), [self] {
        self->handling_ = false;
        if (self->finished_) return self->tell_closed();
        self->read();
      });
    });
    if (!posted) {
      handling_ = false;
      close("the control plane is overloaded");
    }
  }

  void write_next() {
    writing_ = true;
    ws_.text(true);
    ws_.async_write(net::buffer(outbox_.front()),
                    [self = shared_from_this()](beast::error_code ec, std::size_t) {
                      self->drop_front();
                      if (ec) {
                        self->writing_ = false;
                        self->drop_outbox();
                        return self->finish();
                      }
                      self->impl_.count(&AgentListenerStats::messages_sent_total);
                      if (!self->outbox_.empty() && !self->closing_) return self->write_next();
                      self->writing_ = false;
                      if (self->closing_) self->drop_outbox();
                    });
  }

  // The agent is not taking what is sent (or not as fast as it comes): rather than hold
  // more for it, the connection is cut at once. A close frame would wait behind the write
  // the agent is not reading. It reconnects, and its hello gets its tasks again.
  void overflow(std::size_t refused_bytes) {
    impl_.count(&AgentListenerStats::outbox_overflows_total);
    log::warn(
        "agent {} ({}) is not reading what is sent: {} messages ({} bytes) wait, and one more "
        "({} bytes) would pass agent_outbox_max_messages ({}) or agent_outbox_max_bytes ({}); "
        "channel cut",
        node_id_, ip_, outbox_.size(), outbox_bytes_, refused_bytes,
        impl_.options.max_outbox_messages, impl_.options.max_outbox_bytes);
    finish();
  }

  void drop_front() {
    std::size_t size = outbox_.front().size();
    outbox_bytes_ -= size;
    impl_.outbox_messages.fetch_sub(1);
    impl_.outbox_bytes.fetch_sub(size);
    outbox_.pop_front();
  }
  // What will not be sent now; not while a write holds the front.
  void drop_outbox() {
    if (writing_) return;
    while (!outbox_.empty()) drop_front();
  }

  // The endpoint's failure to handle a message is the control plane's bug or outage, not
  // the agent's: logged, and the channel closed so the agent reconnects and resends.
  template <typename Fn>
  void guarded(Fn&& fn) {
    try {
      fn();
    } catch (const std::exception& e) {
      log::error("agent {} channel: {}", node_id_, e.what());
      close("internal error");
    }
  }

  void finish() {
    if (finished_) return;
    finished_ = true;
    closing_ = true;
    beast::error_code ignored;
    ws_.next_layer().socket().close(ignored);
    drop_outbox();  // or, with a write pending, once it has failed
    impl_.connections.fetch_sub(1);
    if (!handling_) tell_closed();
  }

  void tell_closed() {
    if (!open_ || told_closed_) return;
    told_closed_ = true;
    auto self = shared_from_this();
    impl_.forget(self);
    if (!impl_.post_work([self] { self->guarded([&] { self->impl_.endpoint.closed(self); }); })) {
      self->guarded([&] { self->impl_.endpoint.closed(self); });
    }
  }

  WsStream ws_;
  Impl& impl_;
  std::string node_id_;
  std::string ip_;
  beast::flat_buffer buffer_;
  std::deque<std::string> outbox_;
  std::size_t outbox_bytes_ = 0;
  bool writing_ = false;
  bool closing_ = false;
  bool finished_ = false;
  bool open_ = false;
  bool handling_ = false;     // a call to the endpoint is on a worker
  bool told_closed_ = false;  // the endpoint has been (or is being) told closed
};

// A new connection until it is an enrolment answered or a channel opened.
class Connection final : public std::enable_shared_from_this<Connection> {
 public:
  Connection(tcp::socket socket, Impl& impl)
      : stream_(std::move(socket), impl.ssl_ctx.native_handle()),
        impl_(impl),
        deadline_(stream_.get_executor()) {
    beast::error_code ec;
    auto peer = stream_.socket().remote_endpoint(ec);
    if (!ec) ip_ = peer.address().to_string();
  }

  void start() {
    // The handshake and the first request within the limit, or the socket is closed (which
    // ends whatever is pending on it). A channel's WebSocket keeps its own timeouts.
    deadline_.expires_after(impl_.options.handshake_timeout);
    deadline_.async_wait([weak = weak_from_this()](beast::error_code ec) {
      auto self = weak.lock();
      if (ec || !self || self->handed_over_) return;
      beast::error_code ignored;
      self->stream_.socket().close(ignored);
    });
    stream_.async_handshake([self = shared_from_this()](beast::error_code ec) {
      if (ec) return self->refuse_quietly("TLS handshake: " + ec.message());
      self->read_request();
    });
  }

 private:
  void read_request() {
    parser_.emplace();
    parser_->body_limit(kEnrollBodyLimit);
    parser_->header_limit(kHeaderLimit);
    bhttp::async_read(stream_, buffer_, *parser_,
                      [self = shared_from_this()](beast::error_code ec, std::size_t) {
                        if (ec) return self->refuse_quietly("request: " + ec.message());
                        self->route(self->parser_->release());
                      });
  }

  void route(bhttp::request<bhttp::string_body> req) {
    std::string_view target(req.target().data(), req.target().size());
    if (target == "/agent/v1/enroll" && req.method() == bhttp::verb::post) return enroll(req);
    if (target == "/agent/v1/connect" && websocket::is_upgrade(req)) return connect(std::move(req));
    reply(error_reply(404, "not_found",
                      "The agent listener serves /agent/v1/enroll and "
                      "/agent/v1/connect only."));
  }

  void enroll(const bhttp::request<bhttp::string_body>& req) {
    auto body = nlohmann::json::parse(req.body(), nullptr, false);
    if (body.is_discarded() || !body.is_object()) {
      return reply(error_reply(400, "invalid_json", "The body must be a JSON object."));
    }
    bool posted = impl_.post_work([self = shared_from_this(), body = std::move(body)] {
      auto res = self->answer(
          [&] { return json_reply(200, self->impl_.endpoint.enroll(body, self->ip_).dump()); });
      net::post(self->stream_.get_executor(),
                [self, res = std::move(res)]() mutable { self->reply(std::move(res)); });
    });
    if (!posted) reply(error_reply(503, "unavailable", "The control plane is overloaded."));
  }

  void connect(bhttp::request<bhttp::string_body> req) {
    std::string serial = peer_serial(stream_.native_handle());
    if (serial.empty()) {
      return reply(error_reply(401, "unauthenticated",
                               "A client certificate from the platform's CA is required; enrol "
                               "the agent first."));
    }
    auto upgrade = std::make_shared<bhttp::request<bhttp::string_body>>(std::move(req));
    bool posted = impl_.post_work([self = shared_from_this(), serial, upgrade] {
      std::string node_id;
      auto refusal = self->answer([&] {
        node_id = self->impl_.endpoint.admit(serial, self->ip_);
        return json_reply(200, "");
      });
      net::post(self->stream_.get_executor(),
                [self, node_id, upgrade, refusal = std::move(refusal)]() mutable {
                  if (refusal.result_int() != 200) return self->reply(std::move(refusal));
                  self->handed_over_ = true;
                  self->deadline_.cancel();
                  auto channel = std::make_shared<Channel>(WsStream(std::move(self->stream_)),
                                                           self->impl_, node_id, self->ip_);
                  channel->start(*upgrade);
                });
    });
    if (!posted) reply(error_reply(503, "unavailable", "The control plane is overloaded."));
  }

  // Runs the endpoint's call; a refusal becomes its HTTP answer, never an exception here.
  template <typename Fn>
  bhttp::response<bhttp::string_body> answer(Fn&& fn) {
    try {
      return fn();
    } catch (const AgentRefusal& e) {
      log::warn("agent listener refused {}: {}", ip_, e.what());
      return error_reply(e.status(), e.code(), e.what());
    } catch (const Error& e) {
      Response r = error_response(e);
      log::warn("agent listener refused {}: {}", ip_, e.what());
      return json_reply(r.status, std::string(r.body_view()));
    } catch (const std::exception& e) {
      log::error("agent listener: {}", e.what());
      return error_reply(500, "internal", "An internal error occurred.");
    }
  }

  void reply(bhttp::response<bhttp::string_body> res) {
    if (res.result_int() >= 400) impl_.count(&AgentListenerStats::refused_total);
    auto owned = std::make_shared<bhttp::response<bhttp::string_body>>(std::move(res));
    bhttp::async_write(stream_, *owned,
                       [self = shared_from_this(), owned](beast::error_code, std::size_t) {
                         self->deadline_.cancel();
                         self->stream_.close_notify();
                         beast::error_code ignored;
                         self->stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
                         self->stream_.socket().close(ignored);
                       });
  }

  void refuse_quietly(const std::string& why) {
    impl_.count(&AgentListenerStats::refused_total);
    log::debug("agent listener: {} from {}", why, ip_);
    beast::error_code ignored;
    stream_.socket().close(ignored);
  }

 public:
  ~Connection() {
    if (!handed_over_) impl_.connections.fetch_sub(1);
  }

 private:
  TlsSocket stream_;
  Impl& impl_;
  net::steady_timer deadline_;
  std::string ip_;
  beast::flat_buffer buffer_;
  std::optional<bhttp::request_parser<bhttp::string_body>> parser_;
  bool handed_over_ = false;
};

}  // namespace

void AgentListener::Impl::on_accept(tcp::socket socket) {
  if (connections.fetch_add(1) >= options.max_connections) {
    connections.fetch_sub(1);
    count(&AgentListenerStats::refused_total);
    beast::error_code ignored;
    socket.close(ignored);
    return;
  }
  std::make_shared<Connection>(std::move(socket), *this)->start();
}

AgentListener::AgentListener(AgentListenerOptions options, AgentEndpoint& endpoint,
                             WorkerPool& workers)
    : impl_(std::make_unique<Impl>(std::move(options), endpoint, workers)) {}

AgentListener::~AgentListener() {
  stop();
}

unsigned short AgentListener::start() {
  auto& impl = *impl_;
  // TlsSocket lets OpenSSL write the socket with write(2), which raises SIGPIPE when the agent
  // has gone and would end the whole process; ignored, the write fails with EPIPE and only
  // that channel closes. (Asio's own sockets send with MSG_NOSIGNAL and never raise it.)
  ::signal(SIGPIPE, SIG_IGN);
  impl.configure_tls();
  tcp::endpoint at(net::ip::make_address(impl.options.host), impl.options.port);
  impl.acceptor.open(at.protocol());
  impl.acceptor.set_option(net::socket_base::reuse_address(true));
  impl.acceptor.bind(at);
  impl.acceptor.listen(net::socket_base::max_listen_connections);
  unsigned short port = impl.acceptor.local_endpoint().port();
  impl.accept();
  for (int i = 0; i < std::max(1, impl.options.io_threads); ++i) {
    impl.threads.emplace_back([&impl] { impl.ioc.run(); });
  }
  return port;
}

void AgentListener::stop() {
  auto& impl = *impl_;
  if (impl.stopping.exchange(true)) return;
  net::post(impl.acceptor.get_executor(), [&impl] {
    beast::error_code ignored;
    impl.acceptor.close(ignored);
  });
  std::vector<std::shared_ptr<AgentChannel>> open;
  {
    std::lock_guard lock(impl.mutex);
    open.assign(impl.channels.begin(), impl.channels.end());
  }
  for (auto& c : open) static_cast<Channel&>(*c).going_away();
  // The close handshakes get a moment; whatever is left is cut when the loop stops.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (impl.connections.load() > 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  impl.ioc.stop();
  for (auto& t : impl.threads) {
    if (t.joinable()) t.join();
  }
  // No new work can start now (only the io threads post it); what is running finishes, so no
  // endpoint call comes after the aborts below and no task outlives the io_context.
  impl.wait_for_work();
  // Agents that did not answer the close in time are cut, and the endpoint hears of them.
  {
    std::lock_guard lock(impl.mutex);
    open.assign(impl.channels.begin(), impl.channels.end());
  }
  for (auto& c : open) static_cast<Channel&>(*c).abort();
}

AgentListenerStats AgentListener::stats() const {
  std::lock_guard lock(impl_->mutex);
  AgentListenerStats out = impl_->stats;
  out.channels_open = impl_->channels.size();
  out.outbox_messages = impl_->outbox_messages.load();
  out.outbox_bytes = impl_->outbox_bytes.load();
  return out;
}

}  // namespace gpurent::http
