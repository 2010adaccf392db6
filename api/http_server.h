// The HTTP/1.1 server (Boost.Beast underneath; this header keeps Beast out of its users).
#pragma once

#include "api/metrics.h"
#include "api/router.h"
#include "api/static_files.h"
#include "core/trusted_proxies.h"
#include "core/worker_pool.h"

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace gpurent::http {

struct RateLimiters;

struct ServerOptions {
  std::string host = "127.0.0.1";
  unsigned short port = 8080;
  int io_threads = 2;
  std::size_t body_limit = 1024 * 1024;
  std::size_t header_limit = 16 * 1024;
  std::chrono::milliseconds read_timeout{10'000};
  std::chrono::milliseconds write_timeout{10'000};
  std::chrono::milliseconds idle_timeout{60'000};
  std::size_t pipeline_limit = 8;
  // Open connections at most; one more is answered 503 and closed at once.
  std::size_t max_connections = 1024;
  std::chrono::milliseconds shutdown_deadline{15'000};
  // HTTPS: PEM files of the certificate (chain after it) and its key, both set; both empty
  // serves plain HTTP. SIGHUP reloads them (reload_tls).
  std::string tls_certificate;
  std::string tls_key;
  // Strict-Transport-Security's max-age on responses to requests that came over TLS, to this
  // listener or to a trusted proxy (Request::secure); 0: none.
  std::chrono::seconds hsts_max_age{0};
  RateLimiters* rate_limiters = nullptr;  // none: nothing is limited
  // Peers whose X-Forwarded-For names the client; none or empty: the peer is the client.
  const TrustedProxies* trusted_proxies = nullptr;
  // Called once, on whichever thread starts the shutdown, before connections drain.
  std::function<void()> on_shutdown;
};

// What /metrics shows of the listener and its connections.
struct HttpServerStats {
  std::size_t connections_open = 0;
  std::size_t connections_peak = 0;  // the most open at once since start
  std::size_t connections_max = 0;   // the configured limit
  std::uint64_t connections_accepted_total = 0;
  std::uint64_t connections_refused_total = 0;  // over the limit: 503 and closed
  std::uint64_t accept_errors_total = 0;        // out of descriptors, memory, ...
  std::size_t requests_waiting = 0;             // waiting off the workers (CallAgain)
  // kInlineUnlessBlocked requests answered on the network thread, and those that would
  // have blocked there and were run on a worker instead.
  std::uint64_t inline_answered_total = 0;
  std::uint64_t inline_diverted_total = 0;
  // HTTPS only: certificate reloads (SIGHUP) done and refused, handshakes that failed (a
  // client speaking plain HTTP, an old TLS version, a scanner), and when the certificate
  // served now expires (seconds since the epoch).
  bool tls = false;
  std::uint64_t tls_reloads_total = 0;
  std::uint64_t tls_reload_failures_total = 0;
  std::uint64_t tls_handshake_failures_total = 0;
  long long tls_certificate_not_after = 0;
};

class HttpServer {
 public:
  HttpServer(ServerOptions options, const Router& router, Metrics& metrics, WorkerPool& workers,
             const StaticFiles* static_files);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds and listens; returns the bound port (useful with port 0). Throws ConfigError
  // when the address cannot be bound, or when HTTPS is asked for and the certificate or key
  // cannot be used.
  unsigned short listen();

  // HTTPS: reads the certificate and key files again, for connections accepted from now on;
  // open connections keep the ones they were made with, so none is dropped. When the files
  // cannot be used the ones in service stay, and this says why (logged too); empty on
  // success. SIGHUP calls it. Any thread.
  std::string reload_tls();

  // Serves until shutdown completes: on SIGINT/SIGTERM or shutdown(), stops accepting,
  // lets in-flight requests finish until the deadline, then returns.
  void run();

  // Starts a graceful shutdown; safe from any thread.
  void shutdown();
  bool shutting_down() const;
  // Whether the network threads run a posted task within `timeout` (the service watchdog's
  // question: a loop stuck on a blocking call answers nothing). Any thread.
  bool responsive(std::chrono::milliseconds timeout);
  std::size_t open_connections() const;
  HttpServerStats stats() const;

  struct Impl;  // defined with the Beast code

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace gpurent::http
