// scrypt hashing and verification; the encoding carries its parameters so they can grow.
#include "identity/password.h"

#include "core/crypto.h"

#include <openssl/evp.h>

#include <charconv>
#include <stdexcept>
#include <vector>

namespace gpurent::identity {
namespace {

constexpr std::size_t kSaltBytes = 16;
constexpr std::size_t kHashBytes = 32;
constexpr std::uint64_t kMaxMemory = 256ull * 1024 * 1024;

std::vector<std::uint8_t> derive(std::string_view password, const std::uint8_t* salt,
                                 std::size_t salt_len, const ScryptParams& p) {
  std::vector<std::uint8_t> out(kHashBytes);
  if (EVP_PBE_scrypt(password.data(), password.size(), salt, salt_len, std::uint64_t{1} << p.log2_n,
                     static_cast<std::uint64_t>(p.r), static_cast<std::uint64_t>(p.p), kMaxMemory,
                     out.data(), out.size()) != 1) {
    throw std::runtime_error("EVP_PBE_scrypt failed");
  }
  return out;
}

bool from_hex(std::string_view hex, std::vector<std::uint8_t>& out) {
  if (hex.size() % 2 != 0) return false;
  out.clear();
  for (std::size_t i = 0; i < hex.size(); i += 2) {
    unsigned value = 0;
    auto [ptr, ec] = std::from_chars(hex.data() + i, hex.data() + i + 2, value, 16);
    if (ec != std::errc() || ptr != hex.data() + i + 2) return false;
    out.push_back(static_cast<std::uint8_t>(value));
  }
  return true;
}

bool parse_int(std::string_view s, int& out) {
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && ptr == s.data() + s.size();
}

}  // namespace

std::string hash_password(std::string_view password, const ScryptParams& params) {
  auto salt = crypto::random_bytes(kSaltBytes);
  auto hash = derive(password, salt.data(), salt.size(), params);
  return "scrypt$ln=" + std::to_string(params.log2_n) + ",r=" + std::to_string(params.r) +
         ",p=" + std::to_string(params.p) + "$" + crypto::to_hex(salt.data(), salt.size()) + "$" +
         crypto::to_hex(hash.data(), hash.size());
}

bool verify_password(std::string_view password, std::string_view encoded) {
  // scrypt$ln=15,r=8,p=1$salt$hash
  auto next = [&](std::string_view& rest) {
    auto d = rest.find('$');
    std::string_view part = rest.substr(0, d);
    rest = d == std::string_view::npos ? std::string_view() : rest.substr(d + 1);
    return part;
  };
  std::string_view rest = encoded;
  if (next(rest) != "scrypt") return false;
  std::string_view params_text = next(rest), salt_hex = next(rest), hash_hex = rest;
  ScryptParams p;
  if (params_text.substr(0, 3) != "ln=") return false;
  auto c1 = params_text.find(",r="), c2 = params_text.find(",p=");
  if (c1 == std::string_view::npos || c2 == std::string_view::npos || c2 < c1) return false;
  if (!parse_int(params_text.substr(3, c1 - 3), p.log2_n) ||
      !parse_int(params_text.substr(c1 + 3, c2 - c1 - 3), p.r) ||
      !parse_int(params_text.substr(c2 + 3), p.p)) {
    return false;
  }
  if (p.log2_n < 1 || p.log2_n > 20 || p.r < 1 || p.r > 32 || p.p < 1 || p.p > 16) return false;
  std::vector<std::uint8_t> salt, expected;
  if (!from_hex(salt_hex, salt) || !from_hex(hash_hex, expected) || expected.size() != kHashBytes) {
    return false;
  }
  auto actual = derive(password, salt.data(), salt.size(), p);
  return crypto::constant_time_equal(
      std::string_view(reinterpret_cast<const char*>(actual.data()), actual.size()),
      std::string_view(reinterpret_cast<const char*>(expected.data()), expected.size()));
}

std::string password_policy_violation(std::string_view password) {
  if (password.size() < 10) return "must be at least 10 characters";
  if (password.size() > 1024) return "must be at most 1024 bytes";
  return "";
}

}  // namespace gpurent::identity
