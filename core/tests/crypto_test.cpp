// Tests the OpenSSL wrappers: random bytes, SHA-256, hex and constant-time comparison.
#include "core/crypto.h"

#include <gtest/gtest.h>

#include <set>

namespace gpurent::crypto {
namespace {

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

}  // namespace
}  // namespace gpurent::crypto
