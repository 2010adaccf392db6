// Fuzz target: the client address behind a reverse proxy (core/trusted_proxies.h), which
// rate limits, login throttling and the audit log's `ip` are keyed by. The input is three
// lines: the trusted_proxies setting, the TCP peer, then the X-Forwarded-For value; a
// setting that does not parse is replaced by a typical one, so the walk is fuzzed either way.
//
// A setting parses or is refused with std::invalid_argument (start-up stops on it), and each
// address it lists is then trusted. The client is the peer unless the peer is trusted;
// otherwise it is the hop a right-to-left walk of the header reaches (split, trimmed, here
// with vectors): past trusted entries, stopping at the first untrusted one or before a
// malformed one. So it is always an address, never a list or something printed in a log as
// anything else, and a client cannot change it by writing more hops in front of its own.
#include "core/trusted_proxies.h"

#include <arpa/inet.h>

#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace {

using gpurent::TrustedProxies;

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  std::size_t start = 0;
  for (std::size_t i = 0; i <= s.size(); ++i) {
    if (i == s.size() || s[i] == sep) {
      out.push_back(s.substr(start, i - start));
      start = i + 1;
    }
  }
  return out;
}

// inet_pton reads a C string: text with a NUL in it is no address, whatever comes before.
bool is_address(std::string_view s) {
  if (s.empty() || s.size() > 45 || s.find('\0') != std::string_view::npos) return false;
  std::string text(s);
  unsigned char bytes[16];
  return inet_pton(AF_INET, text.c_str(), bytes) == 1 ||
         inet_pton(AF_INET6, text.c_str(), bytes) == 1;
}

std::string expected_client(const TrustedProxies& proxies, std::string_view peer,
                            std::string_view forwarded_for) {
  if (!proxies.contains(peer)) return std::string(peer);
  std::string_view hop = peer;
  if (forwarded_for.empty()) return std::string(hop);
  auto entries = split(forwarded_for, ',');
  for (auto it = entries.rbegin(); it != entries.rend(); ++it) {
    std::string_view entry = trim(*it);
    if (!is_address(entry)) break;
    hop = entry;
    if (!proxies.contains(entry)) break;
  }
  return std::string(hop);
}

TrustedProxies setting(std::string_view list) {
  try {
    auto proxies = TrustedProxies::parse(list);
    for (auto entry : split(list, ',')) {
      entry = trim(entry);
      if (entry.empty()) continue;
      if (!proxies.contains(entry.substr(0, entry.find('/')))) abort();
    }
    return proxies;
  } catch (const std::invalid_argument& e) {
    if (std::string_view(e.what()).empty()) abort();
    return TrustedProxies::parse("10.0.0.0/8, 127.0.0.1, ::1, fd00::/8, 192.0.2.0/25");
  }
}

void check(std::string_view input) {
  auto lines = split(input, '\n');
  lines.resize(3);
  TrustedProxies proxies = setting(lines[0]);
  std::string_view peer = lines[1], forwarded_for = lines[2];

  std::string client = proxies.client_address(peer, forwarded_for);
  if (client != expected_client(proxies, peer, forwarded_for)) abort();
  if (!proxies.contains(peer)) return;
  // The peer was believed to be an address; so is anything it let through.
  if (!is_address(client)) abort();
  if (client.find_first_of(", \t") != std::string::npos) abort();

  // Hops written in front of an untrusted client's own are the client's words, not the
  // proxies': they change nothing.
  if (!proxies.contains(client)) {
    for (std::string_view spoof : {"198.51.100.7, ", "::1,", "garbage , 10.0.0.1,", ","}) {
      if (proxies.client_address(peer, std::string(spoof) + std::string(forwarded_for)) != client) {
        abort();
      }
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    check(std::string_view(reinterpret_cast<const char*>(data), size));
  } catch (...) {
    abort();  // only a setting may be refused, and only with std::invalid_argument
  }
  return 0;
}
