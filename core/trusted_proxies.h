// Which peers may tell us the client's address. Behind a reverse proxy every connection
// comes from the proxy; the proxy appends the address it saw to X-Forwarded-For. Only a
// peer listed here is believed, and only for the hops it (and other listed proxies) added:
// anything left of the first untrusted hop could have been written by the client itself.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace gpurent {

class TrustedProxies {
 public:
  TrustedProxies() = default;
  // A comma-separated list of addresses and CIDR blocks, IPv4 or IPv6:
  // "10.0.0.0/8, 127.0.0.1, ::1, fd00::/8". Throws std::invalid_argument naming the first
  // bad entry.
  static TrustedProxies parse(std::string_view list);

  bool empty() const { return blocks_.empty(); }
  bool contains(std::string_view address) const;

  // The client's address for a request from `peer`: peer itself unless it is trusted;
  // otherwise the rightmost X-Forwarded-For entry that is not a trusted proxy. A malformed
  // entry stops the walk: the hop that passed it on is the client then.
  std::string client_address(std::string_view peer, std::string_view forwarded_for) const;

 private:
  struct Block {
    bool v6 = false;
    std::array<std::uint8_t, 16> bytes{};
    int prefix = 0;
  };
  std::vector<Block> blocks_;
};

}  // namespace gpurent
