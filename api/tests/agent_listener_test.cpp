// Tests the agent listener with a real TLS client (Beast over OpenSSL) and certificates from
// the real CA: enrolment without a client certificate, channels only with one the CA
// signed, messages in order both ways, and refusals that never reach a channel.
#include "api/agent_listener.h"

#include "core/certificate_authority.h"
#include "core/clock.h"
#include "core/error.h"
#include "core/subprocess.h"

#include <gtest/gtest.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <boost/beast/websocket.hpp>
#include <boost/beast/websocket/ssl.hpp>

#include <algorithm>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>

namespace gpurent::http {
namespace agent_listener_test {

namespace fs = std::filesystem;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
namespace websocket = boost::beast::websocket;
namespace net = boost::asio;
namespace ssl = boost::asio::ssl;
using tcp = net::ip::tcp;
using std::chrono::hours;

// Records what the listener asks of it and answers as the test sets it up.
class RecordingEndpoint final : public AgentEndpoint {
 public:
  nlohmann::json enroll(const nlohmann::json& body, const std::string& ip) override {
    if (body.value("token", "") == "bad") {
      throw Error(ErrorCode::kUnauthenticated, "The enrolment token is unknown.");
    }
    return {{"node_id", "nod_enrolled"}, {"seen_ip", ip}, {"echo", body}};
  }
  std::string admit(const std::string& serial, const std::string&) override {
    std::lock_guard lock(mutex_);
    admitted_serials.push_back(serial);
    if (serial == refuse_serial) throw AgentRefusal(403, "forbidden", "certificate revoked");
    return "nod_" + serial.substr(0, 6);
  }
  void opened(const std::shared_ptr<AgentChannel>& channel) override {
    std::lock_guard lock(mutex_);
    channel_ = channel;
    events.push_back("opened " + channel->node_id());
    changed_.notify_all();
  }
  void received(const std::shared_ptr<AgentChannel>& channel, std::string text) override {
    // A slow database call: the message is handled on a worker while the agent goes away.
    if (text == "slow") std::this_thread::sleep_for(std::chrono::milliseconds(300));
    std::lock_guard lock(mutex_);
    events.push_back("received " + text);
    if (text.rfind("echo ", 0) == 0) channel->send("reply " + text.substr(5));
    if (text.rfind("big ", 0) == 0) {
      std::size_t size = std::stoul(text.substr(4));
      std::string big(size, 'b');
      for (std::size_t i = 0; i < size; i += 997) big[i] = static_cast<char>('a' + i % 26);
      channel->send(std::move(big));
    }
    changed_.notify_all();
  }
  void closed(const std::shared_ptr<AgentChannel>& channel) override {
    std::lock_guard lock(mutex_);
    events.push_back("closed " + channel->node_id());
    channel_.reset();  // as the control plane does: a closed channel is dropped
    changed_.notify_all();
  }

  // Waits until `events` holds `n` entries; all of them.
  std::vector<std::string> wait_for(std::size_t n) {
    std::unique_lock lock(mutex_);
    changed_.wait_for(lock, std::chrono::seconds(10), [&] { return events.size() >= n; });
    return events;
  }
  std::shared_ptr<AgentChannel> channel() {
    std::lock_guard lock(mutex_);
    return channel_;
  }

  std::string refuse_serial;
  std::vector<std::string> admitted_serials;
  std::vector<std::string> events;

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::shared_ptr<AgentChannel> channel_;
};

struct ClientIdentity {
  std::string certificate_pem;
  std::string key_pem;
  std::string serial;
};

class AgentListenerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "gpurent-listener-XXXXXX").string();
    dir_ = mkdtemp(pattern.data());
    ca_.emplace(CertificateAuthority::load_or_create(dir_ / "pki", "agents CA", clock_));
    other_ca_.emplace(CertificateAuthority::load_or_create(dir_ / "other", "other CA", clock_));
    start_listener({});
  }
  // A listener (in place of the one running, if any) with `outbox` for its outbound bounds.
  struct OutboxLimits {
    std::size_t messages = 1000;
    std::size_t bytes = 4 * 1024 * 1024;
  };
  void start_listener(OutboxLimits outbox) {
    listener_.reset();
    auto server = ca_->issue_server_certificate({"127.0.0.1"}, hours(24));
    listener_.emplace(
        AgentListenerOptions{.host = "127.0.0.1",
                             .port = 0,
                             .server_certificate_pem = server.certificate.certificate_pem,
                             .server_key_pem = server.private_key_pem,
                             .client_ca_pem = ca_->certificate_pem(),
                             .max_message_bytes = 4096,
                             .max_outbox_messages = outbox.messages,
                             .max_outbox_bytes = outbox.bytes},
        endpoint_, workers_);
    port_ = listener_->start();
  }
  void TearDown() override {
    listener_.reset();
    workers_.stop();
    fs::remove_all(dir_);
  }

  // A key made by `openssl`, its CSR signed by `authority`.
  ClientIdentity identity(const CertificateAuthority& authority) {
    std::string base = (dir_ / ("agent" + std::to_string(++n_))).string();
    auto r = run_subprocess({"openssl", "req", "-new", "-nodes", "-newkey", "ec", "-pkeyopt",
                             "ec_paramgen_curve:P-256", "-keyout", base + ".key", "-out",
                             base + ".csr", "-subj", "/CN=agent"});
    EXPECT_EQ(r.exit_code, 0) << r.output;
    auto issued = authority.sign_client_csr(read(base + ".csr"), "nod_test", hours(1));
    return {issued.certificate_pem, read(base + ".key"), issued.serial};
  }
  static std::string read(const std::string& path) {
    std::ifstream in(path);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
  }

  // A TLS client context trusting the platform's CA, with `id` as its certificate if given.
  std::unique_ptr<ssl::context> client_context(const ClientIdentity* id) {
    auto ctx = std::make_unique<ssl::context>(ssl::context::tls_client);
    ctx->add_certificate_authority(net::buffer(ca_->certificate_pem()));
    ctx->set_verify_mode(ssl::verify_peer);
    if (id) {
      ctx->use_certificate(net::buffer(id->certificate_pem), ssl::context::pem);
      ctx->use_private_key(net::buffer(id->key_pem), ssl::context::pem);
    }
    return ctx;
  }

  bhttp::response<bhttp::string_body> post_enroll(const std::string& body) {
    auto ctx = client_context(nullptr);
    beast::ssl_stream<beast::tcp_stream> stream(ioc_, *ctx);
    beast::get_lowest_layer(stream).connect(
        tcp::endpoint(net::ip::make_address("127.0.0.1"), port_));
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
    return res;
  }

  using Ws = websocket::stream<beast::ssl_stream<beast::tcp_stream>>;
  // Opens a channel with `id`; the handshake's status on refusal through `status`.
  std::unique_ptr<Ws> connect(const ClientIdentity* id, int* refused_status = nullptr) {
    contexts_.push_back(client_context(id));
    auto ws = std::make_unique<Ws>(ioc_, *contexts_.back());
    beast::get_lowest_layer(*ws).connect(tcp::endpoint(net::ip::make_address("127.0.0.1"), port_));
    ws->next_layer().handshake(ssl::stream_base::client);
    websocket::response_type res;
    beast::error_code ec;
    ws->handshake(res, "127.0.0.1", "/agent/v1/connect", ec);
    if (refused_status) *refused_status = ec ? res.result_int() : 0;
    if (ec) return nullptr;
    return ws;
  }

  fs::path dir_;
  int n_ = 0;
  SystemClock clock_;
  std::optional<CertificateAuthority> ca_, other_ca_;
  RecordingEndpoint endpoint_;
  WorkerPool workers_{2, 64};
  std::optional<AgentListener> listener_;
  unsigned short port_ = 0;
  net::io_context ioc_;
  std::vector<std::unique_ptr<ssl::context>> contexts_;
};

TEST_F(AgentListenerTest, EnrolmentNeedsNoClientCertificate) {
  auto res = post_enroll(R"({"token": "gpe_x", "csr_pem": "…"})");
  ASSERT_EQ(res.result_int(), 200) << res.body();
  auto body = nlohmann::json::parse(res.body());
  EXPECT_EQ(body["node_id"], "nod_enrolled");
  EXPECT_EQ(body["seen_ip"], "127.0.0.1");
  EXPECT_EQ(body["echo"]["token"], "gpe_x");

  res = post_enroll(R"({"token": "bad"})");
  EXPECT_EQ(res.result_int(), 401) << res.body();
  EXPECT_EQ(nlohmann::json::parse(res.body())["error"]["code"], "unauthenticated");
  res = post_enroll("not json");
  EXPECT_EQ(res.result_int(), 400) << res.body();
  EXPECT_EQ(nlohmann::json::parse(res.body())["error"]["code"], "invalid_json");
}

TEST_F(AgentListenerTest, AChannelNeedsACertificateFromThePlatformsCa) {
  int status = 0;
  EXPECT_EQ(connect(nullptr, &status), nullptr);
  EXPECT_EQ(status, 401) << "no certificate";

  // Under TLS 1.3 the server judges the client's certificate after the client's side of
  // the handshake is done, so the refusal shows as the first read failing.
  auto foreign = identity(*other_ca_);
  bool refused = false;
  try {
    refused = connect(&foreign) == nullptr;
  } catch (const std::exception&) {
    refused = true;
  }
  EXPECT_TRUE(refused) << "another CA's certificate";

  auto revoked = identity(*ca_);
  endpoint_.refuse_serial = revoked.serial;
  EXPECT_EQ(connect(&revoked, &status), nullptr);
  EXPECT_EQ(status, 403) << "the endpoint refused it";
  EXPECT_TRUE(endpoint_.events.empty()) << "no channel was opened";
  EXPECT_EQ(endpoint_.admitted_serials, std::vector<std::string>{revoked.serial})
      << "the foreign certificate never reached the endpoint";
  EXPECT_EQ(listener_->stats().channels_opened_total, 0u);
}

TEST_F(AgentListenerTest, MessagesFlowInOrderBothWays) {
  auto id = identity(*ca_);
  auto ws = connect(&id);
  ASSERT_NE(ws, nullptr);
  std::string node = "nod_" + id.serial.substr(0, 6);
  ASSERT_EQ(endpoint_.wait_for(1).front(), "opened " + node);
  EXPECT_EQ(endpoint_.admitted_serials, std::vector<std::string>{id.serial});
  for (int i = 0; i < 20; ++i) ws->write(net::buffer("echo " + std::to_string(i)));
  for (int i = 0; i < 20; ++i) {
    beast::flat_buffer buffer;
    ws->read(buffer);
    EXPECT_EQ(beast::buffers_to_string(buffer.data()), "reply " + std::to_string(i));
  }
  auto events = endpoint_.wait_for(21);
  for (int i = 0; i < 20; ++i) EXPECT_EQ(events[i + 1], "received echo " + std::to_string(i));
  ws->close(websocket::close_code::normal);
  EXPECT_EQ(endpoint_.wait_for(22).back(), "closed " + node);
  EXPECT_EQ(listener_->stats().messages_received_total, 20u);
}

// The listener's TLS writes at most one record (16 KiB) at a time and reads what each
// record holds: a message of many records arrives whole and in order, both ways.
TEST_F(AgentListenerTest, MessagesOfManyTlsRecordsArriveWhole) {
  auto id = identity(*ca_);
  auto ws = connect(&id);
  ASSERT_NE(ws, nullptr);
  endpoint_.wait_for(1);
  for (std::size_t size : {16u * 1024 - 1, 16u * 1024 + 1, 1u << 20}) {
    ws->write(net::buffer("big " + std::to_string(size)));
    ws->write(net::buffer("echo after " + std::to_string(size)));
    beast::flat_buffer buffer;
    ws->read(buffer);
    std::string got = beast::buffers_to_string(buffer.data());
    ASSERT_EQ(got.size(), size);
    for (std::size_t i = 0; i < size; ++i) {
      char expected = i % 997 == 0 ? static_cast<char>('a' + i % 26) : 'b';
      ASSERT_EQ(got[i], expected) << "byte " << i << " of " << size;
    }
    buffer.clear();
    ws->read(buffer);
    EXPECT_EQ(beast::buffers_to_string(buffer.data()), "reply after " + std::to_string(size));
  }
  // An agent's own message as large as the listener allows, many times over.
  for (int i = 0; i < 50; ++i) ws->write(net::buffer("echo " + std::string(4000, 'x')));
  for (int i = 0; i < 50; ++i) {
    beast::flat_buffer buffer;
    ws->read(buffer);
    EXPECT_EQ(buffer.size(), 6u + 4000u);
  }
  ws->close(websocket::close_code::normal);
}

TEST_F(AgentListenerTest, AnOversizedMessageClosesTheChannel) {
  auto id = identity(*ca_);
  auto ws = connect(&id);
  ASSERT_NE(ws, nullptr);
  endpoint_.wait_for(1);
  ws->write(net::buffer(std::string(5000, 'x')));
  beast::flat_buffer buffer;
  beast::error_code ec;
  ws->read(buffer, ec);
  EXPECT_TRUE(ec) << "the listener closed it";
  auto events = endpoint_.wait_for(2);
  EXPECT_EQ(events.back().rfind("closed ", 0), 0u);
  EXPECT_EQ(events.size(), 2u) << "the oversized message never reached the endpoint";
}

TEST_F(AgentListenerTest, StoppingClosesEveryChannel) {
  auto id = identity(*ca_);
  auto ws = connect(&id);
  ASSERT_NE(ws, nullptr);
  endpoint_.wait_for(1);
  EXPECT_EQ(listener_->stats().channels_open, 1u);
  // The agent is reading, as a connected agent always is, and answers the close.
  beast::flat_buffer buffer;
  beast::error_code ec;
  std::thread agent([&] { ws->read(buffer, ec); });
  listener_->stop();
  agent.join();
  EXPECT_EQ(ec, websocket::error::closed) << ec.message();
  EXPECT_EQ(ws->reason().code, websocket::close_code::going_away);
  EXPECT_EQ(endpoint_.wait_for(2).back().rfind("closed ", 0), 0u);
}

TEST_F(AgentListenerTest, AnAgentThatDoesNotAnswerTheCloseIsCutAtStop) {
  auto id = identity(*ca_);
  auto ws = connect(&id);
  ASSERT_NE(ws, nullptr);
  endpoint_.wait_for(1);
  auto started = std::chrono::steady_clock::now();
  listener_->stop();  // the agent never reads: its close is never answered
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(5));
  auto events = endpoint_.wait_for(2);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events.back().rfind("closed ", 0), 0u) << "the endpoint hears of it all the same";
  EXPECT_EQ(endpoint_.channel(), nullptr);
}

TEST_F(AgentListenerTest, StoppingWaitsForMessagesBeingHandled) {
  auto id = identity(*ca_);
  auto ws = connect(&id);
  ASSERT_NE(ws, nullptr);
  endpoint_.wait_for(1);
  ws->write(net::buffer(std::string("slow")));
  // The agent drops its connection while its message is still being handled on a worker.
  beast::error_code ignored;
  beast::get_lowest_layer(*ws).socket().close(ignored);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  listener_.reset();  // the listener's io_context is destroyed here
  // The endpoint has heard all of it by then: nothing of the listener's runs after it is gone
  // (under the sanitizer a task left behind is a use after free).
  auto events = endpoint_.events;
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[1], "received slow");
  EXPECT_EQ(events[2].rfind("closed ", 0), 0u);
}

// An agent that stops reading: what is sent to it piles up in the kernel's buffers, then in
// its channel's outbox, until the next message would pass the bound. Then the channel is
// cut (the endpoint hears it closed, and the agent reconnects) instead of holding more.
TEST_F(AgentListenerTest, AnAgentThatStopsReadingIsCutWhenItsOutboxIsFull) {
  start_listener({.messages = 4, .bytes = 1024 * 1024});
  auto id = identity(*ca_);
  auto ws = connect(&id);
  ASSERT_NE(ws, nullptr);
  endpoint_.wait_for(1);
  auto channel = endpoint_.channel();
  ASSERT_NE(channel, nullptr);

  // While the agent reads, one message at a time never comes near the bound.
  const std::string message(64 * 1024, 'm');
  for (int i = 0; i < 20; ++i) {
    channel->send(message);
    beast::flat_buffer buffer;
    ws->read(buffer);
    ASSERT_EQ(buffer.size(), message.size());
  }
  EXPECT_EQ(listener_->stats().outbox_overflows_total, 0u);

  // It stops reading. Messages keep coming, a little apart, as tasks would.
  std::size_t most_waiting = 0;
  int sent = 0;
  for (; sent < 2000 && listener_->stats().outbox_overflows_total == 0; ++sent) {
    channel->send(message);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    most_waiting = std::max(most_waiting, listener_->stats().outbox_messages);
  }
  auto events = endpoint_.wait_for(2);
  auto stats = listener_->stats();
  EXPECT_EQ(stats.outbox_overflows_total, 1u) << "after " << sent << " messages";
  EXPECT_LE(most_waiting, 4u) << "the bound holds";
  EXPECT_EQ(events.back(), "closed " + channel->node_id());
  // Sends to the cut channel are dropped, not queued.
  for (int i = 0; i < 10; ++i) channel->send(message);
  for (int i = 0; i < 200 && listener_->stats().outbox_messages != 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(listener_->stats().outbox_messages, 0u);
  EXPECT_EQ(listener_->stats().outbox_bytes, 0u);
  EXPECT_EQ(listener_->stats().outbox_overflows_total, 1u);

  // The agent finds its connection gone once it reads what reached it.
  beast::error_code ec;
  for (int i = 0; i < 5000 && !ec; ++i) {
    beast::flat_buffer buffer;
    ws->read(buffer, ec);
  }
  EXPECT_TRUE(ec);
}

// The byte bound alone: a few large messages fill it long before the message count would.
TEST_F(AgentListenerTest, TheOutboxIsBoundedInBytesToo) {
  start_listener({.messages = 1000, .bytes = 200 * 1024});
  auto id = identity(*ca_);
  auto ws = connect(&id);
  ASSERT_NE(ws, nullptr);
  endpoint_.wait_for(1);
  auto channel = endpoint_.channel();
  ASSERT_NE(channel, nullptr);
  const std::string message(64 * 1024, 'm');
  std::size_t most_bytes = 0;
  for (int sent = 0; sent < 2000 && listener_->stats().outbox_overflows_total == 0; ++sent) {
    channel->send(message);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    most_bytes = std::max(most_bytes, listener_->stats().outbox_bytes);
  }
  EXPECT_EQ(listener_->stats().outbox_overflows_total, 1u);
  EXPECT_LE(most_bytes, 200u * 1024);
  EXPECT_EQ(endpoint_.wait_for(2).back().rfind("closed ", 0), 0u);
}

}  // namespace agent_listener_test
}  // namespace gpurent::http
