// Tests the OpenSSL wrappers: random bytes, SHA-256, HMAC, hex and constant-time comparison.
#include "core/crypto.h"

#include <gtest/gtest.h>

#include <set>

namespace gpurent::crypto {
namespace crypto_test {

TEST(RandomBytes, ReturnsTheRequestedLength) {
  EXPECT_TRUE(random_bytes(0).empty());
  EXPECT_EQ(random_bytes(1).size(), 1u);
  EXPECT_EQ(random_bytes(32).size(), 32u);
  EXPECT_EQ(random_bytes(100'000).size(), 100'000u);
}

TEST(RandomBytes, CallsDiffer) {
  std::set<std::vector<std::uint8_t>> seen;
  for (int i = 0; i < 100; ++i) EXPECT_TRUE(seen.insert(random_bytes(16)).second);
}

TEST(RandomBytes, UsesEveryByteValue) {
  auto bytes = random_bytes(64 * 1024);  // each value ~256 times; none missing by chance
  std::set<std::uint8_t> values(bytes.begin(), bytes.end());
  EXPECT_EQ(values.size(), 256u);
}

TEST(Sha256Hex, KnownVectors) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

TEST(Sha256Hex, HashesEmbeddedNulBytes) {
  std::string with_nul("a\0b", 3);
  EXPECT_NE(sha256_hex(with_nul), sha256_hex("a"));
  EXPECT_EQ(sha256_hex(with_nul).size(), 64u);
}

TEST(ToHex, LowercaseTwoDigitsPerByte) {
  const std::uint8_t data[] = {0x00, 0x0f, 0xab, 0xff, 0x10};
  EXPECT_EQ(to_hex(data, sizeof data), "000fabff10");
  EXPECT_EQ(to_hex(data, 0), "");
}

TEST(FromHex, ReversesToHexAndRefusesAnythingElse) {
  const std::uint8_t data[] = {0x00, 0x0f, 0xab, 0xff, 0x10};
  EXPECT_EQ(from_hex("000fabff10"), std::string(reinterpret_cast<const char*>(data), sizeof data));
  EXPECT_EQ(from_hex(""), "");
  EXPECT_EQ(from_hex("abc"), std::nullopt) << "odd length";
  EXPECT_EQ(from_hex("0G"), std::nullopt);
  EXPECT_EQ(from_hex("AB"), std::nullopt) << "lower case only, as to_hex writes";
}

TEST(ConstantTimeEqual, ComparesContent) {
  EXPECT_TRUE(constant_time_equal("", ""));
  EXPECT_TRUE(constant_time_equal("secret-token", "secret-token"));
  EXPECT_FALSE(constant_time_equal("secret-token", "secret-tokeN"));
  EXPECT_FALSE(constant_time_equal("Secret-token", "secret-token"));
  EXPECT_FALSE(constant_time_equal("secret", "secret-token"));
  EXPECT_FALSE(constant_time_equal("secret-token", "secret"));
  EXPECT_FALSE(constant_time_equal("", "a"));
  EXPECT_FALSE(constant_time_equal(std::string("a\0b", 3), std::string("a\0c", 3)));
  EXPECT_TRUE(constant_time_equal(std::string("a\0b", 3), std::string("a\0b", 3)));
}

std::string from_hex(std::string_view hex) {
  std::string out;
  for (std::size_t i = 0; i + 1 < hex.size(); i += 2) {
    out.push_back(static_cast<char>(std::stoi(std::string(hex.substr(i, 2)), nullptr, 16)));
  }
  return out;
}

TEST(Seal, RoundTripsWithTheSameKeyAndAad) {
  std::string key(32, 'k');
  std::string sealed = seal(key, "the response body", "scope-1");
  EXPECT_EQ(sealed.size(), 12u + 17u + 16u);
  EXPECT_EQ(sealed.find("response"), std::string::npos);
  EXPECT_EQ(open(key, sealed, "scope-1"), "the response body");
  EXPECT_EQ(open(key, seal(key, "", ""), ""), "");
}

TEST(Seal, FreshNonceEveryTime) {
  std::string key(32, 'k');
  EXPECT_NE(seal(key, "same", ""), seal(key, "same", ""));
}

TEST(Seal, RefusesAnotherKeyAnotherAadOrTamperedData) {
  std::string key(32, 'k');
  std::string sealed = seal(key, "the response body", "scope-1");
  EXPECT_EQ(open(std::string(32, 'x'), sealed, "scope-1"), std::nullopt);
  EXPECT_EQ(open(key, sealed, "scope-2"), std::nullopt);
  for (std::size_t i : {0ul, 12ul, sealed.size() - 1}) {
    std::string bad = sealed;
    bad[i] = static_cast<char>(bad[i] ^ 1);
    EXPECT_EQ(open(key, bad, "scope-1"), std::nullopt) << "byte " << i;
  }
  EXPECT_EQ(open(key, sealed.substr(0, 27), "scope-1"), std::nullopt);
  EXPECT_THROW(seal("short", "x", ""), std::invalid_argument);
}

// AES-256-GCM test case 14 of the GCM specification (McGrew and Viega): zero key, zero
// 96-bit IV, one zero block.
TEST(Seal, OpensTheGcmSpecificationVector) {
  std::string key(32, '\0');
  std::string sealed = from_hex(
      "000000000000000000000000"
      "cea7403d4d606b6e074ec5d3baf39d18"
      "d0d1c8a799996bf0265b98b5d48ab919");
  EXPECT_EQ(open(key, sealed, ""), std::string(16, '\0'));
}

// RFC 4231 test case 2: a key shorter than the block, ASCII key and data.
TEST(HmacSha256Hex, Rfc4231TestCase2) {
  EXPECT_EQ(hmac_sha256_hex("Jefe", "what do ya want for nothing?"),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
}

// RFC 4231 test case 6: a key longer than the block is hashed first.
TEST(HmacSha256Hex, Rfc4231TestCase6LongKey) {
  EXPECT_EQ(hmac_sha256_hex(std::string(131, '\xaa'),
                            "Test Using Larger Than Block-Size Key - Hash Key First"),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
}

TEST(HmacSha256Hex, KeyAndDataBothMatter) {
  std::string mac = hmac_sha256_hex("key", "data");
  EXPECT_EQ(mac.size(), 64u);
  EXPECT_NE(hmac_sha256_hex("key2", "data"), mac);
  EXPECT_NE(hmac_sha256_hex("key", "data2"), mac);
  EXPECT_NE(hmac_sha256_hex("", "data"), mac);
}

// Empty views may hold null pointers; the MAC of nothing under no key is still defined.
TEST(HmacSha256Hex, EmptyKeyAndData) {
  const std::string kEmpty = "b613679a0814d9ec772f95d778c35fc5ff1697c493715653c6c712144292c5ad";
  EXPECT_EQ(hmac_sha256_hex(std::string_view(), std::string_view()), kEmpty);
  EXPECT_EQ(hmac_sha256_hex("", ""), kEmpty);
}

TEST(Sha256Raw, IsTheBinaryFormOfTheHex) {
  std::string raw = sha256_raw("abc");
  EXPECT_EQ(to_hex(reinterpret_cast<const std::uint8_t*>(raw.data()), raw.size()),
            sha256_hex("abc"));
}

}  // namespace crypto_test
}  // namespace gpurent::crypto
