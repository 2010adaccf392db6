// Password hashing with scrypt (memory-hard, through OpenSSL 3) and constant-time checks.
#pragma once

#include <string>
#include <string_view>

namespace gpurent::identity {

struct ScryptParams {
  int log2_n = 15;  // N = 32768: 32 MiB with r = 8, tens of milliseconds per hash
  int r = 8;
  int p = 1;
};

// "scrypt$ln=15,r=8,p=1$<salt hex>$<hash hex>" with a fresh 16-byte salt.
std::string hash_password(std::string_view password, const ScryptParams& params = {});

// True when `password` matches `encoded`; false for a wrong password or a malformed or
// unsupported encoding. The comparison takes the same time wherever the bytes differ.
bool verify_password(std::string_view password, std::string_view encoded);

// Server-side policy for new passwords: 10 to 1024 bytes. Returns the reason when refused.
std::string password_policy_violation(std::string_view password);

}  // namespace gpurent::identity
