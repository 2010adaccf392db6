// Beast-based listener and per-connection sessions: timeouts before every read and write,
// a fresh parser per message, bounded pipelining, graceful shutdown. The only translation
// unit that includes Beast and Asio.
#include "api/http_server.h"

#include "api/dispatch.h"
#include "api/rate_limiter.h"
#include "api/responses.h"
#include "api/wire.h"
#include "core/error.h"
#include "core/id.h"

#include <spdlog/spdlog.h>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>

#include <atomic>
#include <deque>
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

class Session;

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
};

void fill_view(Request& view, const BeastRequest& message, const HeaderSource& headers,
               std::string_view request_id, std::string_view remote_ip) {
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
        signals(ioc, SIGINT, SIGTERM),
        drain_timer(ioc) {}

  void accept();
  void begin_shutdown();
  void check_drained();

  void add(Session* s, std::weak_ptr<Session> w) {
    std::lock_guard lock(sessions_mutex);
    sessions.emplace(s, std::move(w));
  }
  void remove(Session* s) {
    std::lock_guard lock(sessions_mutex);
    sessions.erase(s);
  }

  ServerOptions options;
  const Router& router;
  Metrics& metrics;
  WorkerPool& workers;
  const StaticFiles* statics;

  net::io_context ioc;
  tcp::acceptor acceptor;
  net::signal_set signals;
  net::steady_timer drain_timer;
  Clock::time_point drain_deadline;
  std::atomic<bool> stopping{false};

  mutable std::mutex sessions_mutex;
  std::unordered_map<Session*, std::weak_ptr<Session>> sessions;
};

namespace {

class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket&& socket, HttpServer::Impl& server)
      : stream_(std::move(socket)), server_(server) {
    beast::error_code ec;
    auto endpoint = stream_.socket().remote_endpoint(ec);
    if (!ec) remote_ip_ = endpoint.address().to_string();
  }

  ~Session() { server_.remove(this); }

  void start() {
    server_.add(this, weak_from_this());
    net::dispatch(stream_.get_executor(), [self = shared_from_this()] { self->do_read(); });
  }

  // Called on shutdown: finish what is in flight, accept nothing new.
  void on_shutdown() {
    net::dispatch(stream_.get_executor(), [self = shared_from_this()] {
      self->closing_ = true;
      if (self->idle_wait_ && self->queue_.empty()) self->close();
    });
  }

 private:
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
      stream_.expires_at(read_deadline_);
    } else {
      idle_wait_ = true;
      stream_.expires_after(server_.options.idle_timeout);
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
    std::string forwarded_client;
    const TrustedProxies* proxies = server_.options.trusted_proxies;
    if (proxies && !proxies->empty()) {
      auto xff = message["X-Forwarded-For"];
      forwarded_client =
          proxies->client_address(remote_ip_, std::string_view(xff.data(), xff.size()));
    }
    std::string_view client_ip = forwarded_client.empty() ? std::string_view(remote_ip_)
                                                          : std::string_view(forwarded_client);
    Request view;
    fill_view(view, message, headers, request_id, client_ip);
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

    if (match.kind == RouteMatch::Kind::kFound && match.route->execution == Execution::kWorker) {
      auto owned = std::make_shared<OwnedRequest>(parser_->release());
      owned->request_id = std::move(request_id);
      owned->remote_ip = std::string(client_ip);
      fill_view(owned->view, owned->message, owned->headers, owned->request_id, owned->remote_ip);
      owned->view.path_params = std::move(match.params);
      const Route* route = match.route;
      bool posted = server_.workers.post([self = shared_from_this(), owned, route, seq] {
        Response r = invoke(*route, owned->view);
        net::post(self->stream_.get_executor(),
                  [self, owned, route, seq, r = std::move(r)]() mutable {
                    self->complete(seq, owned->view, std::move(r), route->index, route->quiet);
                  });
      });
      if (!posted) {
        Response r =
            error_response(ErrorCode::kUnavailable, "The server is busy; try again shortly.");
        r.set_header("Retry-After", "1");
        complete(seq, owned->view, std::move(r), route->index, route->quiet);
      }
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

  // Runs on the session's strand: serialises the response into its slot, records it,
  // and writes whatever is now at the front of the queue.
  void complete(std::uint64_t seq, const Request& view, Response r, std::size_t metric_slot,
                bool quiet) {
    Slot& slot = queue_[seq - base_seq_];
    auto latency = Clock::now() - slot.started;
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
    stream_.expires_after(server_.options.write_timeout);
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
    stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
    stream_.close();
  }

  // Closes after a final response without resetting the connection: the client may still
  // be sending (a body we refused), and closing with unread bytes would make the kernel
  // send RST, which can destroy our response before the client reads it. So stop sending,
  // then read and discard for a moment until the client closes its side.
  void linger_close() {
    if (reading_) return close();  // a read is outstanding; a second one is not allowed
    beast::error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
    if (ec) return stream_.close();
    stream_.expires_after(std::chrono::seconds(2));
    drain();
  }

  void drain() {
    buffer_.clear();
    stream_.async_read_some(buffer_.prepare(65536),
                            [self = shared_from_this()](beast::error_code ec, std::size_t n) {
                              if (ec || (self->drained_ += n) > kMaxDrain) {
                                return self->stream_.close();
                              }
                              self->drain();
                            });
  }

  static constexpr std::size_t kMaxDrain = 16 * 1024 * 1024;

  beast::tcp_stream stream_;
  HttpServer::Impl& server_;
  beast::flat_buffer buffer_;
  std::optional<bhttp::request_parser<bhttp::string_body>> parser_;
  std::deque<Slot> queue_;      // responses in request order; front is next to write
  std::uint64_t base_seq_ = 0;  // sequence number of queue_.front()
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
};

}  // namespace

void HttpServer::Impl::accept() {
  acceptor.async_accept(net::make_strand(ioc), [this](beast::error_code ec, tcp::socket socket) {
    if (ec) {
      if (!acceptor.is_open()) return;  // closed for shutdown
      spdlog::warn("accept failed: {}", ec.message());
    } else {
      beast::error_code ignored;
      socket.set_option(tcp::no_delay(true), ignored);
      std::make_shared<Session>(std::move(socket), *this)->start();
    }
    accept();
  });
}

void HttpServer::Impl::begin_shutdown() {
  if (stopping.exchange(true)) return;
  spdlog::info("shutting down: no new connections; waiting up to {} ms for in-flight requests",
               options.shutdown_deadline.count());
  net::post(acceptor.get_executor(), [this] {
    beast::error_code ec;
    acceptor.close(ec);
  });
  std::vector<std::shared_ptr<Session>> live;
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
    if (open > 0) spdlog::warn("shutdown deadline passed with {} connections open", open);
    signals.cancel();
    ioc.stop();
    return;
  }
  drain_timer.expires_after(std::chrono::milliseconds(20));
  drain_timer.async_wait([this](beast::error_code) { check_drained(); });
}

HttpServer::HttpServer(ServerOptions options, const Router& router, Metrics& metrics,
                       WorkerPool& workers, const StaticFiles* static_files)
    : impl_(std::make_unique<Impl>(std::move(options), router, metrics, workers, static_files)) {}

HttpServer::~HttpServer() = default;

unsigned short HttpServer::listen() {
  auto& a = impl_->acceptor;
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
    spdlog::info("received signal {}", signal);
    impl_->begin_shutdown();
  });
  impl_->accept();
  std::vector<std::thread> threads;
  for (int i = 1; i < impl_->options.io_threads; ++i) {
    threads.emplace_back([this] { impl_->ioc.run(); });
  }
  impl_->ioc.run();
  for (auto& t : threads) t.join();
}

void HttpServer::shutdown() {
  impl_->begin_shutdown();
}

bool HttpServer::shutting_down() const {
  return impl_->stopping.load();
}

std::size_t HttpServer::open_connections() const {
  std::lock_guard lock(impl_->sessions_mutex);
  return impl_->sessions.size();
}

}  // namespace gpurent::http
