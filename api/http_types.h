// Plain request/response types that handlers see; the Beast layer converts to and from them,
// so no handler includes Beast or Asio.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gpurent::http {

enum class Method { kGet, kHead, kPost, kPut, kPatch, kDelete, kOptions, kOther };

Method parse_method(std::string_view name);
std::string_view method_name(Method m);

// Looks up request headers without copying them out of the transport's buffer.
class HeaderSource {
 public:
  virtual ~HeaderSource() = default;
  // Case-insensitive; empty when absent.
  virtual std::string_view get(std::string_view name) const = 0;
};

struct Request {
  Method method = Method::kGet;
  std::string_view target;  // as received: path and query
  std::string_view path;    // target up to '?'
  std::string_view query;   // after '?', without it
  std::string_view body;
  std::string_view request_id;
  std::string_view remote_ip;
  const HeaderSource* headers = nullptr;
  std::vector<std::pair<std::string, std::string>> path_params;  // filled by the router

  std::string_view header(std::string_view name) const {
    return headers ? headers->get(name) : std::string_view();
  }
  // The first value of a query parameter, percent-decoded.
  std::optional<std::string> query_param(std::string_view name) const;
  // A path parameter captured by the route pattern ({id}); empty when absent.
  std::string_view path_param(std::string_view name) const;
};

struct Response {
  int status = 200;
  // Points to static storage (a literal or a table entry); never to a temporary.
  std::string_view content_type = "application/json";
  std::string body;
  // A body shared between responses (cached documents); used instead of `body` when set.
  std::shared_ptr<const std::string> shared_body;
  std::vector<std::pair<std::string, std::string>> headers;
  bool close = false;  // close the connection after this response

  std::string_view body_view() const { return shared_body ? *shared_body : body; }
  void set_header(std::string name, std::string value) {
    headers.emplace_back(std::move(name), std::move(value));
  }
};

// Percent-decodes a URL component; nullopt on a malformed escape or a NUL byte.
std::optional<std::string> percent_decode(std::string_view s, bool plus_as_space);

// The standard reason phrase for a status code.
std::string_view reason_phrase(int status);

}  // namespace gpurent::http
