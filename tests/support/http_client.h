// A small blocking HTTP/1.1 client over raw sockets, for end-to-end tests: it can send
// well-formed requests and also the broken, partial and hostile ones a real client never would.
#pragma once

#include <nlohmann/json.hpp>

#include <chrono>
#include <map>
#include <string>
#include <vector>

namespace gpurent::testing {

struct HttpResult {
  int status = 0;
  std::map<std::string, std::string> headers;  // names lower-cased
  std::string body;
  nlohmann::json json() const { return nlohmann::json::parse(body); }
  std::string header(const std::string& lower_name) const {
    auto it = headers.find(lower_name);
    return it == headers.end() ? "" : it->second;
  }
};

// One TCP connection to 127.0.0.1:port.
class RawConnection {
 public:
  explicit RawConnection(int port);
  ~RawConnection();
  RawConnection(const RawConnection&) = delete;
  RawConnection& operator=(const RawConnection&) = delete;

  // Sends all bytes; false if the peer has closed or reset.
  bool send(const std::string& bytes);
  // Reads one response (status line, headers, Content-Length body). Throws on timeout or
  // when the connection closes first. `head` = the request was HEAD (no body follows).
  HttpResult read_response(std::chrono::milliseconds timeout = std::chrono::seconds(10),
                           bool head = false);
  // True when the server closes the connection (EOF or reset) within `timeout`;
  // any bytes received meanwhile are appended to `received`.
  bool closed_within(std::chrono::milliseconds timeout, std::string* received = nullptr);

 private:
  bool fill(std::chrono::steady_clock::time_point deadline);
  int fd_ = -1;
  std::string buffer_;
};

// Convenience: one request on a fresh connection.
HttpResult http_request(int port, const std::string& method, const std::string& target,
                        const std::string& body = "",
                        const std::map<std::string, std::string>& headers = {},
                        std::chrono::milliseconds timeout = std::chrono::seconds(30));

// One value from gpurentd's /metrics (a line "name value"), or -1 when it is not there.
long long read_metric(int port, const std::string& name);

// Builds the bytes of a request (adds Host and Content-Length).
std::string build_request(const std::string& method, const std::string& target,
                          const std::string& body = "",
                          const std::map<std::string, std::string>& headers = {});

}  // namespace gpurent::testing
