#include "tests/support/tls_client.h"

#include "tests/support/response_reader.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/x509.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <stdexcept>

namespace gpurent::testing {

namespace {

std::string ssl_error_text() {
  std::string text;
  while (unsigned long code = ERR_get_error()) {
    char buf[256];
    ERR_error_string_n(code, buf, sizeof buf);
    if (!text.empty()) text += "; ";
    text += buf;
  }
  return text.empty() ? "connection closed during the handshake" : text;
}

}  // namespace

TlsConnection::TlsConnection(int port, const TlsClientOptions& options) {
  try {
    connect_and_handshake(port, options);
  } catch (...) {
    release();  // no destructor runs for a constructor that throws
    throw;
  }
}

void TlsConnection::connect_and_handshake(int port, const TlsClientOptions& options) {
  ERR_clear_error();
  ctx_ = SSL_CTX_new(TLS_client_method());
  if (!ctx_) throw std::runtime_error("SSL_CTX_new failed");
  if (options.min_version) SSL_CTX_set_min_proto_version(ctx_, options.min_version);
  if (options.max_version) SSL_CTX_set_max_proto_version(ctx_, options.max_version);
  // Old versions and weak suites are offered when a test asks, to see the server refuse
  // them: the client's own security level must not refuse them first.
  SSL_CTX_set_security_level(ctx_, 0);
  if (!options.tls12_ciphers.empty() &&
      SSL_CTX_set_cipher_list(ctx_, options.tls12_ciphers.c_str()) != 1) {
    throw std::runtime_error("cipher list refused: " + options.tls12_ciphers);
  }
  if (SSL_CTX_load_verify_locations(ctx_, options.ca_file.c_str(), nullptr) != 1) {
    throw std::runtime_error("cannot load CA " + options.ca_file + ": " + ssl_error_text());
  }
  SSL_CTX_set_verify(ctx_, SSL_VERIFY_PEER, nullptr);

  fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd_ < 0) throw std::runtime_error("socket failed");
  if (!options.source_address.empty()) {
    sockaddr_in local{};
    local.sin_family = AF_INET;
    if (inet_pton(AF_INET, options.source_address.c_str(), &local.sin_addr) != 1 ||
        bind(fd_, reinterpret_cast<sockaddr*>(&local), sizeof local) != 0) {
      throw std::runtime_error("cannot connect from " + options.source_address);
    }
  }
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    throw std::runtime_error("connect to port " + std::to_string(port) + " failed");
  }
  int one = 1;
  setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  // A blocking handshake and reads that cannot hang the test.
  timeval limit{10, 0};
  setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
  setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &limit, sizeof limit);

  ssl_ = SSL_new(ctx_);
  SSL_set_fd(ssl_, fd_);
  if (!options.host_name.empty()) {
    SSL_set_tlsext_host_name(ssl_, options.host_name.c_str());
    SSL_set1_host(ssl_, options.host_name.c_str());
  }
  if (SSL_connect(ssl_) != 1) {
    std::string why = ssl_error_text();
    long verify = SSL_get_verify_result(ssl_);
    if (verify != X509_V_OK) why += " (" + std::string(X509_verify_cert_error_string(verify)) + ")";
    throw std::runtime_error("TLS handshake failed: " + why);
  }
}

TlsConnection::~TlsConnection() {
  release();
}

void TlsConnection::release() {
  if (ssl_) SSL_free(ssl_);
  if (ctx_) SSL_CTX_free(ctx_);
  if (fd_ >= 0) close(fd_);
  ssl_ = nullptr;
  ctx_ = nullptr;
  fd_ = -1;
}

bool TlsConnection::send(const std::string& bytes) {
  std::size_t sent = 0;
  while (sent < bytes.size()) {
    int n = SSL_write(ssl_, bytes.data() + sent, static_cast<int>(bytes.size() - sent));
    if (n <= 0) return false;
    sent += static_cast<std::size_t>(n);
  }
  return true;
}

bool TlsConnection::fill(std::chrono::steady_clock::time_point deadline) {
  if (SSL_pending(ssl_) == 0) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd p{fd_, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(left.count())) <= 0) return false;
  }
  char buf[16384];
  int n = SSL_read(ssl_, buf, sizeof buf);
  if (n <= 0) return false;
  buffer_.append(buf, static_cast<std::size_t>(n));
  return true;
}

HttpResult TlsConnection::read_response(std::chrono::milliseconds timeout, bool head) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  return read_http_response(
      buffer_, [this, deadline] { return fill(deadline); }, head);
}

std::string TlsConnection::version() const {
  return SSL_get_version(ssl_);
}

std::string TlsConnection::cipher() const {
  return SSL_get_cipher_name(ssl_);
}

std::string TlsConnection::certificate_fingerprint() const {
  X509* cert = SSL_get0_peer_certificate(ssl_);
  if (!cert) return "";
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  X509_digest(cert, EVP_sha256(), md, &len);
  std::string hex;
  char byte[3];
  for (unsigned int i = 0; i < len; ++i) {
    std::snprintf(byte, sizeof byte, "%02x", md[i]);
    hex += byte;
  }
  return hex;
}

void make_test_certificate(const std::string& dir, const std::string& name) {
  std::string cmd =
      "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes "
      "-days 2 -subj /CN=" +
      name + " -addext subjectAltName=DNS:localhost,IP:127.0.0.1 -keyout " + dir + "/" + name +
      ".key -out " + dir + "/" + name + ".crt 2>/dev/null";
  if (std::system(cmd.c_str()) != 0) throw std::runtime_error("failed: " + cmd);
}

HttpResult https_request(int port, const TlsClientOptions& options, const std::string& method,
                         const std::string& target, const std::string& body,
                         const std::map<std::string, std::string>& headers) {
  TlsConnection conn(port, options);
  if (!conn.send(build_request(method, target, body, headers))) {
    throw std::runtime_error("send failed");
  }
  return conn.read_response(std::chrono::seconds(30), method == "HEAD");
}

}  // namespace gpurent::testing
