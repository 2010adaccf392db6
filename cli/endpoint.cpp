// The API's URL taken apart, and the response header lookup: the transport's pure parts.
#include "cli/http_transport.h"

#include <algorithm>
#include <cctype>

namespace gpurent::cli {

std::string HttpResponse::header(const std::string& lower_name) const {
  for (const auto& [name, value] : headers) {
    if (name == lower_name) return value;
  }
  return "";
}

Endpoint parse_endpoint(const std::string& url) {
  Endpoint e;
  std::string rest;
  if (url.rfind("https://", 0) == 0) {
    e.tls = true;
    rest = url.substr(8);
  } else if (url.rfind("http://", 0) == 0) {
    rest = url.substr(7);
  } else {
    throw std::invalid_argument("the API URL must start with http:// or https://: " + url);
  }
  auto slash = rest.find('/');
  std::string authority = rest.substr(0, slash);
  std::string path = slash == std::string::npos ? "" : rest.substr(slash);
  if (authority.find('@') != std::string::npos) {
    throw std::invalid_argument("the API URL must not carry credentials; use --token");
  }
  if (path.find_first_of("?#") != std::string::npos) {
    throw std::invalid_argument("the API URL must not have a query or fragment: " + url);
  }
  while (!path.empty() && path.back() == '/') path.pop_back();
  e.base_path = path;
  if (!authority.empty() && authority.front() == '[') {  // [::1]:8080
    auto close = authority.find(']');
    if (close == std::string::npos) throw std::invalid_argument("bad IPv6 address in " + url);
    e.host = authority.substr(1, close - 1);
    std::string after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') throw std::invalid_argument("bad port in " + url);
      e.port = after.substr(1);
    }
  } else {
    auto colon = authority.rfind(':');
    e.host = authority.substr(0, colon);
    if (colon != std::string::npos) e.port = authority.substr(colon + 1);
  }
  if (e.host.empty()) throw std::invalid_argument("the API URL names no host: " + url);
  if (e.port.empty()) e.port = e.tls ? "443" : "80";
  bool digits = std::all_of(e.port.begin(), e.port.end(),
                            [](unsigned char c) { return std::isdigit(c) != 0; });
  if (!digits || e.port.size() > 5 || std::stoi(e.port) < 1 || std::stoi(e.port) > 65535) {
    throw std::invalid_argument("bad port in the API URL: " + url);
  }
  return e;
}

}  // namespace gpurent::cli
