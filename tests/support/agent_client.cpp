// The tests' agent over Beast: synchronous handshakes, then one io thread for the channel, so
// a read can wait with a timeout while the test sends.
#include "tests/support/agent_client.h"

#include "core/subprocess.h"

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

#include <unistd.h>

#include <condition_variable>
#include <deque>
#include <filesystem>
#include <fstream>
#include <future>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace gpurent::testing {

namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
namespace websocket = boost::beast::websocket;
namespace net = boost::asio;
namespace ssl = boost::asio::ssl;
using tcp = net::ip::tcp;

namespace {

std::unique_ptr<ssl::context> client_context(const std::string& ca_pem,
                                             const std::string& certificate_pem = "",
                                             const std::string& key_pem = "") {
  auto ctx = std::make_unique<ssl::context>(ssl::context::tls_client);
  ctx->add_certificate_authority(net::buffer(ca_pem));
  ctx->set_verify_mode(ssl::verify_peer);
  if (!certificate_pem.empty()) {
    ctx->use_certificate(net::buffer(certificate_pem), ssl::context::pem);
    ctx->use_private_key(net::buffer(key_pem), ssl::context::pem);
  }
  return ctx;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

AgentHttpResult agent_enroll(int port, const std::string& ca_pem, const std::string& body) {
  net::io_context ioc;
  auto ctx = client_context(ca_pem);
  beast::ssl_stream<beast::tcp_stream> stream(ioc, *ctx);
  stream.set_verify_callback(ssl::host_name_verification("127.0.0.1"));
  beast::get_lowest_layer(stream).connect(
      tcp::endpoint(net::ip::make_address("127.0.0.1"), static_cast<unsigned short>(port)));
  stream.handshake(ssl::stream_base::client);
  bhttp::request<bhttp::string_body> req{bhttp::verb::post, "/agent/v1/enroll", 11};
  req.set(bhttp::field::host, "127.0.0.1");
  req.set(bhttp::field::content_type, "application/json");
  req.body() = body;
  req.prepare_payload();
  bhttp::write(stream, req);
  beast::flat_buffer buffer;
  bhttp::response<bhttp::string_body> res;
  bhttp::read(stream, buffer, res);
  return {static_cast<int>(res.result_int()), res.body()};
}

AgentKey make_agent_key() {
  char dir[] = "/tmp/gpurent-agent-key-XXXXXX";
  if (!mkdtemp(dir)) throw std::runtime_error("mkdtemp failed");
  std::string base = std::string(dir) + "/agent";
  auto r = run_subprocess({"openssl", "req", "-new", "-nodes", "-newkey", "ec", "-pkeyopt",
                           "ec_paramgen_curve:P-256", "-keyout", base + ".key", "-out",
                           base + ".csr", "-subj", "/CN=gpurent-agent"});
  if (r.exit_code != 0) throw std::runtime_error("openssl req failed: " + r.output);
  AgentKey key{read_file(base + ".key"), read_file(base + ".csr")};
  std::filesystem::remove_all(dir);
  return key;
}

// One io thread runs every operation on the stream after the handshakes: TLS and WebSocket
// streams are not safe for a read on one thread and a write on another.
struct AgentConnection::Impl {
  net::io_context ioc;
  // Keeps run() going after the channel closed, so a late send fails rather than hangs.
  net::executor_work_guard<net::io_context::executor_type> work{ioc.get_executor()};
  std::unique_ptr<ssl::context> ctx;
  std::unique_ptr<websocket::stream<beast::ssl_stream<beast::tcp_stream>>> ws;
  beast::flat_buffer buffer;
  std::thread io;
  std::mutex mutex;
  std::condition_variable arrived;
  std::deque<std::string> inbox;
  bool done = false;

  void read_next() {
    ws->async_read(buffer, [this](beast::error_code ec, std::size_t) {
      std::lock_guard lock(mutex);
      if (ec) {
        done = true;
        arrived.notify_all();
        return;
      }
      inbox.push_back(beast::buffers_to_string(buffer.data()));
      buffer.consume(buffer.size());
      arrived.notify_all();
      read_next();
    });
  }
};

AgentConnection::AgentConnection(int port, const std::string& ca_pem,
                                 const std::string& certificate_pem, const std::string& key_pem)
    : impl_(std::make_unique<Impl>()) {
  auto& i = *impl_;
  i.ctx = client_context(ca_pem, certificate_pem, key_pem);
  i.ws = std::make_unique<websocket::stream<beast::ssl_stream<beast::tcp_stream>>>(i.ioc, *i.ctx);
  i.ws->next_layer().set_verify_callback(ssl::host_name_verification("127.0.0.1"));
  beast::get_lowest_layer(*i.ws).connect(
      tcp::endpoint(net::ip::make_address("127.0.0.1"), static_cast<unsigned short>(port)));
  i.ws->next_layer().handshake(ssl::stream_base::client);
  websocket::response_type res;
  beast::error_code ec;
  i.ws->handshake(res, "127.0.0.1", "/agent/v1/connect", ec);
  if (ec) {
    throw std::runtime_error(std::to_string(res.result_int()) + " " + ec.message() + " " +
                             res.body());
  }
  i.read_next();
  i.io = std::thread([&i] { i.ioc.run(); });
}

AgentConnection::~AgentConnection() {
  auto& i = *impl_;
  net::post(i.ioc, [&i] {
    beast::error_code ignored;
    beast::get_lowest_layer(*i.ws).socket().shutdown(tcp::socket::shutdown_both, ignored);
    beast::get_lowest_layer(*i.ws).socket().close(ignored);
  });
  i.work.reset();
  if (i.io.joinable()) i.io.join();  // run() returns once the read has failed
}

void AgentConnection::send(const std::string& text) {
  auto& i = *impl_;
  std::promise<beast::error_code> written;
  auto message = std::make_shared<std::string>(text);
  net::post(i.ioc, [&i, &written, message] {
    i.ws->text(true);
    i.ws->async_write(
        net::buffer(*message),
        [&written, message](beast::error_code ec, std::size_t) { written.set_value(ec); });
  });
  auto ec = written.get_future().get();
  if (ec) throw std::runtime_error("agent send: " + ec.message());
}

std::optional<std::string> AgentConnection::read(std::chrono::milliseconds timeout) {
  auto& i = *impl_;
  std::unique_lock lock(i.mutex);
  i.arrived.wait_for(lock, timeout, [&] { return !i.inbox.empty() || i.done; });
  if (i.inbox.empty()) return std::nullopt;
  std::string text = std::move(i.inbox.front());
  i.inbox.pop_front();
  return text;
}

bool AgentConnection::closed() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->done;
}

}  // namespace gpurent::testing
