// The webhook URL parser and the internal address table, without a network: every accepted
// shape, every refusal with its reason, and each internal range at its edges.
#include "webhooks/webhook_url.h"
#include "webhooks/sender.h"

#include <gtest/gtest.h>

#include <string>
#include <variant>

namespace gpurent::webhooks {
namespace webhook_url_test {

WebhookUrl parsed(const std::string& text) {
  auto r = parse_webhook_url(text);
  EXPECT_TRUE(std::holds_alternative<WebhookUrl>(r))
      << text << ": " << (std::holds_alternative<UrlError>(r) ? std::get<UrlError>(r).reason : "");
  return std::holds_alternative<WebhookUrl>(r) ? std::get<WebhookUrl>(r) : WebhookUrl{};
}

std::string refusal(const std::string& text) {
  auto r = parse_webhook_url(text);
  return std::holds_alternative<UrlError>(r) ? std::get<UrlError>(r).reason : "";
}

TEST(WebhookUrl, AcceptsHttpAndHttpsWithHostsPortsPathsAndQueries) {
  struct Case {
    std::string text;
    bool https;
    std::string host;
    int port;
    std::string target;
    bool ip;
  };
  for (const auto& c : std::vector<Case>{
           {"https://hooks.example.com/gpurent", true, "hooks.example.com", 443, "/gpurent", false},
           {"HTTP://Hooks.Example.COM", false, "hooks.example.com", 80, "/", false},
           {"http://example.com:8080/a/b?x=1&y=%20", false, "example.com", 8080, "/a/b?x=1&y=%20",
            false},
           {"https://example.com?x=1", true, "example.com", 443, "/?x=1", false},
           {"http://203.0.114.7:9000/in", false, "203.0.114.7", 9000, "/in", true},
           {"https://[2a00:1450:4010::65]/x", true, "2a00:1450:4010::65", 443, "/x", true},
           {"http://[::1]:65535/", false, "::1", 65535, "/", true},
           {"https://example.com./abs", true, "example.com.", 443, "/abs", false},
           {"http://a-b.c-d.example/", false, "a-b.c-d.example", 80, "/", false},
       }) {
    SCOPED_TRACE(c.text);
    auto u = parsed(c.text);
    EXPECT_EQ(u.https, c.https);
    EXPECT_EQ(u.host, c.host);
    EXPECT_EQ(u.port, c.port);
    EXPECT_EQ(u.target, c.target);
    EXPECT_EQ(u.host_is_ip, c.ip);
    // The normalised text parses to the same URL.
    auto again = parsed(u.text());
    EXPECT_EQ(again.host, u.host);
    EXPECT_EQ(again.port, u.port);
    EXPECT_EQ(again.target, u.target);
  }
}

TEST(WebhookUrl, RefusesWhatIsNotAPlainHttpUrlAndSaysWhy) {
  struct Case {
    std::string text;
    std::string reason;
  };
  for (const auto& c : std::vector<Case>{
           {"", "must not be empty"},
           {"ftp://example.com/", "must be an http:// or https:// URL"},
           {"file:///etc/passwd", "must be an http:// or https:// URL"},
           {"gopher://example.com", "must be an http:// or https:// URL"},
           {"//example.com/", "must be an http:// or https:// URL"},
           {"https://user:pass@example.com/", "must not carry a user name or password"},
           {"https://example.com@evil.example/", "must not carry a user name or password"},
           {"https://example.com/#frag", "must not have a fragment"},
           {"https://exa mple.com/", "must be ASCII without spaces or control characters"},
           {"https://example.com/\n", "must be ASCII without spaces or control characters"},
           {"https://пример.рф/", "must be ASCII without spaces or control characters"},
           {"https:///path", "has no host"},
           {"https://:443/", "has no host"},
           {"https://example.com:/", "has an empty port"},
           {"https://example.com:0/", "has a port outside 1 to 65535"},
           {"https://example.com:65536/", "has a port outside 1 to 65535"},
           {"https://example.com:99999999/", "has an invalid port"},
           {"https://example.com:8a/", "has an invalid port"},
           {"https://[::1/", "has an unclosed IPv6 literal"},
           {"https://[fe80::1%25eth0]/", "has an invalid IPv6 literal"},
           {"https://[1.2.3.4]/", "has an invalid IPv6 literal"},
           {"https://[::1]x/", "has an invalid host"},
           {"https://127.1/", "has an invalid IPv4 address"},
           {"https://2130706433/", "has an invalid IPv4 address"},
           {"https://010.0.0.1/", "has an invalid IPv4 address"},
           {"https://256.0.0.1/", "has an invalid IPv4 address"},
           {"https://exa_mple.com/", "has an invalid host name"},
           {"https://-example.com/", "has an invalid host name"},
           {"https://example-.com/", "has an invalid host name"},
           {"https://a..b/", "has an invalid host name"},
           {"https://example.123/", "has an invalid host name"},
           {"https://" + std::string(64, 'a') + ".com/", "has an invalid host name"},
           {"https://example.com\\@evil/", "must not carry a user name or password"},
           {"https://example.com/" + std::string(2048, 'a'), "must be at most 2048 bytes"},
       }) {
    SCOPED_TRACE(c.text);
    EXPECT_EQ(refusal(c.text), c.reason);
  }
}

TEST(InternalAddresses, EveryRangeIsRefusedAtItsEdgesAndItsNeighboursAreNot) {
  struct Case {
    std::string address;
    bool internal;
  };
  for (const auto& c : std::vector<Case>{
           {"0.0.0.0", true},
           {"0.255.255.255", true},
           {"1.0.0.0", false},
           {"9.255.255.255", false},
           {"10.0.0.0", true},
           {"10.255.255.255", true},
           {"11.0.0.0", false},
           {"100.63.255.255", false},
           {"100.64.0.0", true},
           {"100.127.255.255", true},
           {"100.128.0.0", false},
           {"126.255.255.255", false},
           {"127.0.0.1", true},
           {"127.255.255.255", true},
           {"128.0.0.0", false},
           {"169.253.255.255", false},
           {"169.254.169.254", true},
           {"169.255.0.0", false},
           {"172.15.255.255", false},
           {"172.16.0.0", true},
           {"172.31.255.255", true},
           {"172.32.0.0", false},
           {"192.0.0.8", true},
           {"192.0.2.1", true},
           {"192.0.3.1", false},
           {"192.167.255.255", false},
           {"192.168.0.1", true},
           {"192.169.0.0", false},
           {"198.17.255.255", false},
           {"198.18.0.0", true},
           {"198.19.255.255", true},
           {"198.20.0.0", false},
           {"198.51.100.7", true},
           {"203.0.113.9", true},
           {"203.0.114.9", false},
           {"223.255.255.255", false},
           {"224.0.0.1", true},
           {"255.255.255.255", true},
           {"8.8.8.8", false},
           {"::", true},
           {"::1", true},
           {"::ffff:127.0.0.1", true},
           {"::ffff:8.8.8.8", false},
           {"::127.0.0.1", true},
           {"64:ff9b::10.0.0.1", true},
           {"64:ff9b::8.8.8.8", false},
           {"2002:7f00:1::", true},
           {"2002:808:808::", false},
           {"fc00::1", true},
           {"fdff:ffff::1", true},
           {"fe80::1", true},
           {"febf::1", true},
           {"fec0::1", true},
           {"ff02::1", true},
           {"2001:db8::1", true},
           {"100::1", true},
           {"2a00:1450:4010::65", false},
           {"2001:4860:4860::8888", false},
       }) {
    SCOPED_TRACE(c.address);
    auto ip = parse_ip(c.address);
    ASSERT_TRUE(ip);
    EXPECT_EQ(is_internal_address(*ip), c.internal);
  }
}

TEST(ParseIp, RefusesWhatIsNotALiteral) {
  for (const char* text : {"", "1.2.3", "1.2.3.4.5", "1.2.3.04", "1.2.3.256", "a.b.c.d", "1..2.3",
                           "1.2.3.4 ", ":::", "1::2::3", "fe80::1%eth0", "1.2.3.-4"}) {
    SCOPED_TRACE(text);
    EXPECT_FALSE(parse_ip(text));
  }
}

// The sender checks every address a host resolves to before it connects: a literal loopback
// or metadata address is refused without a packet sent, unless internal addresses are allowed.
TEST(HttpSender, RefusesInternalAddressesUnlessAllowed) {
  auto sender = make_http_sender({.allow_internal = false});
  for (const char* url : {"http://127.0.0.1:9/", "http://169.254.169.254/latest/meta-data",
                          "http://[::1]:9/", "http://10.1.2.3/", "http://localhost:9/"}) {
    SCOPED_TRACE(url);
    auto result = sender->post(parsed(url), "{}", {}, std::chrono::seconds(2));
    EXPECT_FALSE(result.status);
    EXPECT_EQ(result.error, "the host resolves to an internal address, which is refused");
  }
  // Allowed, a closed port on loopback is a connection error, not a refusal.
  auto open = make_http_sender({.allow_internal = true});
  auto result = open->post(parsed("http://127.0.0.1:9/"), "{}", {}, std::chrono::seconds(2));
  EXPECT_FALSE(result.status);
  EXPECT_NE(result.error.find("could not connect"), std::string::npos) << result.error;
}

}  // namespace webhook_url_test
}  // namespace gpurent::webhooks
