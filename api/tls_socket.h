// A TLS stream for the agent listener's many long-lived, mostly idle connections: OpenSSL
// reads and writes the socket itself (SSL_set_fd) and Asio only waits for readiness, so a
// connection holds no buffers of its own between records — OpenSSL's are released when
// empty (SSL_MODE_RELEASE_BUFFERS on the context). Asio's ssl::stream instead keeps two
// 17 KiB record buffers per connection, zero-filled at construction, and talks to OpenSSL
// through a BIO pair with two more: most of what a channel cost (docs/PERFORMANCE.md,
// "10,000 agents").
//
// An AsyncStream for Beast (HTTP and WebSocket): async_read_some, async_write_some, the
// handshake and a close_notify. Operations on one TlsSocket must run on one strand (the
// socket's executor), as with any Asio stream; one read and one write may be outstanding at
// once. Included by api/agent_listener.cpp alone, as Beast is.
#pragma once

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <boost/asio/async_result.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/beast/core/async_base.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/core/role.hpp>
#include <boost/beast/websocket/teardown.hpp>

#include <cerrno>
#include <cstddef>
#include <memory>
#include <string>
#include <utility>

namespace gpurent::http {

class TlsSocket {
 public:
  using next_layer_type = boost::asio::ip::tcp::socket;
  using executor_type = next_layer_type::executor_type;

  // A server-side connection over `socket` with `ctx`'s certificates and verification.
  // Throws std::runtime_error when OpenSSL cannot make the connection's state.
  TlsSocket(next_layer_type socket, SSL_CTX* ctx) : socket_(std::move(socket)), ssl_(SSL_new(ctx)) {
    if (!ssl_) throw std::runtime_error("SSL_new failed");
    boost::system::error_code ec;
    socket_.non_blocking(true, ec);
    SSL_set_fd(ssl_.get(), static_cast<int>(socket_.native_handle()));
    SSL_set_accept_state(ssl_.get());
    // A write may be retried with the same bytes at another address (the operation below
    // is moved between waits) and may complete in part.
    SSL_set_mode(ssl_.get(), SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  }
  TlsSocket(TlsSocket&&) = default;
  TlsSocket& operator=(TlsSocket&&) = default;

  executor_type get_executor() { return socket_.get_executor(); }
  next_layer_type& next_layer() { return socket_; }
  next_layer_type& socket() { return socket_; }
  SSL* native_handle() { return ssl_.get(); }

  template <typename Handler>
  auto async_handshake(Handler&& handler) {
    return boost::asio::async_initiate<Handler, void(boost::beast::error_code)>(
        [this](auto&& h) {
          using H = std::decay_t<decltype(h)>;
          Operation<H, Handshake>(std::move(h), *this, Handshake{});
        },
        handler);
  }

  template <typename MutableBufferSequence, typename Handler>
  auto async_read_some(const MutableBufferSequence& buffers, Handler&& handler) {
    return boost::asio::async_initiate<Handler, void(boost::beast::error_code, std::size_t)>(
        [this](auto&& h, boost::asio::mutable_buffer buffer) {
          using H = std::decay_t<decltype(h)>;
          Operation<H, Read>(std::move(h), *this, Read{buffer});
        },
        handler, first_buffer(buffers));
  }

  template <typename ConstBufferSequence, typename Handler>
  auto async_write_some(const ConstBufferSequence& buffers, Handler&& handler) {
    return boost::asio::async_initiate<Handler, void(boost::beast::error_code, std::size_t)>(
        [this](auto&& h, Write write) {
          using H = std::decay_t<decltype(h)>;
          Operation<H, Write>(std::move(h), *this, std::move(write));
        },
        handler, Write::of(buffers));
  }

  // Sends TLS's close_notify if the socket takes it now; never waits (the peer may be gone).
  void close_notify() {
    if (ssl_ && SSL_is_init_finished(ssl_.get())) {
      ERR_clear_error();
      SSL_shutdown(ssl_.get());
      ERR_clear_error();
    }
  }

 private:
  struct SslFree {
    void operator()(SSL* ssl) const { SSL_free(ssl); }
  };

  // Each step calls OpenSSL once: > 0 is done (with `n` bytes), otherwise SSL_get_error says
  // whether to wait for the socket or fail.
  struct Handshake {
    int operator()(SSL* ssl, std::size_t& n) const {
      n = 0;
      return SSL_do_handshake(ssl);
    }
  };
  struct Read {
    boost::asio::mutable_buffer buffer;
    int operator()(SSL* ssl, std::size_t& n) const {
      n = 0;
      if (buffer.size() == 0) return 1;
      return SSL_read_ex(ssl, buffer.data(), buffer.size(), &n);
    }
  };
  // One TLS record's worth at most, gathered from the sequence: a WebSocket frame's header
  // and payload go out in one record rather than two.
  struct Write {
    static constexpr std::size_t kMaxRecord = 16 * 1024;
    boost::asio::const_buffer single;
    std::string gathered;  // when the sequence has more than one non-empty buffer

    template <typename ConstBufferSequence>
    static Write of(const ConstBufferSequence& buffers) {
      Write w;
      int parts = 0;
      for (auto it = boost::asio::buffer_sequence_begin(buffers);
           it != boost::asio::buffer_sequence_end(buffers); ++it) {
        boost::asio::const_buffer b(*it);
        if (b.size() == 0) continue;
        if (++parts == 1) {
          w.single = b;
          continue;
        }
        if (parts == 2)
          w.gathered.assign(static_cast<const char*>(w.single.data()), w.single.size());
        if (w.gathered.size() >= kMaxRecord) break;
        std::size_t take = std::min(b.size(), kMaxRecord - w.gathered.size());
        w.gathered.append(static_cast<const char*>(b.data()), take);
      }
      return w;
    }
    int operator()(SSL* ssl, std::size_t& n) const {
      n = 0;
      const void* data = gathered.empty() ? single.data() : gathered.data();
      std::size_t size = gathered.empty() ? single.size() : gathered.size();
      if (size == 0) return 1;
      return SSL_write_ex(ssl, data, size, &n);
    }
  };

  template <typename MutableBufferSequence>
  static boost::asio::mutable_buffer first_buffer(const MutableBufferSequence& buffers) {
    for (auto it = boost::asio::buffer_sequence_begin(buffers);
         it != boost::asio::buffer_sequence_end(buffers); ++it) {
      boost::asio::mutable_buffer b(*it);
      if (b.size() > 0) return b;
    }
    return {};
  }

  static boost::beast::error_code error_of(SSL* ssl, int ret, int error) {
    namespace net = boost::asio;
    if (error == SSL_ERROR_ZERO_RETURN) return net::error::eof;
    unsigned long code = ERR_get_error();
    ERR_clear_error();
    if (error == SSL_ERROR_SYSCALL) {
      if (code == 0 && (ret == 0 || errno == 0)) return net::error::eof;
      return {errno, boost::system::system_category()};
    }
    if (ERR_GET_REASON(code) == SSL_R_UNEXPECTED_EOF_WHILE_READING) return net::error::eof;
    (void)ssl;
    return {static_cast<int>(code), net::error::get_ssl_category()};
  }

  // One call's worth of OpenSSL, waiting on the socket between tries.
  template <typename Handler, typename Step>
  class Operation : public boost::beast::async_base<Handler, executor_type> {
   public:
    Operation(Handler&& handler, TlsSocket& s, Step step)
        : boost::beast::async_base<Handler, executor_type>(std::move(handler), s.get_executor()),
          s_(s),
          step_(std::move(step)) {
      attempt(false);
    }

    // After a wait for the socket.
    void operator()(boost::beast::error_code ec) {
      if (ec) return finish(true, ec, 0);
      attempt(true);
    }

   private:
    void attempt(bool continuation) {
      SSL* ssl = s_.ssl_.get();
      std::size_t n = 0;
      ERR_clear_error();
      int ret = step_(ssl, n);
      if (ret > 0) return finish(continuation, {}, n);
      int error = SSL_get_error(ssl, ret);
      if (error == SSL_ERROR_WANT_READ || error == SSL_ERROR_WANT_WRITE) {
        ERR_clear_error();
        s_.socket_.async_wait(
            error == SSL_ERROR_WANT_READ ? next_layer_type::wait_read : next_layer_type::wait_write,
            std::move(*this));
        return;
      }
      finish(continuation, error_of(ssl, ret, error), 0);
    }

    void finish(bool continuation, boost::beast::error_code ec, std::size_t n) {
      if constexpr (std::is_same_v<Step, Handshake>) {
        this->complete(continuation, ec);
      } else {
        this->complete(continuation, ec, n);
      }
    }

    TlsSocket& s_;
    Step step_;
  };

  next_layer_type socket_;
  std::unique_ptr<SSL, SslFree> ssl_;
};

// Beast's WebSocket closes its stream through these (found by argument-dependent lookup):
// close_notify, then the TCP teardown.
inline void teardown(boost::beast::role_type role, TlsSocket& s, boost::beast::error_code& ec) {
  s.close_notify();
  boost::beast::websocket::teardown(role, s.socket(), ec);
}

template <typename TeardownHandler>
void async_teardown(boost::beast::role_type role, TlsSocket& s, TeardownHandler&& handler) {
  s.close_notify();
  boost::beast::websocket::async_teardown(role, s.socket(), std::forward<TeardownHandler>(handler));
}

}  // namespace gpurent::http
