// A blocking HTTPS/1.1 client for end-to-end tests of the public listener's TLS: one
// connection to 127.0.0.1:port that can be held open across a certificate reload, with the
// protocol versions and TLS 1.2 suites a test offers, and what the handshake settled on.
#pragma once

#include "tests/support/http_client.h"

#include <openssl/ssl.h>

#include <chrono>
#include <memory>
#include <string>

namespace gpurent::testing {

struct TlsClientOptions {
  std::string ca_file;    // the only CA trusted for the server's certificate
  std::string host_name;  // SNI and the name checked on the certificate
  int min_version = 0;    // TLS1_2_VERSION...; 0: OpenSSL's default
  int max_version = 0;
  std::string tls12_ciphers;  // empty: OpenSSL's default list
  // The local address to connect from (another loopback address, so the server side can
  // tell this client from a proxy on 127.0.0.1); empty: the kernel's choice.
  std::string source_address;
};

class TlsConnection {
 public:
  // Connects and completes the handshake, checking the certificate against ca_file and
  // host_name; throws std::runtime_error with OpenSSL's reason when either fails.
  TlsConnection(int port, const TlsClientOptions& options);
  ~TlsConnection();
  TlsConnection(const TlsConnection&) = delete;
  TlsConnection& operator=(const TlsConnection&) = delete;

  bool send(const std::string& bytes);
  HttpResult read_response(std::chrono::milliseconds timeout = std::chrono::seconds(10),
                           bool head = false);
  // The negotiated protocol ("TLSv1.3"), cipher suite, and the server certificate's
  // SHA-256 fingerprint in hex.
  std::string version() const;
  std::string cipher() const;
  std::string certificate_fingerprint() const;

 private:
  void connect_and_handshake(int port, const TlsClientOptions& options);
  void release();
  bool fill(std::chrono::steady_clock::time_point deadline);
  int fd_ = -1;
  SSL_CTX* ctx_ = nullptr;
  SSL* ssl_ = nullptr;
  std::string buffer_;
};

// A self-signed EC P-256 certificate for localhost and 127.0.0.1 and its key, made by the
// `openssl` command as an operator would, as `dir`/NAME.crt and NAME.key. Throws when the
// command fails.
void make_test_certificate(const std::string& dir, const std::string& name);

// One request on a fresh TLS connection.
HttpResult https_request(int port, const TlsClientOptions& options, const std::string& method,
                         const std::string& target, const std::string& body = "",
                         const std::map<std::string, std::string>& headers = {});

}  // namespace gpurent::testing
