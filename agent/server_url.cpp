// Parses the --url flag.
#include "agent/server_url.h"

#include <charconv>

namespace gpurent::agent {

std::optional<ServerUrl> parse_server_url(std::string_view text) {
  constexpr std::string_view kScheme = "https://";
  if (text.substr(0, kScheme.size()) != kScheme) return std::nullopt;
  text.remove_prefix(kScheme.size());
  if (!text.empty() && text.back() == '/') text.remove_suffix(1);
  ServerUrl url;
  std::string_view port;
  if (!text.empty() && text.front() == '[') {
    auto close = text.find(']');
    if (close == std::string_view::npos) return std::nullopt;
    url.host = std::string(text.substr(1, close - 1));
    text.remove_prefix(close + 1);
    if (!text.empty()) {
      if (text.front() != ':') return std::nullopt;
      port = text.substr(1);
      if (port.empty()) return std::nullopt;
    }
  } else {
    auto colon = text.find(':');
    url.host = std::string(text.substr(0, colon));
    if (colon != std::string_view::npos) {
      port = text.substr(colon + 1);
      if (port.empty()) return std::nullopt;
    }
  }
  if (url.host.empty() || url.host.find_first_of("/?#@ ") != std::string::npos) return std::nullopt;
  if (!port.empty()) {
    unsigned value = 0;
    auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
    if (ec != std::errc() || end != port.data() + port.size() || value == 0 || value > 65535) {
      return std::nullopt;
    }
    url.port = static_cast<unsigned short>(value);
  }
  return url;
}

}  // namespace gpurent::agent
