// The control plane's agent endpoint as the operator gives it: https://HOST[:PORT].
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace gpurent::agent {

struct ServerUrl {
  std::string host;  // a name or an address; IPv6 without its brackets
  unsigned short port = 443;

  bool operator==(const ServerUrl&) const = default;
};

// nullopt for anything but https with a host, an optional port 1-65535 and at most "/".
// Paths are the protocol's, never the operator's: a URL with one is a mistake to report.
std::optional<ServerUrl> parse_server_url(std::string_view text);

}  // namespace gpurent::agent
