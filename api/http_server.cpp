// Beast-based listener and per-connection sessions: a connection limit, timeouts before
// every read and write, a fresh parser per message, bounded pipelining, requests that wait
// on timers rather than workers, graceful shutdown; HTTPS when given a certificate. The
// only translation unit that includes Beast and Asio.
#include "api/http_server.h"

#include "api/dispatch.h"
#include "api/rate_limiter.h"
#include "api/responses.h"
#include "api/tls_context.h"
#include "api/wire.h"
#include "core/blocking.h"
#include "core/error.h"
#include "core/id.h"
#include "core/log.h"

#include <sys/resource.h>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <deque>
#include <future>
#include <list>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>

namespace gpurent::http {

namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;
using Clock = std::chrono::steady_clock;

namespace {

// What the server asks of every connection, plain or TLS, at shutdown.
class SessionBase {
 public:
  virtual ~SessionBase() = default;
  virtual void on_shutdown() = 0;
};

using PlainStream = beast::tcp_stream;
using TlsStream = beast::ssl_stream<beast::tcp_stream>;

class BeastHeaders final : public HeaderSource {
 public:
  explicit BeastHeaders(const bhttp::fields& fields) : fields_(fields) {}
  std::string_view get(std::string_view name) const override {
    auto it = fields_.find(beast::string_view(name.data(), name.size()));
    if (it == fields_.end()) return {};
    auto v = it->value();
    return {v.data(), v.size()};
  }

 private:
  const bhttp::fields& fields_;
};

using BeastRequest = bhttp::request<bhttp::string_body>;

// A request detached from its session's parser, so a worker thread can use it while the
// session reads the next pipelined one.
struct OwnedRequest {
  explicit OwnedRequest(BeastRequest&& m) : message(std::move(m)), headers(message.base()) {}
  BeastRequest message;
  BeastHeaders headers;
  std::string request_id;
  std::string remote_ip;
  Request view;
  // While its handler answers CallAgain: when to stop calling, and the next pause.
  std::optional<Clock::time_point> call_again_until;
  std::chrono::milliseconds call_again_delay{0};
};

void fill_view(Request& view, const BeastRequest& message, const HeaderSource& headers,
               std::string_view request_id, std::string_view remote_ip, bool secure) {
  auto target = message.target();
  view.method = parse_method(
      std::string_view(message.method_string().data(), message.method_string().size()));
  view.target = std::string_view(target.data(), target.size());
  auto q = view.target.find('?');
  view.path = view.target.substr(0, q);
  view.query = q == std::string_view::npos ? std::string_view() : view.target.substr(q + 1);
  view.body = message.body();
  view.headers = &headers;
  view.request_id = request_id;
  view.remote_ip = remote_ip;
  view.secure = secure;
}

Response shutting_down_response() {
  Response r = error_response(ErrorCode::kUnavailable,
                              "The server is shutting down; retry the request shortly.");
  return r;
}

// How long the listener pauses when accept() fails for want of descriptors or memory.
constexpr std::chrono::milliseconds kAcceptBackoff{50};

// Each connection is a descriptor, and so is everything else the process holds (database
// connections, the log, the embedded cluster's pipes). Raises the soft limit toward the
// hard one when it cannot hold the connection limit plus a margin, so that the connection
// limit, not EMFILE, is what turns connections away; says so when even that is too low.
void ensure_descriptors(std::size_t max_connections) {
  constexpr rlim_t kMargin = 256;
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return;
  rlim_t wanted = static_cast<rlim_t>(max_connections) + kMargin;
  if (limit.rlim_cur == RLIM_INFINITY || limit.rlim_cur >= wanted) return;
  rlimit raised = limit;
  raised.rlim_cur = limit.rlim_max == RLIM_INFINITY ? wanted : std::min(wanted, limit.rlim_max);
  if (raised.rlim_cur > limit.rlim_cur && setrlimit(RLIMIT_NOFILE, &raised) == 0) limit = raised;
  if (limit.rlim_cur < wanted) {
    log::warn(
        "http_max_connections={} needs about {} file descriptors but the limit is {}: "
        "connections may be turned away (accept fails and retries) below the connection limit",
        max_connections, static_cast<unsigned long long>(wanted),
        static_cast<unsigned long long>(limit.rlim_cur));
  }
}

}  // namespace

struct HttpServer::Impl {
  Impl(ServerOptions o, const Router& r, Metrics& m, WorkerPool& w, const StaticFiles* s)
      : options(std::move(o)),
        router(r),
        metrics(m),
        workers(w),
        statics(s),
        ioc(options.io_threads),
        acceptor(net::make_strand(ioc)),
        accept_retry_timer(acceptor.get_executor()),
        signals(ioc, SIGINT, SIGTERM),
        reload_signals(ioc, SIGHUP),
        drain_timer(ioc) {}

  void accept();
  void on_accept_error(const beast::error_code& ec);
  void refuse(tcp::socket& socket);
  void begin_shutdown();
  void check_drained();

  void connection_opened() {
    std::size_t open = ++connections_open;
    std::size_t peak = connections_peak.load();
    while (open > peak && !connections_peak.compare_exchange_weak(peak, open)) {
    }
  }

  // The context new TLS connections are made with; null for plain HTTP. A reload replaces
  // it; connections made with the old one keep it alive until they close.
  std::shared_ptr<net::ssl::context> current_tls() {
    std::lock_guard lock(tls_mutex);
    return tls;
  }
  std::string reload_tls();
  void await_reload_signal();

  void add(SessionBase* s, std::weak_ptr<SessionBase> w) {
    std::lock_guard lock(sessions_mutex);
    sessions.emplace(s, std::move(w));
  }
  void remove(SessionBase* s) {
    std::lock_guard lock(sessions_mutex);
    sessions.erase(s);
  }

  ServerOptions options;
  const Router& router;
  Metrics& metrics;
  WorkerPool& workers;
  const StaticFiles* statics;

  // Declared before the io_context, so they outlive it: sessions whose handlers are still
  // queued when it is destroyed unregister themselves here.
  mutable std::mutex sessions_mutex;
  std::unordered_map<SessionBase*, std::weak_ptr<SessionBase>> sessions;
  std::atomic<std::size_t> connections_open{0};
  std::atomic<std::size_t> connections_peak{0};
  std::atomic<std::uint64_t> connections_accepted{0};
  std::atomic<std::uint64_t> connections_refused{0};
  std::atomic<std::uint64_t> accept_errors{0};
  std::atomic<std::size_t> requests_waiting{0};
  std::atomic<std::uint64_t> inline_answered{0};
  std::atomic<std::uint64_t> inline_diverted{0};

  net::io_context ioc;
  tcp::acceptor acceptor;
  net::steady_timer accept_retry_timer;  // on the acceptor's strand
  net::signal_set signals;
  net::signal_set reload_signals;  // SIGHUP: reload the TLS certificate
  net::steady_timer drain_timer;
  Clock::time_point drain_deadline;
  std::atomic<bool> stopping{false};
  // The listener's own state, touched on the acceptor's strand only: failed accepts and
  // refusals in a row, so each episode is logged once when it starts and once when it ends.
  std::uint64_t failed_accepts_in_a_row = 0;
  std::uint64_t refusals_in_a_row = 0;

  mutable std::mutex tls_mutex;
  std::shared_ptr<net::ssl::context> tls;  // guarded by tls_mutex
  std::atomic<long long> tls_not_after{0};
  std::atomic<std::uint64_t> tls_reloads{0};
  std::atomic<std::uint64_t> tls_reload_failures{0};
  std::atomic<std::uint64_t> tls_handshake_failures{0};
};

namespace {

// One connection: PlainStream, or TlsStream made with the context current when it was
// accepted (tls_), which it keeps however often the certificate is reloaded.
template <class Stream>
class Session final : public SessionBase, public std::enable_shared_from_this<Session<Stream>> {
  static constexpr bool kTls = std::is_same_v<Stream, TlsStream>;
  using std::enable_shared_from_this<Session<Stream>>::shared_from_this;
  using std::enable_shared_from_this<Session<Stream>>::weak_from_this;

 public:
  Session(tcp::socket&& socket, HttpServer::Impl& server) requires(!kTls)
      : stream_(std::move(socket)), server_(server) {
    opened();
  }
  Session(tcp::socket&& socket, std::shared_ptr<net::ssl::context> tls,
          HttpServer::Impl& server) requires kTls : tls_(std::move(tls)),
                                                    stream_(std::move(socket), *tls_),
                                                    server_(server) {
    opened();
  }

  ~Session() {
    server_.remove(this);
    --server_.connections_open;
  }

  void start() {
    server_.add(this, weak_from_this());
    net::dispatch(stream_.get_executor(), [self = shared_from_this()] {
      if constexpr (kTls) {
        self->handshake();
      } else {
        self->do_read();
      }
    });
  }

  // Called on shutdown: finish what is in flight, accept nothing new. Requests waiting to be
  // called again are answered 503 now rather than when their patience runs out, so they
  // never hold up the drain; a TLS handshake still under way is cut.
  void on_shutdown() override {
    net::dispatch(stream_.get_executor(), [self = shared_from_this()] {
      self->closing_ = true;
      for (auto& timer : self->waits_) timer.cancel();
      if ((self->idle_wait_ || self->handshaking_) && self->queue_.empty()) self->close();
    });
  }

 private:
  void opened() {
    server_.connection_opened();
    beast::error_code ec;
    auto endpoint = lowest().socket().remote_endpoint(ec);
    if (!ec) remote_ip_ = endpoint.address().to_string();
  }

  beast::tcp_stream& lowest() { return beast::get_lowest_layer(stream_); }

  // The TLS handshake must end within the read timeout, as a request must.
  void handshake() {
    handshaking_ = true;
    lowest().expires_after(server_.options.read_timeout);
    stream_.async_handshake(net::ssl::stream_base::server,
                            [self = shared_from_this()](beast::error_code ec) {
                              self->handshaking_ = false;
                              if (ec) {
                                ++self->server_.tls_handshake_failures;
                                return self->close();
                              }
                              self->do_read();
                            });
  }

  struct Slot {
    Clock::time_point started;
    std::string wire;
    bool ready = false;
    bool close = false;
  };

  // Starts reading the next request. Before its first byte the idle timeout applies; from
  // the first byte, the whole request must arrive within the read timeout. Reading and
  // parsing are done by hand (read_some + parser.put) so each request costs one read.
  void do_read() {
    if (closing_ || reading_ || queue_.size() >= server_.options.pipeline_limit) return;
    reading_ = true;
    request_started_ = false;
    header_checked_ = false;
    parser_.emplace();
    parser_->header_limit(static_cast<std::uint32_t>(server_.options.header_limit));
    parser_->body_limit(server_.options.body_limit);
    if (buffer_.size() > 0) return parse_buffered();
    read_more();
  }

  void read_more() {
    if (request_started_) {
      lowest().expires_at(read_deadline_);
    } else {
      idle_wait_ = true;
      lowest().expires_after(server_.options.idle_timeout);
    }
    stream_.async_read_some(buffer_.prepare(kReadChunk),
                            [self = shared_from_this()](beast::error_code ec, std::size_t n) {
                              self->idle_wait_ = false;
                              if (ec) return self->close();  // timeout, EOF, reset
                              self->buffer_.commit(n);
                              self->parse_buffered();
                            });
  }

  void parse_buffered() {
    if (!request_started_) {
      request_started_ = true;
      started_ = Clock::now();
      read_deadline_ = started_ + server_.options.read_timeout;
    }
    for (;;) {
      beast::error_code ec;
      std::size_t used = parser_->put(buffer_.data(), ec);
      buffer_.consume(used);
      if (ec == bhttp::error::need_more) break;
      if (ec == bhttp::error::header_limit) {
        return reject(431, ErrorCode::kInvalidRequest, "The request headers are too large.");
      }
      if (ec == bhttp::error::body_limit) return reject_too_large();
      if (ec) return reject(400, ErrorCode::kInvalidRequest, "The request is not valid HTTP/1.1.");
      if (parser_->is_header_done() && !header_checked_) {
        header_checked_ = true;
        if (auto length = parser_->content_length();
            length && *length > server_.options.body_limit) {
          return reject_too_large();
        }
        parser_->eager(true);
      }
      if (parser_->is_done()) return on_request();
      if (used == 0) break;
    }
    if (parser_->is_header_done() && !continue_sent_ && buffer_.size() == 0) {
      auto expect = parser_->get()[bhttp::field::expect];
      if (beast::iequals(expect, "100-continue") && queue_.empty() && !writing_) {
        // curl and others wait for this before sending a large body.
        continue_sent_ = true;
        static const std::string kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
        writing_ = true;
        return net::async_write(stream_, net::buffer(kContinue),
                                [self = shared_from_this()](beast::error_code ec, std::size_t) {
                                  self->writing_ = false;
                                  if (ec) return self->close();
                                  self->read_more();
                                });
      }
    }
    read_more();
  }

  void reject_too_large() {
    reject(413, ErrorCode::kPayloadTooLarge,
           "The request body is larger than " + std::to_string(server_.options.body_limit) +
               " bytes.");
  }

  // Answers a request that could not be read whole, then closes: the rest of the stream
  // cannot be trusted to start at a message boundary.
  void reject(int status, ErrorCode code, std::string message) {
    reading_ = false;
    closing_ = true;
    Response r = error_response(code, std::move(message));
    r.status = status;
    r.close = true;
    std::string request_id = new_request_id();
    queue_.push_back({started_});
    Request view;
    view.method = Method::kOther;
    view.request_id = request_id;
    view.remote_ip = remote_ip_;
    view.secure = kTls;
    complete(next_seq_++, view, std::move(r), server_.metrics.unmatched_slot(), false);
  }

  void on_request() {
    reading_ = false;
    continue_sent_ = false;
    BeastRequest& message = parser_->get();
    std::uint64_t seq = next_seq_++;
    queue_.push_back({started_});

    bool keep_alive = message.keep_alive() && !closing_ && !server_.stopping.load();
    if (!keep_alive) closing_ = true;
    auto incoming_id = message["X-Request-Id"];
    std::string request_id =
        is_acceptable_request_id(std::string_view(incoming_id.data(), incoming_id.size()))
            ? std::string(incoming_id)
            : new_request_id();

    BeastHeaders headers(message.base());
    // Behind a trusted reverse proxy the client is named in X-Forwarded-For; the address
    // then lives in the request's own string, since the view only points at it.
    // Its X-Forwarded-Proto says whether the client reached it over TLS; anyone else's is
    // ignored, and the connection itself is plain HTTP.
    std::string forwarded_client;
    bool secure = kTls;
    const TrustedProxies* proxies = server_.options.trusted_proxies;
    if (proxies && !proxies->empty()) {
      // Every X-Forwarded-For line, joined in order (RFC 9110 5.3): a proxy that adds a
      // line of its own (HAProxy's option forwardfor) leaves the client's line first, and
      // reading only that one would take the client's word for who it is.
      std::string xff;
      auto [line, end] = message.equal_range("X-Forwarded-For");
      for (; line != end; ++line) {
        if (!xff.empty()) xff += ", ";
        xff.append(line->value().data(), line->value().size());
      }
      forwarded_client = proxies->client_address(remote_ip_, xff);
      if (proxies->contains(remote_ip_)) {
        // The proxy knows how the client reached it; when it does not say, this hop counts.
        if (auto proto = message["X-Forwarded-Proto"]; !proto.empty()) {
          secure = forwarded_proto_is_https(std::string_view(proto.data(), proto.size()));
        }
      }
    }
    std::string_view client_ip = forwarded_client.empty() ? std::string_view(remote_ip_)
                                                          : std::string_view(forwarded_client);
    Request view;
    fill_view(view, message, headers, request_id, client_ip, secure);
    RouteMatch match = server_.router.match(view.method, view.path);
    bool found = match.kind == RouteMatch::Kind::kFound;

    // Probes are never limited; everything else, matched or not, is charged.
    if (server_.options.rate_limiters && !(found && match.route->quiet)) {
      if (auto refused = admit(view, *server_.options.rate_limiters)) {
        std::size_t slot = found ? match.route->index : server_.metrics.unmatched_slot();
        complete(seq, view, std::move(*refused), slot, false);
        return do_read();
      }
    }

    if (found && match.route->execution == Execution::kInlineUnlessBlocked) {
      // Most of these answer from memory: try here, and hand the request to a worker only
      // if it would block (the attempt is abandoned; the route's handler has no effects
      // before its first blocking call).
      view.path_params = match.params;
      try {
        Response r;
        {
          NoBlockingScope no_blocking;
          r = invoke(*match.route, view);
        }
        ++server_.inline_answered;
        complete(seq, view, std::move(r), match.route->index, match.route->quiet);
        return do_read();
      } catch (const WouldBlock&) {
        ++server_.inline_diverted;
      }
    }
    if (found && match.route->execution != Execution::kInline) {
      auto owned = std::make_shared<OwnedRequest>(parser_->release());
      owned->request_id = std::move(request_id);
      owned->remote_ip = std::string(client_ip);
      fill_view(owned->view, owned->message, owned->headers, owned->request_id, owned->remote_ip,
                secure);
      owned->view.path_params = std::move(match.params);
      run_on_worker(std::move(owned), match.route, seq);
    } else {
      Response r;
      std::size_t slot = server_.metrics.unmatched_slot();
      bool quiet = false;
      if (match.kind == RouteMatch::Kind::kFound) {
        view.path_params = std::move(match.params);
        r = invoke(*match.route, view);
        slot = match.route->index;
        quiet = match.route->quiet;
      } else if (auto file = server_.statics ? server_.statics->serve(view) : std::nullopt) {
        r = std::move(*file);
        slot = server_.metrics.static_slot();
      } else if (match.kind == RouteMatch::Kind::kMethodNotAllowed) {
        r = method_not_allowed_response(match.allow);
      } else {
        r = not_found_response();
      }
      complete(seq, view, std::move(r), slot, quiet);
    }
    do_read();
  }

  // Runs a worker route's handler on the pool; its answer comes back to this strand.
  void run_on_worker(std::shared_ptr<OwnedRequest> owned, const Route* route, std::uint64_t seq) {
    bool posted = server_.workers.post([self = shared_from_this(), owned, route, seq] {
      Response r = invoke(*route, owned->view);
      net::post(self->stream_.get_executor(),
                [self, owned, route, seq, r = std::move(r)]() mutable {
                  self->on_worker_answer(owned, route, seq, std::move(r));
                });
    });
    if (!posted) {
      Response r =
          error_response(ErrorCode::kUnavailable, "The server is busy; try again shortly.");
      finish(*owned, route, seq, std::move(r));
    }
  }

  // A handler that answers CallAgain is called again after a pause, from a timer on this
  // strand, so no thread is held while the request waits; its slot keeps the response order.
  void on_worker_answer(const std::shared_ptr<OwnedRequest>& owned, const Route* route,
                        std::uint64_t seq, Response r) {
    if (!r.call_again) return finish(*owned, route, seq, std::move(r));
    if (server_.stopping.load()) return finish(*owned, route, seq, shutting_down_response());
    auto now = Clock::now();
    if (!owned->call_again_until) {
      owned->call_again_until = now + r.call_again->patience;
      owned->call_again_delay = r.call_again->delay;
      ++server_.requests_waiting;
    } else {
      owned->call_again_delay = std::min(owned->call_again_delay * 2, r.call_again->max_delay);
    }
    // Patience spent: this answer goes out. Otherwise the last pause is cut to what is left
    // of it, so a long-poll looks once more at its deadline rather than giving up early.
    if (now >= *owned->call_again_until) return finish(*owned, route, seq, std::move(r));
    auto pause = std::min<Clock::duration>(owned->call_again_delay, *owned->call_again_until - now);
    if (!lowest().socket().is_open()) return stop_waiting(*owned);  // the client is gone
    auto timer = waits_.emplace(waits_.end(), stream_.get_executor());
    timer->expires_after(pause);
    timer->async_wait([self = shared_from_this(), timer, owned, route, seq](beast::error_code) {
      self->waits_.erase(timer);
      // Cancelled only by on_shutdown.
      if (self->server_.stopping.load()) {
        return self->finish(*owned, route, seq, shutting_down_response());
      }
      if (!self->lowest().socket().is_open()) return self->stop_waiting(*owned);
      self->run_on_worker(owned, route, seq);
    });
  }

  void stop_waiting(OwnedRequest& owned) {
    if (owned.call_again_until) --server_.requests_waiting;
    owned.call_again_until.reset();
  }

  void finish(OwnedRequest& owned, const Route* route, std::uint64_t seq, Response r) {
    stop_waiting(owned);
    r.call_again.reset();
    complete(seq, owned.view, std::move(r), route->index, route->quiet);
  }

  // Runs on the session's strand: serialises the response into its slot, records it,
  // and writes whatever is now at the front of the queue.
  void complete(std::uint64_t seq, const Request& view, Response r, std::size_t metric_slot,
                bool quiet) {
    Slot& slot = queue_[seq - base_seq_];
    auto latency = Clock::now() - slot.started;
    // HSTS (RFC 6797) means something only over TLS; over plain HTTP it must not be sent.
    if (view.secure && server_.options.hsts_max_age.count() > 0) {
      r.set_header("Strict-Transport-Security",
                   "max-age=" + std::to_string(server_.options.hsts_max_age.count()));
    }
    // The last queued response of a closing connection says so.
    bool keep_alive = !(closing_ && seq + 1 == next_seq_);
    serialize_response(r, view.request_id, keep_alive && !r.close, view.method == Method::kHead,
                       slot.wire);
    slot.ready = true;
    slot.close = !keep_alive || r.close;
    if (slot.close) closing_ = true;
    server_.metrics.record(metric_slot, method_name(view.method).data(), r.status, latency);
    log_access(view, r.status, latency, quiet);
    write_front();
  }

  void write_front() {
    if (writing_ || queue_.empty() || !queue_.front().ready) return;
    writing_ = true;
    lowest().expires_after(server_.options.write_timeout);
    net::async_write(
        stream_, net::buffer(queue_.front().wire),
        [self = shared_from_this()](beast::error_code ec, std::size_t) { self->on_write(ec); });
  }

  void on_write(beast::error_code ec) {
    writing_ = false;
    if (ec) return close();
    bool close_now = queue_.front().close;
    queue_.pop_front();
    ++base_seq_;
    if (close_now) return linger_close();
    if (!queue_.empty()) return write_front();
    if (closing_) return linger_close();
    do_read();
  }

  void close() {
    beast::error_code ec;
    lowest().socket().shutdown(tcp::socket::shutdown_send, ec);
    lowest().close();
  }

  // Closes after a final response without resetting the connection: the client may still
  // be sending (a body we refused), and closing with unread bytes would make the kernel
  // send RST, which can destroy our response before the client reads it. So stop sending,
  // then read and discard for a moment until the client closes its side.
  // Over TLS the same moment is spent in the closing handshake: close_notify sent, the
  // client's awaited (or its EOF), then the socket closed.
  void linger_close() {
    if (reading_) return close();  // a read is outstanding; a second one is not allowed
    lowest().expires_after(std::chrono::seconds(2));
    if constexpr (kTls) {
      stream_.async_shutdown([self = shared_from_this()](beast::error_code) { self->close(); });
    } else {
      beast::error_code ec;
      lowest().socket().shutdown(tcp::socket::shutdown_send, ec);
      if (ec) return lowest().close();
      drain();
    }
  }

  void drain() {
    buffer_.clear();
    lowest().async_read_some(buffer_.prepare(65536),
                             [self = shared_from_this()](beast::error_code ec, std::size_t n) {
                               if (ec || (self->drained_ += n) > kMaxDrain) {
                                 return self->lowest().close();
                               }
                               self->drain();
                             });
  }

  static constexpr std::size_t kMaxDrain = 16 * 1024 * 1024;

  std::shared_ptr<net::ssl::context> tls_;  // TlsStream's context; declared before stream_
  Stream stream_;
  HttpServer::Impl& server_;
  beast::flat_buffer buffer_;
  std::optional<bhttp::request_parser<bhttp::string_body>> parser_;
  std::deque<Slot> queue_;              // responses in request order; front is next to write
  std::list<net::steady_timer> waits_;  // requests waiting to be called again
  std::uint64_t base_seq_ = 0;          // sequence number of queue_.front()
  std::uint64_t next_seq_ = 0;
  Clock::time_point started_;
  std::string remote_ip_;
  static constexpr std::size_t kReadChunk = 8192;
  Clock::time_point read_deadline_;
  bool request_started_ = false;
  bool header_checked_ = false;
  bool continue_sent_ = false;
  std::size_t drained_ = 0;
  bool reading_ = false;
  bool idle_wait_ = false;
  bool writing_ = false;
  bool closing_ = false;
  bool handshaking_ = false;
};

}  // namespace

void HttpServer::Impl::accept() {
  acceptor.async_accept(net::make_strand(ioc), [this](beast::error_code ec, tcp::socket socket) {
    if (ec) {
      if (!acceptor.is_open()) return;  // closed for shutdown
      return on_accept_error(ec);
    }
    if (failed_accepts_in_a_row > 0) {
      log::info("accepting connections again after {} failed accepts", failed_accepts_in_a_row);
      failed_accepts_in_a_row = 0;
    }
    // Sessions are created only here, one at a time, so the count never passes the limit.
    if (connections_open.load() >= options.max_connections) {
      refuse(socket);
    } else {
      if (refusals_in_a_row > 0) {
        log::info("accepting connections again; {} refused at the limit of {}", refusals_in_a_row,
                  options.max_connections);
        refusals_in_a_row = 0;
      }
      ++connections_accepted;
      beast::error_code ignored;
      socket.set_option(tcp::no_delay(true), ignored);
      if (auto context = current_tls()) {
        std::make_shared<Session<TlsStream>>(std::move(socket), std::move(context), *this)->start();
      } else {
        std::make_shared<Session<PlainStream>>(std::move(socket), *this)->start();
      }
    }
    accept();
  });
}

// Out of descriptors (EMFILE, ENFILE) or memory, the pending connection stays queued, and
// accepting again at once would fail again at once and spin a network thread. So the
// listener pauses briefly and tries again until connections have closed; it never stops.
void HttpServer::Impl::on_accept_error(const beast::error_code& ec) {
  ++accept_errors;
  // A connection reset while still queued: nothing to wait for.
  if (ec == net::error::connection_aborted) return accept();
  if (failed_accepts_in_a_row++ == 0) {
    log::warn("accept failed: {}; retrying every {} ms", ec.message(), kAcceptBackoff.count());
  }
  accept_retry_timer.expires_after(kAcceptBackoff);
  accept_retry_timer.async_wait([this](beast::error_code) {
    if (acceptor.is_open()) accept();
  });
}

// Over the connection limit: a 503 written once without waiting, then close, so a refused
// connection holds its descriptor only for these few calls. Best effort: request bytes that
// arrive after the close make the kernel reset the connection, which can overtake the 503;
// bytes already here are read first for that reason.
void HttpServer::Impl::refuse(tcp::socket& socket) {
  ++connections_refused;
  if (refusals_in_a_row++ == 0) {
    log::warn("connection limit of {} reached: refusing new connections with 503",
              options.max_connections);
  }
  beast::error_code ec;
  if (current_tls()) {
    // A TLS client cannot read a plain 503, and a handshake would hold the descriptor the
    // limit protects: the connection is closed unanswered.
    socket.close(ec);
    return;
  }
  socket.non_blocking(true, ec);
  std::array<char, 4096> sink;
  for (std::size_t read = 0; !ec && read < 64 * 1024;) {
    read += socket.read_some(net::buffer(sink), ec);
  }
  Response r =
      error_response(ErrorCode::kUnavailable, "The server has too many connections; try again.");
  std::string wire;
  serialize_response(r, new_request_id(), false, false, wire);
  socket.write_some(net::buffer(wire), ec);
  socket.shutdown(tcp::socket::shutdown_send, ec);
  socket.close(ec);
}

void HttpServer::Impl::begin_shutdown() {
  if (stopping.exchange(true)) return;
  if (options.on_shutdown) options.on_shutdown();
  log::info("shutting down: no new connections; waiting up to {} ms for in-flight requests",
            options.shutdown_deadline.count());
  net::post(acceptor.get_executor(), [this] {
    beast::error_code ec;
    acceptor.close(ec);
    accept_retry_timer.cancel();
  });
  std::vector<std::shared_ptr<SessionBase>> live;
  {
    std::lock_guard lock(sessions_mutex);
    for (auto& [_, weak] : sessions) {
      if (auto s = weak.lock()) live.push_back(std::move(s));
    }
  }
  for (auto& s : live) s->on_shutdown();
  drain_deadline = Clock::now() + options.shutdown_deadline;
  net::post(ioc, [this] { check_drained(); });
}

void HttpServer::Impl::check_drained() {
  std::size_t open = 0;
  {
    std::lock_guard lock(sessions_mutex);
    open = sessions.size();
  }
  if (open == 0 || Clock::now() >= drain_deadline) {
    if (open > 0) log::warn("shutdown deadline passed with {} connections open", open);
    signals.cancel();
    reload_signals.cancel();
    ioc.stop();
    return;
  }
  drain_timer.expires_after(std::chrono::milliseconds(20));
  drain_timer.async_wait([this](beast::error_code) { check_drained(); });
}

std::string HttpServer::Impl::reload_tls() {
  if (options.tls_certificate.empty()) return "HTTPS is not configured: nothing to reload";
  try {
    auto context = std::make_shared<net::ssl::context>(
        make_server_tls_context(options.tls_certificate, options.tls_key).release());
    auto not_after =
        std::chrono::system_clock::to_time_t(certificate_not_after(context->native_handle()));
    {
      std::lock_guard lock(tls_mutex);
      tls = std::move(context);
    }
    tls_not_after = static_cast<long long>(not_after);
    ++tls_reloads;
    return {};
  } catch (const ConfigError& e) {
    ++tls_reload_failures;
    return e.what();
  }
}

// SIGHUP: the certificate and key are read again (a renewal); a signal the process would
// otherwise die of, so it is taken whether or not HTTPS is on.
void HttpServer::Impl::await_reload_signal() {
  reload_signals.async_wait([this](beast::error_code ec, int) {
    if (ec) return;
    if (options.tls_certificate.empty()) {
      log::info("SIGHUP: HTTPS is not configured; nothing to reload");
    } else if (std::string problem = reload_tls(); problem.empty()) {
      log::info("SIGHUP: TLS certificate {} reloaded for new connections", options.tls_certificate);
    } else {
      log::error("SIGHUP: TLS certificate not reloaded, the one in service stays: {}", problem);
    }
    await_reload_signal();
  });
}

HttpServer::HttpServer(ServerOptions options, const Router& router, Metrics& metrics,
                       WorkerPool& workers, const StaticFiles* static_files)
    : impl_(std::make_unique<Impl>(std::move(options), router, metrics, workers, static_files)) {}

HttpServer::~HttpServer() = default;

unsigned short HttpServer::listen() {
  if (!impl_->options.tls_certificate.empty()) {
    if (std::string problem = impl_->reload_tls(); !problem.empty()) throw ConfigError(problem);
    impl_->tls_reloads = 0;  // the first load is not a reload
  }
  auto& a = impl_->acceptor;
  ensure_descriptors(impl_->options.max_connections);
  beast::error_code ec;
  auto address = net::ip::make_address(impl_->options.host, ec);
  if (ec) throw ConfigError("listen address '" + impl_->options.host + "' is not an IP address");
  tcp::endpoint endpoint(address, impl_->options.port);
  a.open(endpoint.protocol(), ec);
  if (!ec) a.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) a.bind(endpoint, ec);
  if (!ec) a.listen(net::socket_base::max_listen_connections, ec);
  if (ec) {
    throw ConfigError("cannot listen on " + impl_->options.host + ":" +
                      std::to_string(impl_->options.port) + ": " + ec.message());
  }
  return a.local_endpoint().port();
}

void HttpServer::run() {
  impl_->signals.async_wait([this](beast::error_code ec, int signal) {
    if (ec) return;
    log::info("received signal {}", signal);
    impl_->begin_shutdown();
  });
  impl_->await_reload_signal();
  impl_->accept();
  std::vector<std::thread> threads;
  for (int i = 1; i < impl_->options.io_threads; ++i) {
    threads.emplace_back([this] { impl_->ioc.run(); });
  }
  impl_->ioc.run();
  for (auto& t : threads) t.join();
}

std::string HttpServer::reload_tls() {
  return impl_->reload_tls();
}

void HttpServer::shutdown() {
  impl_->begin_shutdown();
}

bool HttpServer::responsive(std::chrono::milliseconds timeout) {
  auto ran = std::make_shared<std::promise<void>>();
  auto answered = ran->get_future();
  net::post(impl_->ioc, [ran] { ran->set_value(); });
  return answered.wait_for(timeout) == std::future_status::ready;
}

bool HttpServer::shutting_down() const {
  return impl_->stopping.load();
}

std::size_t HttpServer::open_connections() const {
  std::lock_guard lock(impl_->sessions_mutex);
  return impl_->sessions.size();
}

HttpServerStats HttpServer::stats() const {
  return {.connections_open = impl_->connections_open.load(),
          .connections_peak = impl_->connections_peak.load(),
          .connections_max = impl_->options.max_connections,
          .connections_accepted_total = impl_->connections_accepted.load(),
          .connections_refused_total = impl_->connections_refused.load(),
          .accept_errors_total = impl_->accept_errors.load(),
          .requests_waiting = impl_->requests_waiting.load(),
          .inline_answered_total = impl_->inline_answered.load(),
          .inline_diverted_total = impl_->inline_diverted.load(),
          .tls = !impl_->options.tls_certificate.empty(),
          .tls_reloads_total = impl_->tls_reloads.load(),
          .tls_reload_failures_total = impl_->tls_reload_failures.load(),
          .tls_handshake_failures_total = impl_->tls_handshake_failures.load(),
          .tls_certificate_not_after = impl_->tls_not_after.load()};
}

}  // namespace gpurent::http
