// TrustedProxies: parsing, CIDR matching and the X-Forwarded-For walk.
#include "core/trusted_proxies.h"

#include <gtest/gtest.h>

namespace gpurent {
namespace trusted_proxies_test {

TEST(TrustedProxies, ParsesAddressesAndBlocks) {
  auto t = TrustedProxies::parse(" 10.0.0.0/8, 127.0.0.1,::1 , fd00::/8,");
  EXPECT_FALSE(t.empty());
  EXPECT_TRUE(t.contains("10.1.2.3"));
  EXPECT_TRUE(t.contains("127.0.0.1"));
  EXPECT_FALSE(t.contains("127.0.0.2"));
  EXPECT_TRUE(t.contains("::1"));
  EXPECT_TRUE(t.contains("fd12:3456::1"));
  EXPECT_FALSE(t.contains("fe80::1"));
  EXPECT_FALSE(t.contains("11.0.0.1"));
  EXPECT_TRUE(t.contains("::ffff:10.9.8.7")) << "IPv4-mapped IPv6 is the IPv4 address";
  EXPECT_FALSE(t.contains("not an address"));
  EXPECT_TRUE(TrustedProxies::parse("").empty());
}

TEST(TrustedProxies, PrefixesThatAreNotWholeBytes) {
  auto t = TrustedProxies::parse("192.168.4.0/22, 0.0.0.0/0");
  EXPECT_TRUE(t.contains("8.8.8.8")) << "/0 matches every IPv4 address";
  EXPECT_FALSE(t.contains("2001:db8::1")) << "but no IPv6 one";
  auto narrow = TrustedProxies::parse("192.168.4.0/22");
  EXPECT_TRUE(narrow.contains("192.168.7.255"));
  EXPECT_FALSE(narrow.contains("192.168.8.0"));
  EXPECT_FALSE(narrow.contains("192.168.3.255"));
}

TEST(TrustedProxies, RefusesBadEntriesNamingThem) {
  for (const char* bad : {"10.0.0.0/33", "::1/129", "10.0.0.0/", "10.0.0.0/x", "10.0.0.300",
                          "proxy.local", "10.0.0.0/8/8", "1.2.3.4/-1"}) {
    try {
      TrustedProxies::parse(std::string("127.0.0.1, ") + bad);
      ADD_FAILURE() << bad << " was accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(bad), std::string::npos) << e.what();
    }
  }
}

TEST(TrustedProxies, UntrustedPeerIsTheClientWhateverItClaims) {
  auto t = TrustedProxies::parse("10.0.0.1");
  EXPECT_EQ(t.client_address("203.0.113.9", "198.51.100.1"), "203.0.113.9");
  EXPECT_EQ(TrustedProxies().client_address("10.0.0.1", "198.51.100.1"), "10.0.0.1")
      << "no trusted proxies: the header is ignored";
}

TEST(TrustedProxies, TakesTheRightmostUntrustedHop) {
  auto t = TrustedProxies::parse("10.0.0.0/8");
  EXPECT_EQ(t.client_address("10.0.0.1", "198.51.100.7"), "198.51.100.7");
  // The client wrote the first entry itself; the proxies appended the rest.
  EXPECT_EQ(t.client_address("10.0.0.1", "1.1.1.1, 198.51.100.7, 10.0.0.2"), "198.51.100.7");
  EXPECT_EQ(t.client_address("10.0.0.1", "  2001:db8::5 ,10.2.2.2"), "2001:db8::5");
  // Only trusted hops: the leftmost of them.
  EXPECT_EQ(t.client_address("10.0.0.1", "10.0.0.3, 10.0.0.2"), "10.0.0.3");
  EXPECT_EQ(t.client_address("10.0.0.1", ""), "10.0.0.1");
}

TEST(TrustedProxies, AMalformedEntryStopsTheWalk) {
  auto t = TrustedProxies::parse("10.0.0.0/8");
  EXPECT_EQ(t.client_address("10.0.0.1", "198.51.100.7, garbage"), "10.0.0.1");
  EXPECT_EQ(t.client_address("10.0.0.1", "198.51.100.7, unknown, 10.0.0.2"), "10.0.0.2");
  EXPECT_EQ(t.client_address("10.0.0.1", std::string(5000, '9')), "10.0.0.1");
}

}  // namespace trusted_proxies_test
}  // namespace gpurent
