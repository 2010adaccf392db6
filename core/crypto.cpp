// OpenSSL-backed random bytes, hashing, MACs, sealing and constant-time comparison.
#include "core/crypto.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <algorithm>
#include <limits>
#include <stdexcept>

namespace gpurent::crypto {

std::vector<std::uint8_t> random_bytes(std::size_t n) {
  std::vector<std::uint8_t> out(n);
  if (n > 0 && RAND_bytes(out.data(), static_cast<int>(n)) != 1) {
    throw std::runtime_error("RAND_bytes failed");
  }
  return out;
}

std::string to_hex(const std::uint8_t* data, std::size_t n) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out(n * 2, '0');
  for (std::size_t i = 0; i < n; ++i) {
    out[2 * i] = kDigits[data[i] >> 4];
    out[2 * i + 1] = kDigits[data[i] & 0xf];
  }
  return out;
}

std::optional<std::string> from_hex(std::string_view hex) {
  if (hex.size() % 2 != 0) return std::nullopt;
  auto digit = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  std::string out;
  out.reserve(hex.size() / 2);
  for (std::size_t i = 0; i < hex.size(); i += 2) {
    int hi = digit(hex[i]);
    int lo = digit(hex[i + 1]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out.push_back(static_cast<char>(hi * 16 + lo));
  }
  return out;
}

std::string base64(std::string_view data) {
  // EVP_EncodeBlock writes a terminating NUL after the text: room for it, then cut.
  std::string out(4 * ((data.size() + 2) / 3) + 1, '\0');
  int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(data.data()),
                          static_cast<int>(data.size()));
  out.resize(static_cast<std::size_t>(n));
  return out;
}

std::string sha256_hex(std::string_view data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (EVP_Digest(data.data(), data.size(), digest, &len, EVP_sha256(), nullptr) != 1) {
    throw std::runtime_error("EVP_Digest(sha256) failed");
  }
  return to_hex(digest, len);
}

std::string sha256_raw(std::string_view data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (EVP_Digest(data.data(), data.size(), digest, &len, EVP_sha256(), nullptr) != 1) {
    throw std::runtime_error("EVP_Digest(sha256) failed");
  }
  return std::string(reinterpret_cast<const char*>(digest), len);
}

std::string hmac_sha256_hex(std::string_view key, std::string_view data) {
  if (key.size() > static_cast<std::size_t>(std::numeric_limits<int>::max())) {
    throw std::invalid_argument("HMAC key too long");
  }
  // An empty view may carry a null pointer, which OpenSSL reads as "no key" or "no data".
  static constexpr unsigned char kNothing = 0;
  const void* key_bytes = key.empty() ? &kNothing : static_cast<const void*>(key.data());
  const auto* data_bytes =
      data.empty() ? &kNothing : reinterpret_cast<const unsigned char*>(data.data());
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (HMAC(EVP_sha256(), key_bytes, static_cast<int>(key.size()), data_bytes, data.size(), mac,
           &len) == nullptr) {
    throw std::runtime_error("HMAC(sha256) failed");
  }
  return to_hex(mac, len);
}

namespace {

constexpr int kNonceBytes = 12;
constexpr int kTagBytes = 16;

struct CipherContext {
  EVP_CIPHER_CTX* ctx = EVP_CIPHER_CTX_new();
  CipherContext() {
    if (!ctx) throw std::runtime_error("EVP_CIPHER_CTX_new failed");
  }
  ~CipherContext() { EVP_CIPHER_CTX_free(ctx); }
  CipherContext(const CipherContext&) = delete;
  CipherContext& operator=(const CipherContext&) = delete;
};

const unsigned char* bytes(std::string_view s) {
  return reinterpret_cast<const unsigned char*>(s.data());
}

void check_key(std::string_view key) {
  if (key.size() != 32) throw std::invalid_argument("AES-256-GCM needs a 32-byte key");
}

}  // namespace

std::string seal(std::string_view key, std::string_view plaintext, std::string_view aad) {
  check_key(key);
  auto nonce = random_bytes(kNonceBytes);
  std::string out(kNonceBytes + plaintext.size() + kTagBytes, '\0');
  std::copy(nonce.begin(), nonce.end(), out.begin());
  auto* cipher_out = reinterpret_cast<unsigned char*>(out.data()) + kNonceBytes;
  CipherContext c;
  int len = 0;
  bool ok = EVP_EncryptInit_ex(c.ctx, EVP_aes_256_gcm(), nullptr, bytes(key), nonce.data()) == 1 &&
            (aad.empty() || EVP_EncryptUpdate(c.ctx, nullptr, &len, bytes(aad),
                                              static_cast<int>(aad.size())) == 1) &&
            EVP_EncryptUpdate(c.ctx, cipher_out, &len, bytes(plaintext),
                              static_cast<int>(plaintext.size())) == 1 &&
            EVP_EncryptFinal_ex(c.ctx, cipher_out + len, &len) == 1 &&
            EVP_CIPHER_CTX_ctrl(c.ctx, EVP_CTRL_GCM_GET_TAG, kTagBytes,
                                cipher_out + plaintext.size()) == 1;
  if (!ok) throw std::runtime_error("AES-256-GCM encryption failed");
  return out;
}

std::optional<std::string> open(std::string_view key, std::string_view sealed,
                                std::string_view aad) {
  check_key(key);
  if (sealed.size() < static_cast<std::size_t>(kNonceBytes + kTagBytes)) return std::nullopt;
  std::string_view nonce = sealed.substr(0, kNonceBytes);
  std::string_view cipher = sealed.substr(kNonceBytes, sealed.size() - kNonceBytes - kTagBytes);
  std::string tag(sealed.substr(sealed.size() - kTagBytes));
  std::string out(cipher.size(), '\0');
  auto* plain_out = reinterpret_cast<unsigned char*>(out.data());
  CipherContext c;
  int len = 0;
  bool ok = EVP_DecryptInit_ex(c.ctx, EVP_aes_256_gcm(), nullptr, bytes(key), bytes(nonce)) == 1 &&
            (aad.empty() || EVP_DecryptUpdate(c.ctx, nullptr, &len, bytes(aad),
                                              static_cast<int>(aad.size())) == 1) &&
            EVP_DecryptUpdate(c.ctx, plain_out, &len, bytes(cipher),
                              static_cast<int>(cipher.size())) == 1 &&
            EVP_CIPHER_CTX_ctrl(c.ctx, EVP_CTRL_GCM_SET_TAG, kTagBytes, tag.data()) == 1 &&
            EVP_DecryptFinal_ex(c.ctx, plain_out + len, &len) == 1;
  if (!ok) return std::nullopt;
  return out;
}

bool constant_time_equal(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

}  // namespace gpurent::crypto
