// The signature on every webhook delivery: `X-Signature: t=<unix seconds>,v1=<hex>`, where v1
// is HMAC-SHA256 under the webhook's secret of "<t>." followed by the raw body. The same
// scheme as the payment provider's inbound webhook (billing/payment_signature.h), so a
// receiver checks it the way that code does: recompute, compare in constant time, refuse a
// `t` too far from its own clock.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace gpurent::webhooks {

inline constexpr std::size_t kSecretBytes = 32;
inline constexpr std::string_view kSecretPrefix = "whsec_";

// The header value. Throws std::invalid_argument for an empty secret or a negative time.
std::string sign_delivery(std::string_view raw_body, std::string_view secret,
                          std::int64_t unix_seconds);

// A new secret: "whsec_" + 64 lowercase hex digits (256 random bits).
std::string new_secret();

}  // namespace gpurent::webhooks
