// Thin wrappers over OpenSSL 3 for the primitives the project needs.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace gpurent::crypto {

// Cryptographically secure random bytes (RAND_bytes); throws if the CSPRNG fails.
std::vector<std::uint8_t> random_bytes(std::size_t n);

// SHA-256 of data as lowercase hex.
std::string sha256_hex(std::string_view data);

// Lowercase hex of raw bytes.
std::string to_hex(const std::uint8_t* data, std::size_t n);

// Compares two strings in time that depends only on their lengths.
bool constant_time_equal(std::string_view a, std::string_view b);

}  // namespace gpurent::crypto
