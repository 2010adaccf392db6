// Prefixed id generation and validation.
#include "core/id.h"

#include "core/crypto.h"

#include <array>
#include <random>

namespace gpurent {
namespace {

constexpr std::string_view kBase62 =
    "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
constexpr std::size_t kRandomChars = 22;  // 62^22 > 2^128

bool is_base62(char c) {
  return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z');
}

// A per-thread generator seeded from the CSPRNG: request ids need uniqueness, not secrecy,
// and must not cost a syscall on the hot path.
std::mt19937_64& request_rng() {
  thread_local std::mt19937_64 rng = [] {
    auto seed = crypto::random_bytes(8);
    std::uint64_t s = 0;
    for (auto b : seed) s = (s << 8) | b;
    return std::mt19937_64(s);
  }();
  return rng;
}

}  // namespace

std::string new_id(std::string_view prefix) {
  auto bytes = crypto::random_bytes(kRandomChars);
  std::string id(prefix);
  id.push_back('_');
  // 62 does not divide 256; rejection sampling keeps the characters uniform.
  std::size_t produced = 0;
  while (produced < kRandomChars) {
    for (auto b : bytes) {
      if (produced == kRandomChars) break;
      if (b >= 248) continue;  // 248 = 4 * 62
      id.push_back(kBase62[b % 62]);
      ++produced;
    }
    if (produced < kRandomChars) bytes = crypto::random_bytes(kRandomChars);
  }
  return id;
}

bool is_valid_id(std::string_view prefix, std::string_view id) {
  if (id.size() != prefix.size() + 1 + kRandomChars) return false;
  if (id.substr(0, prefix.size()) != prefix || id[prefix.size()] != '_') return false;
  for (char c : id.substr(prefix.size() + 1)) {
    if (!is_base62(c)) return false;
  }
  return true;
}

std::string new_request_id() {
  std::uint64_t a = request_rng()();
  std::string id = "req_";
  id.reserve(4 + 16);
  for (int i = 0; i < 16; ++i) {
    id.push_back(kBase62[a % 62]);
    a /= 62;
    if (a == 0) a = request_rng()();
  }
  return id;
}

bool is_acceptable_request_id(std::string_view id) {
  if (id.empty() || id.size() > 128) return false;
  for (char c : id) {
    if (!(is_base62(c) || c == '-' || c == '_' || c == '.' || c == ':')) return false;
  }
  return true;
}

}  // namespace gpurent
