// The test Redfish responder: blocking sockets, a thread per connection, one request per
// connection (it answers "Connection: close"), OpenSSL for HTTPS. Bodies follow the DMTF
// ComputerSystem, ComputerSystemCollection and error (Base message registry) shapes.
#include "tests/support/redfish_responder.h"

#include "core/crypto.h"
#include "tests/support/tls_client.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <stdexcept>

namespace gpurent::testing {
namespace {

using nlohmann::json;

// A Redfish error body as services send it (the Base registry's message in one
// @Message.ExtendedInfo entry, repeated as code and message).
std::string error_body(const std::string& message_id, const std::string& message,
                       const std::vector<std::string>& args, const std::string& resolution) {
  json info = {{"@odata.type", "#Message.v1_1_1.Message"},
               {"MessageId", message_id},
               {"Message", message},
               {"MessageArgs", args},
               {"MessageSeverity", "Critical"},
               {"Resolution", resolution}};
  return json{
      {"error", {{"code", message_id}, {"message", message}, {"@Message.ExtendedInfo", {info}}}}}
      .dump();
}

std::string reason(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 204:
      return "No Content";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 500:
      return "Internal Server Error";
    default:
      return "Answer";
  }
}

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Sends and receives over the plain socket or its TLS session.
struct Conn {
  int fd;
  SSL* ssl = nullptr;

  long recv_some(char* buf, std::size_t n) {
    if (ssl) return SSL_read(ssl, buf, static_cast<int>(n));
    return ::recv(fd, buf, n, 0);
  }
  void send_all(const std::string& data) {
    std::size_t sent = 0;
    while (sent < data.size()) {
      long n = ssl ? SSL_write(ssl, data.data() + sent, static_cast<int>(data.size() - sent))
                   : ::send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
      if (n <= 0) return;
      sent += static_cast<std::size_t>(n);
    }
  }
};

}  // namespace

RedfishResponder::RedfishResponder(RedfishResponderOptions options)
    : options_(std::move(options)), power_state_(options_.power_state) {
  // A client that gives up mid-answer must not kill the test with SIGPIPE from SSL_write.
  ::signal(SIGPIPE, SIG_IGN);
  if (options_.tls) {
    char dir[] = "/tmp/gpurent-redfish-XXXXXX";
    if (!::mkdtemp(dir)) throw std::runtime_error("mkdtemp failed");
    cert_dir_ = dir;
    make_test_certificate(cert_dir_, "bmc");
    SSL_CTX* ctx = SSL_CTX_new(TLS_server_method());
    if (!ctx ||
        SSL_CTX_use_certificate_file(ctx, certificate_file().c_str(), SSL_FILETYPE_PEM) != 1 ||
        SSL_CTX_use_PrivateKey_file(ctx, (cert_dir_ + "/bmc.key").c_str(), SSL_FILETYPE_PEM) != 1) {
      if (ctx) SSL_CTX_free(ctx);
      throw std::runtime_error("the responder's certificate could not be loaded");
    }
    ssl_ctx_ = ctx;
    FILE* f = std::fopen(certificate_file().c_str(), "r");
    X509* cert = f ? PEM_read_X509(f, nullptr, nullptr, nullptr) : nullptr;
    if (f) std::fclose(f);
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    if (!cert || X509_digest(cert, EVP_sha256(), md, &n) != 1) {
      throw std::runtime_error("the responder's certificate has no fingerprint");
    }
    X509_free(cert);
    fingerprint_ = crypto::to_hex(md, n);
  }
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int on = 1;
  ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::listen(listen_fd_, 16) != 0) {
    throw std::runtime_error("the responder could not listen on 127.0.0.1");
  }
  socklen_t len = sizeof addr;
  ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
  port_ = ntohs(addr.sin_port);
  accept_thread_ = std::thread([this] { accept_loop(); });
}

RedfishResponder::~RedfishResponder() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  stop_cv_.notify_all();
  accept_thread_.join();
  std::vector<std::thread> connections;
  {
    std::lock_guard lock(mutex_);
    connections.swap(connections_);
  }
  for (auto& t : connections) t.join();
  ::close(listen_fd_);
  if (ssl_ctx_) SSL_CTX_free(static_cast<SSL_CTX*>(ssl_ctx_));
  if (!cert_dir_.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(cert_dir_, ec);
  }
}

std::string RedfishResponder::base_url() const {
  return std::string(options_.tls ? "https" : "http") + "://127.0.0.1:" + std::to_string(port_);
}

void RedfishResponder::delay_answers(std::chrono::milliseconds delay) {
  std::lock_guard lock(mutex_);
  delay_ = delay;
}

void RedfishResponder::fail_with(int status) {
  std::lock_guard lock(mutex_);
  fail_status_ = status;
}

std::string RedfishResponder::power_state() {
  std::lock_guard lock(mutex_);
  settle_locked();
  return power_state_;
}

std::vector<std::string> RedfishResponder::accepted_resets() {
  std::lock_guard lock(mutex_);
  return accepted_;
}

std::vector<RedfishRequest> RedfishResponder::requests() {
  std::lock_guard lock(mutex_);
  return requests_;
}

void RedfishResponder::settle_locked() {
  if (power_state_ == "PoweringOn" && std::chrono::steady_clock::now() >= powering_on_until_) {
    power_state_ = "On";
  }
}

void RedfishResponder::accept_loop() {
  while (true) {
    {
      std::lock_guard lock(mutex_);
      if (stopping_) return;
    }
    pollfd p{listen_fd_, POLLIN, 0};
    if (::poll(&p, 1, 50) <= 0) continue;
    int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    std::lock_guard lock(mutex_);
    connections_.emplace_back([this, fd] { serve(fd); });
  }
}

void RedfishResponder::serve(int fd) {
  timeval tv{5, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  Conn conn{fd};
  if (ssl_ctx_) {
    conn.ssl = SSL_new(static_cast<SSL_CTX*>(ssl_ctx_));
    SSL_set_fd(conn.ssl, fd);
    if (SSL_accept(conn.ssl) != 1) {  // a client that refused the certificate ends here
      ERR_clear_error();
      SSL_free(conn.ssl);
      ::close(fd);
      return;
    }
  }
  std::string data;
  char buf[4096];
  std::size_t header_end = std::string::npos;
  std::size_t length = 0;
  bool whole = false;
  while (data.size() < 256 * 1024) {
    if (header_end == std::string::npos) {
      header_end = data.find("\r\n\r\n");
      if (header_end != std::string::npos) {
        std::string head = lower(data.substr(0, header_end));
        auto at = head.find("\r\ncontent-length:");
        if (at != std::string::npos) length = std::stoul(head.substr(at + 17));
      }
    }
    if (header_end != std::string::npos && data.size() >= header_end + 4 + length) {
      whole = true;
      break;
    }
    long n = conn.recv_some(buf, sizeof buf);
    if (n <= 0) break;
    data.append(buf, static_cast<std::size_t>(n));
  }
  if (whole) {
    RedfishRequest request;
    std::size_t line_end = data.find("\r\n");
    std::string line = data.substr(0, line_end);
    auto sp1 = line.find(' ');
    auto sp2 = line.find(' ', sp1 + 1);
    request.method = line.substr(0, sp1);
    request.target = line.substr(sp1 + 1, sp2 - sp1 - 1);
    request.body = data.substr(header_end + 4, length);
    for (std::size_t pos = line_end + 2; pos < header_end;) {
      std::size_t eol = data.find("\r\n", pos);
      std::string header = data.substr(pos, eol - pos);
      auto colon = header.find(':');
      if (colon != std::string::npos && lower(header.substr(0, colon)) == "authorization") {
        request.authorization = header.substr(colon + 1);
        while (!request.authorization.empty() && request.authorization.front() == ' ') {
          request.authorization.erase(request.authorization.begin());
        }
      }
      pos = eol + 2;
    }
    bool stopped = false;
    {
      std::unique_lock lock(mutex_);
      requests_.push_back(request);
      auto delay = delay_;
      if (delay.count() > 0) {
        stopped = stop_cv_.wait_for(lock, delay, [&] { return stopping_; });
      }
    }
    if (!stopped) {
      Reply reply = answer(request);
      std::string head = "HTTP/1.1 " + std::to_string(reply.status) + " " + reason(reply.status) +
                         "\r\nConnection: close\r\nOData-Version: 4.0\r\n";
      if (reply.status == 401) head += "WWW-Authenticate: Basic realm=\"Redfish\"\r\n";
      if (reply.status != 204) {
        head += "Content-Type: application/json\r\nContent-Length: " +
                std::to_string(reply.body.size()) + "\r\n";
      }
      conn.send_all(head + "\r\n" + (reply.status == 204 ? "" : reply.body));
    }
  }
  if (conn.ssl) {
    SSL_shutdown(conn.ssl);
    SSL_free(conn.ssl);
    ERR_clear_error();
  }
  ::close(fd);
}

std::string RedfishResponder::system_body() {
  const std::string path = "/redfish/v1/Systems/" + options_.system_id;
  json body = {
      {"@odata.id", path},
      {"@odata.type", "#ComputerSystem.v1_22_0.ComputerSystem"},
      {"Id", options_.system_id},
      {"Name", "Test responder system"},
      {"SystemType", "Physical"},
      {"PowerState", power_state_},
      {"Status", {{"State", "Enabled"}, {"Health", "OK"}}},
      {"Links", {{"ManagedBy", {{{"@odata.id", "/redfish/v1/Managers/bmc"}}}}}},
      {"Actions",
       {{"#ComputerSystem.Reset",
         {{"target", options_.reset_target},
          {"ResetType@Redfish.AllowableValues", options_.allowable}}}}},
  };
  return body.dump(4);
}

RedfishResponder::Reply RedfishResponder::answer(const RedfishRequest& request) {
  std::lock_guard lock(mutex_);
  settle_locked();
  if (fail_status_ != 0) {
    return {
        fail_status_,
        error_body(
            "Base.1.16.0.InternalError",
            "The request failed due to an internal service error.  The service is "
            "still operational.",
            {}, "Resubmit the request.  If the problem persists, consider resetting the service.")};
  }
  if (request.authorization !=
      "Basic " + crypto::base64(options_.username + ":" + options_.password)) {
    return {401, error_body("Base.1.16.0.ResourceAtUriUnauthorized",
                            "While accessing the resource at '" + request.target +
                                "', the service received an authorization error 'Unauthorized'.",
                            {request.target, "Unauthorized"},
                            "Ensure that the appropriate access is provided for the service in "
                            "order for it to access the URI.")};
  }
  const std::string system_path = "/redfish/v1/Systems/" + options_.system_id;
  if (request.target == "/redfish/v1/Systems" && request.method == "GET") {
    json body = {{"@odata.id", "/redfish/v1/Systems"},
                 {"@odata.type", "#ComputerSystemCollection.ComputerSystemCollection"},
                 {"Name", "Computer System Collection"},
                 {"Members", {{{"@odata.id", system_path}}}},
                 {"Members@odata.count", 1}};
    return {200, body.dump(4)};
  }
  if (request.target == system_path && request.method == "GET") return {200, system_body()};
  if (request.target == options_.reset_target) {
    if (request.method != "POST") {
      return {405, error_body("Base.1.16.0.OperationNotAllowed",
                              "The HTTP method is not allowed on this resource.", {}, "None.")};
    }
    json parsed = json::parse(request.body, nullptr, false);
    std::string type;
    if (parsed.is_object() && parsed.contains("ResetType") && parsed["ResetType"].is_string()) {
      type = parsed["ResetType"].get<std::string>();
    }
    if (type.empty() || std::find(options_.allowable.begin(), options_.allowable.end(), type) ==
                            options_.allowable.end()) {
      std::string shown = parsed.is_object() && parsed.contains("ResetType")
                              ? parsed["ResetType"].dump()
                              : std::string("(missing)");
      return {400, error_body("Base.1.16.0.ActionParameterValueNotInList",
                              "The value '" + shown +
                                  "' for the parameter ResetType in the action "
                                  "ComputerSystem.Reset is not in the list of acceptable values.",
                              {shown, "ResetType", "ComputerSystem.Reset"},
                              "Choose a value from the enumeration list that the implementation "
                              "can support and resubmit the request if the operation failed.")};
    }
    accepted_.push_back(type);
    if (type == "On" || type == "ForceOn") {
      power_state_ = "On";
    } else if (type == "ForceOff" || type == "GracefulShutdown") {
      power_state_ = "Off";
    } else if (type == "PushPowerButton") {
      power_state_ = power_state_ == "On" ? "Off" : "On";
    } else if (type == "PowerCycle" || type == "ForceRestart" || type == "GracefulRestart") {
      power_state_ = "PoweringOn";
      powering_on_until_ = std::chrono::steady_clock::now() + options_.restart_delay;
    }  // Nmi: a diagnostic interrupt, the power stays as it is
    return {204, ""};
  }
  return {404, error_body("Base.1.16.0.ResourceNotFound",
                          "The requested resource of type Resource named '" + request.target +
                              "' was not found.",
                          {"Resource", request.target},
                          "Provide a valid resource identifier and resubmit the request.")};
}

}  // namespace gpurent::testing
