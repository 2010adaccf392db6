// One blocking HTTP/1.1 exchange over HTTP or HTTPS. The interface holds no Beast type, so
// only http_transport.cpp compiles Boost.Beast and Asio; tests substitute a fake.
#pragma once

#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace gpurent::cli {

using HeaderList = std::vector<std::pair<std::string, std::string>>;

struct HttpRequest {
  std::string method;  // GET, POST, PUT, DELETE
  std::string target;  // path and query, e.g. "/v1/rentals?state=active"
  HeaderList headers;
  std::string body;
  // How long the answer may take once the request is sent (a long-poll asks for more).
  std::chrono::milliseconds read_timeout{30'000};
};

struct HttpResponse {
  int status = 0;
  HeaderList headers;  // names lower-cased
  std::string body;
  // The header's value, or "" when absent; `lower_name` in lower case.
  std::string header(const std::string& lower_name) const;
};

// Where the API is: from a URL such as https://gpu.example.com or http://127.0.0.1:8080/.
struct Endpoint {
  bool tls = false;
  std::string host;
  std::string port;       // "443" / "80" when the URL names none
  std::string base_path;  // prefix before /v1, without a trailing slash ("" usually)
};

// Parses http:// and https:// URLs; throws std::invalid_argument with a sentence otherwise.
Endpoint parse_endpoint(const std::string& url);

struct TransportOptions {
  std::chrono::milliseconds connect_timeout{10'000};
  bool insecure = false;  // skip certificate verification (--insecure)
  std::string ca_file;    // PEM bundle to trust instead of the system's (GPURENT_CA_FILE)
};

// No answer came: the connection was refused, cut, timed out, or TLS failed.
class TransportError : public std::runtime_error {
 public:
  TransportError(const std::string& what, bool certificate_rejected = false)
      : std::runtime_error(what), certificate_rejected_(certificate_rejected) {}
  // The server's certificate did not verify: trying again will not change that.
  bool certificate_rejected() const { return certificate_rejected_; }

 private:
  bool certificate_rejected_;
};

class Transport {
 public:
  virtual ~Transport() = default;
  // Sends the request on a fresh connection and reads the whole answer; throws
  // TransportError when no complete answer arrives.
  virtual HttpResponse send(const HttpRequest& request) = 0;
};

std::unique_ptr<Transport> make_http_transport(const Endpoint& endpoint,
                                               const TransportOptions& options);

}  // namespace gpurent::cli
