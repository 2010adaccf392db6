// Beast's TLS and WebSocket client for thousands of simulated agents in one process: each
// agent a small state machine on its own strand (connect, TLS with its own certificate,
// upgrade, hello, heartbeats; on any failure, back off and start again).
#include "agent/fleetsim/fleet_runner.h"

#include "agent/backoff.h"
#include "core/log.h"

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/ssl.hpp>
#include <boost/beast/websocket.hpp>
#include <boost/beast/websocket/ssl.hpp>

#include <deque>
#include <random>
#include <stdexcept>
#include <thread>

namespace gpurent::agent::fleetsim {

namespace beast = boost::beast;
namespace websocket = boost::beast::websocket;
namespace net = boost::asio;
namespace ssl = boost::asio::ssl;
using tcp = net::ip::tcp;
using Strand = net::strand<net::io_context::executor_type>;
using WsStream = websocket::stream<beast::ssl_stream<beast::tcp_stream>>;

namespace {

// The listener's limit: a bigger message from the server is not one.
constexpr std::size_t kMaxMessageBytes = 256 * 1024;

struct X509Free {
  void operator()(X509* x) const { X509_free(x); }
};
struct PkeyFree {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};

std::unique_ptr<X509, X509Free> read_certificate(const std::string& pem) {
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  std::unique_ptr<X509, X509Free> cert(bio ? PEM_read_bio_X509(bio, nullptr, nullptr, nullptr)
                                           : nullptr);
  BIO_free(bio);
  return cert;
}

std::unique_ptr<EVP_PKEY, PkeyFree> read_key(const std::string& pem) {
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  std::unique_ptr<EVP_PKEY, PkeyFree> key(
      bio ? PEM_read_bio_PrivateKey(bio, nullptr, nullptr, nullptr) : nullptr);
  BIO_free(bio);
  return key;
}

}  // namespace

class Connection;

struct FleetRunner::Impl {
  Impl(FleetRunnerOptions o, AgentShared& s)
      : options(std::move(o)),
        shared(s),
        ssl_ctx(ssl::context::tls_client),
        ioc(options.io_threads) {
    SSL_CTX_set_min_proto_version(ssl_ctx.native_handle(), TLS1_3_VERSION);
    // An idle channel keeps no TLS record buffers: most of a fleet's connections are idle.
    SSL_CTX_set_mode(ssl_ctx.native_handle(), SSL_MODE_RELEASE_BUFFERS);
    beast::error_code ec;
    // Only the given CA: never the system's store.
    ssl_ctx.add_certificate_authority(net::buffer(options.ca_pem), ec);
    if (ec) throw std::runtime_error("the CA certificate is not usable: " + ec.message());
    ssl_ctx.set_verify_mode(ssl::verify_peer);
  }

  FleetRunnerOptions options;
  AgentShared& shared;
  ssl::context ssl_ctx;
  net::io_context ioc;
  tcp::resolver::results_type endpoints;
  std::vector<std::thread> threads;
  // Declared after the io_context: destroyed before it, while its services still run.
  std::vector<std::shared_ptr<Connection>> connections;
  bool started = false;
  bool stopped = false;
};

// One agent's connection, reconnected after every failure. Everything but send() runs on
// its strand.
class Connection final : public Outbox, public std::enable_shared_from_this<Connection> {
 public:
  Connection(FleetRunner::Impl& impl, const FleetMember& member, std::size_t index)
      : impl_(impl),
        strand_(net::make_strand(impl.ioc)),
        timer_(strand_),
        backoff_(impl.options.backoff_initial, impl.options.backoff_max,
                 std::random_device{}() ^ index),
        agent_(impl.shared, "fleetsim-" + std::to_string(index), member.state_dir, *this),
        node_id_(member.node_id),
        certificate_(read_certificate(member.certificate_pem)),
        key_(read_key(member.key_pem)) {
    if (!certificate_ || !key_) {
      throw std::runtime_error("the certificate or key of node " + member.node_id +
                               " is not usable");
    }
  }

  void start(std::chrono::milliseconds delay) {
    net::post(strand_, [self = shared_from_this(), delay] {
      self->timer_.expires_after(delay);
      self->timer_.async_wait([self](beast::error_code ec) {
        if (!ec) self->connect();
      });
    });
  }

  void stop() {
    net::post(strand_, [self = shared_from_this()] {
      self->stopping_ = true;
      self->timer_.cancel();
      auto link = self->link_;
      if (!link) return;
      if (self->state_ == State::kHello || self->state_ == State::kSession) {
        link->ws.async_close(websocket::close_code::going_away,
                             [self, link](beast::error_code) { self->fail(link, "", {}); });
      } else {
        self->fail(link, "", {});
      }
    });
  }

  // From the agent: on the strand (heartbeats, answers) or a task worker (progress,
  // results). Dropped when no channel is open; the journal keeps what must be resent.
  void send(std::string text) override {
    if (strand_.running_in_this_thread()) return enqueue(std::move(text));
    net::post(strand_, [self = shared_from_this(), text = std::move(text)]() mutable {
      self->enqueue(std::move(text));
    });
  }

 private:
  enum class State { kWaiting, kConnecting, kHello, kSession };

  // One attempt's stream, its read buffer and its queued writes: a failed attempt's
  // operations finish on their own Link while the next attempt gets a new one.
  struct Link {
    Link(Strand& strand, ssl::context& ctx) : ws(strand, ctx) {}
    WsStream ws;
    beast::flat_buffer buffer;
    std::deque<std::string> outbox;
    bool writing = false;
  };

  void connect() {
    if (stopping_) return;
    auto link = std::make_shared<Link>(strand_, impl_.ssl_ctx);
    link_ = link;
    state_ = State::kConnecting;
    const auto& host = impl_.options.server.host;
    SSL* ssl = link->ws.next_layer().native_handle();
    if (SSL_use_certificate(ssl, certificate_.get()) != 1 ||
        SSL_use_PrivateKey(ssl, key_.get()) != 1 || !SSL_set_tlsext_host_name(ssl, host.c_str())) {
      return fail(link, "TLS setup", {});
    }
    link->ws.next_layer().set_verify_callback(ssl::host_name_verification(host));
    auto& tcp_layer = beast::get_lowest_layer(link->ws);
    tcp_layer.expires_after(impl_.options.timeout);
    tcp_layer.async_connect(impl_.endpoints, [self = shared_from_this(), link](
                                                 beast::error_code ec, const tcp::endpoint&) {
      if (ec) return self->fail(link, "connect", ec);
      beast::get_lowest_layer(link->ws).expires_after(self->impl_.options.timeout);
      link->ws.next_layer().async_handshake(ssl::stream_base::client,
                                            [self, link](beast::error_code ec) {
                                              if (ec) return self->fail(link, "TLS", ec);
                                              self->upgrade(link);
                                            });
    });
  }

  void upgrade(const std::shared_ptr<Link>& link) {
    beast::get_lowest_layer(link->ws).expires_never();  // the WebSocket's own timeouts
    websocket::stream_base::timeout limits{};
    limits.handshake_timeout = impl_.options.timeout;
    limits.idle_timeout = std::chrono::seconds(60);
    limits.keep_alive_pings = true;
    link->ws.set_option(limits);
    link->ws.read_message_max(kMaxMessageBytes);
    link->ws.async_handshake(impl_.options.server.host, "/agent/v1/connect",
                             [self = shared_from_this(), link](beast::error_code ec) {
                               if (ec) return self->fail(link, "upgrade", ec);
                               self->opened(link);
                             });
  }

  void opened(const std::shared_ptr<Link>& link) {
    if (link != link_) return;
    if (stopping_) return fail(link, "", {});
    link->ws.text(true);
    state_ = State::kHello;
    read(link);
    std::string hello;
    try {
      hello = agent_.hello();
    } catch (const std::exception& e) {
      return fail(link, std::string("hello: ") + e.what(), {});
    }
    enqueue(std::move(hello));
    timer_.expires_after(impl_.options.timeout);
    timer_.async_wait([self = shared_from_this(), link](beast::error_code ec) {
      if (ec || link != self->link_ || self->state_ != State::kHello) return;
      self->fail(link, "no answer to the hello", {});
    });
  }

  void read(const std::shared_ptr<Link>& link) {
    link->ws.async_read(
        link->buffer, [self = shared_from_this(), link](beast::error_code ec, std::size_t) {
          if (link != self->link_) return;
          if (ec) return self->fail(link, "read", ec);
          self->impl_.shared.stats.messages_received.fetch_add(1, std::memory_order_relaxed);
          std::string text = beast::buffers_to_string(link->buffer.data());
          link->buffer.consume(link->buffer.size());
          switch (self->agent_.receive(text)) {
            case SimulatedAgent::Heard::kHelloAccepted:
              self->session_started();
              break;
            case SimulatedAgent::Heard::kHelloRefused:
              self->impl_.shared.stats.refused.fetch_add(1, std::memory_order_relaxed);
              return self->fail(link, "the hello was refused", {});
            case SimulatedAgent::Heard::kOther:
              break;
          }
          self->read(link);
        });
  }

  void session_started() {
    state_ = State::kSession;
    backoff_.reset();
    impl_.shared.stats.connected.fetch_add(1, std::memory_order_relaxed);
    impl_.shared.stats.connects.fetch_add(1, std::memory_order_relaxed);
    agent_.session_started();
    schedule_heartbeat();
  }

  void schedule_heartbeat() {
    timer_.expires_after(impl_.options.heartbeat);
    timer_.async_wait([self = shared_from_this(), link = link_](beast::error_code ec) {
      if (ec || link != self->link_ || self->state_ != State::kSession) return;
      self->agent_.send_heartbeat();
      self->schedule_heartbeat();
    });
  }

  void enqueue(std::string text) {
    auto link = link_;
    if (!link || (state_ != State::kHello && state_ != State::kSession)) return;
    link->outbox.push_back(std::move(text));
    if (!link->writing) write_next(link);
  }

  void write_next(const std::shared_ptr<Link>& link) {
    link->writing = true;
    link->ws.async_write(net::buffer(link->outbox.front()), [self = shared_from_this(), link](
                                                                beast::error_code ec, std::size_t) {
      link->outbox.pop_front();
      if (ec) return self->fail(link, "write", ec);
      self->impl_.shared.stats.messages_sent.fetch_add(1, std::memory_order_relaxed);
      if (!link->outbox.empty()) return self->write_next(link);
      link->writing = false;
    });
  }

  // The attempt or channel is over: cut it, count it, and try again after the backoff.
  // `what` empty: a deliberate close (stopping), not an error.
  void fail(const std::shared_ptr<Link>& link, const std::string& what, beast::error_code ec) {
    if (link != link_) return;
    link_.reset();
    if (state_ == State::kSession) {
      impl_.shared.stats.connected.fetch_sub(1, std::memory_order_relaxed);
    }
    agent_.session_ended();
    state_ = State::kWaiting;
    beast::error_code ignored;
    beast::get_lowest_layer(link->ws).socket().close(ignored);
    if (stopping_) return;
    if (!what.empty()) {
      std::string reason = node_id_ + ": " + what + (ec ? ": " + ec.message() : "");
      log::debug("{}", reason);
      impl_.shared.stats.error(std::move(reason));
    }
    impl_.shared.stats.reconnects.fetch_add(1, std::memory_order_relaxed);
    timer_.expires_after(backoff_.next());
    timer_.async_wait([self = shared_from_this()](beast::error_code ec) {
      if (!ec) self->connect();
    });
  }

  FleetRunner::Impl& impl_;
  Strand strand_;
  net::steady_timer timer_;  // the start, the hello's answer, the next heartbeat, the backoff
  Backoff backoff_;
  SimulatedAgent agent_;
  std::string node_id_;
  std::unique_ptr<X509, X509Free> certificate_;
  std::unique_ptr<EVP_PKEY, PkeyFree> key_;
  std::shared_ptr<Link> link_;
  State state_ = State::kWaiting;
  bool stopping_ = false;
};

FleetRunner::FleetRunner(FleetRunnerOptions options, std::vector<FleetMember> members,
                         AgentShared& shared)
    : impl_(std::make_unique<Impl>(std::move(options), shared)) {
  impl_->connections.reserve(members.size());
  for (std::size_t i = 0; i < members.size(); ++i) {
    impl_->connections.push_back(std::make_shared<Connection>(*impl_, members[i], i));
  }
  shared.stats.agents = members.size();
}

FleetRunner::~FleetRunner() {
  stop();
}

void FleetRunner::start() {
  auto& impl = *impl_;
  tcp::resolver resolver(impl.ioc);
  beast::error_code ec;
  impl.endpoints =
      resolver.resolve(impl.options.server.host, std::to_string(impl.options.server.port), ec);
  if (ec)
    throw std::runtime_error("cannot resolve " + impl.options.server.host + ": " + ec.message());
  // Agent i starts at a random moment of its own slice of the ramp: even on the whole,
  // jittered within.
  std::mt19937_64 random(std::random_device{}());
  std::uniform_real_distribution<double> within(0.0, 1.0);
  auto n = static_cast<double>(impl.connections.size());
  for (std::size_t i = 0; i < impl.connections.size(); ++i) {
    auto at = std::chrono::milliseconds(
        static_cast<std::int64_t>(static_cast<double>(impl.options.ramp.count()) *
                                  (static_cast<double>(i) + within(random)) / n));
    impl.connections[i]->start(at);
  }
  impl.started = true;
  for (int i = 0; i < std::max(1, impl.options.io_threads); ++i) {
    impl.threads.emplace_back([&impl] { impl.ioc.run(); });
  }
}

void FleetRunner::stop() {
  auto& impl = *impl_;
  if (!impl.started || impl.stopped) return;
  impl.stopped = true;
  for (auto& c : impl.connections) c->stop();
  // The close handshakes get a moment; whatever is left is cut when the loop stops.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(3);
  while (impl.shared.stats.connected.load() > 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  impl.ioc.stop();
  for (auto& t : impl.threads) {
    if (t.joinable()) t.join();
  }
}

}  // namespace gpurent::agent::fleetsim
