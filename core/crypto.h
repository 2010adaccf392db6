// Thin wrappers over OpenSSL 3 for the primitives the project needs.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpurent::crypto {

// Cryptographically secure random bytes (RAND_bytes); throws if the CSPRNG fails.
std::vector<std::uint8_t> random_bytes(std::size_t n);

// SHA-256 of data as lowercase hex.
std::string sha256_hex(std::string_view data);

// HMAC-SHA256 of data keyed with key, as lowercase hex (64 characters).
std::string hmac_sha256_hex(std::string_view key, std::string_view data);

// Lowercase hex of raw bytes.
std::string to_hex(const std::uint8_t* data, std::size_t n);
// Lower-case hex back to bytes; nullopt for an odd length or any other character.
std::optional<std::string> from_hex(std::string_view hex);

// Standard base64 with '=' padding, on one line.
std::string base64(std::string_view data);

// SHA-256 of data, raw 32 bytes.
std::string sha256_raw(std::string_view data);

// AES-256-GCM with a random 96-bit nonce: returns nonce || ciphertext || 16-byte tag.
// `key` must be 32 bytes; `aad` is authenticated but not encrypted.
std::string seal(std::string_view key, std::string_view plaintext, std::string_view aad);

// Reverses seal(); nullopt when the key, the aad or the data do not match (tampered, or
// sealed under another key).
std::optional<std::string> open(std::string_view key, std::string_view sealed,
                                std::string_view aad);

// Compares two strings in time that depends only on their lengths.
bool constant_time_equal(std::string_view a, std::string_view b);

}  // namespace gpurent::crypto
