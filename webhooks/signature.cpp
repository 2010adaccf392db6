// Signing outbound deliveries.
#include "webhooks/signature.h"

#include "core/crypto.h"

#include <stdexcept>

namespace gpurent::webhooks {

std::string sign_delivery(std::string_view raw_body, std::string_view secret,
                          std::int64_t unix_seconds) {
  if (secret.empty()) throw std::invalid_argument("an empty webhook secret signs nothing");
  if (unix_seconds < 0) throw std::invalid_argument("a signature time before 1970");
  std::string t = std::to_string(unix_seconds);
  std::string message;
  message.reserve(t.size() + 1 + raw_body.size());
  message.append(t).append(".").append(raw_body);
  return "t=" + t + ",v1=" + crypto::hmac_sha256_hex(secret, message);
}

std::string new_secret() {
  auto bytes = crypto::random_bytes(kSecretBytes);
  return std::string(kSecretPrefix) + crypto::to_hex(bytes.data(), bytes.size());
}

}  // namespace gpurent::webhooks
