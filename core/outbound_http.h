// One HTTP/1.1 request and its answer over a stream the caller connected (plain TCP or TLS),
// within a deadline and a body limit, on the caller's own io_context and thread: what the
// platform's outbound clients share — the webhooks' deliveries (webhooks/http_sender.cpp) and
// the BMCs' Redfish (bmc/redfish_client.cpp). Each tells its own callers what an ending means;
// this says only how the exchange ended.
//
// Header-only and Beast-heavy: include it only from those clients' .cpp files, which already
// hold Beast, so that no other translation unit pays for it.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>

#include <chrono>
#include <cstdint>

namespace gpurent::outbound_http {

using SteadyClock = std::chrono::steady_clock;

// Runs `ioc` until `done` or the deadline; false on the deadline (the caller then closes its
// socket, which cancels what is pending).
inline bool run_until(boost::asio::io_context& ioc, const bool& done,
                      SteadyClock::time_point deadline) {
  ioc.restart();
  while (!done) {
    auto now = SteadyClock::now();
    if (now >= deadline) return false;
    if (ioc.run_one_for(deadline - now) == 0 && ioc.stopped()) break;
  }
  return done;
}

enum class Ending {
  kAnswered,       // a whole answer within the limits; the connection shut down
  kWriteTimedOut,  // the deadline came while sending (the socket is closed)
  kWriteFailed,    // `error` says why
  kReadTimedOut,   // the deadline came while reading (the socket is closed)
  kReadFailed,     // `error` says why; the parser may hold a status line read before it
};

struct Exchange {
  Ending ending = Ending::kAnswered;
  boost::beast::error_code error;
  boost::beast::http::response_parser<boost::beast::http::string_body> parser;
};

// A client's TLS handshake within the deadline, the stream's verification set by the caller:
// kTimedOut (the socket is then closed), kFailed (`error` says why, an untrusted certificate
// among the reasons) or kDone.
enum class Handshake { kDone, kTimedOut, kFailed };
template <typename Stream>
Handshake handshake(boost::asio::io_context& ioc, boost::beast::ssl_stream<Stream>& tls,
                    SteadyClock::time_point deadline, boost::beast::error_code& error) {
  namespace beast = boost::beast;
  bool shaken = false;
  tls.async_handshake(boost::asio::ssl::stream_base::client, [&](beast::error_code e) {
    error = e;
    shaken = true;
  });
  if (!run_until(ioc, shaken, deadline)) {
    beast::error_code closed;
    beast::get_lowest_layer(tls).socket().close(closed);
    return Handshake::kTimedOut;
  }
  return error ? Handshake::kFailed : Handshake::kDone;
}

// Sends `request` and reads the answer, its body at most `body_limit` bytes, into `out`.
template <typename Stream>
void exchange(boost::asio::io_context& ioc, Stream& stream,
              boost::beast::http::request<boost::beast::http::string_body>& request,
              SteadyClock::time_point deadline, std::uint64_t body_limit, Exchange& out) {
  namespace beast = boost::beast;
  namespace http = beast::http;
  beast::error_code closed;
  bool written = false;
  http::async_write(stream, request, [&](beast::error_code e, std::size_t) {
    out.error = e;
    written = true;
  });
  if (!run_until(ioc, written, deadline)) {
    beast::get_lowest_layer(stream).socket().close(closed);
    out.ending = Ending::kWriteTimedOut;
    return;
  }
  if (out.error) {
    out.ending = Ending::kWriteFailed;
    return;
  }
  beast::flat_buffer buffer;
  out.parser.body_limit(body_limit);
  bool read = false;
  http::async_read(stream, buffer, out.parser, [&](beast::error_code e, std::size_t) {
    out.error = e;
    read = true;
  });
  if (!run_until(ioc, read, deadline)) {
    beast::get_lowest_layer(stream).socket().close(closed);
    out.ending = Ending::kReadTimedOut;
    return;
  }
  if (out.error) {
    out.ending = Ending::kReadFailed;
    return;
  }
  beast::get_lowest_layer(stream).socket().shutdown(boost::asio::ip::tcp::socket::shutdown_both,
                                                    closed);
  out.ending = Ending::kAnswered;
}

}  // namespace gpurent::outbound_http
