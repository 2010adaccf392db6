// The payment provider's webhook signature: `X-Signature: t=<unix seconds>,v1=<hex>`, where
// v1 is HMAC-SHA256 under the shared secret of "<t>." followed by the raw body.
#pragma once

#include "core/clock.h"

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

namespace gpurent::billing {

enum class SignatureVerdict { kValid, kMalformed, kStale, kMismatch };

// "valid", "malformed", "stale", "mismatch".
std::string_view to_string(SignatureVerdict v);

struct SignatureCheck {
  SignatureVerdict verdict;
  std::int64_t timestamp = 0;  // the header's t=, when it had one (0 when malformed)
};

// The header is comma-separated parts in any order, each `key=value` with spaces or tabs
// around it: exactly one t= (decimal digits), one or more v1= (64 lowercase hex; several
// while a secret is rotated, any one matching is enough); other parts (v0=, ...) and v1
// values of another form are ignored. Malformed: over 2048 bytes, no t= or two, a t= that is
// not a decimal number within int64, or no well-formed v1.
//
// The MAC is checked before the time, so kStale means an authentic message outside
// `tolerance` of `now` (either way; a replay or a skewed clock) and kMismatch anything
// forged, whatever its time. MACs are compared in constant time; an empty secret matches
// nothing.
SignatureCheck check_payment_signature(std::string_view header, std::string_view raw_body,
                                       std::string_view secret, Timestamp now,
                                       std::chrono::seconds tolerance);

// The header value a provider would send (for tests, the demo and the CLI). Throws
// std::invalid_argument for an empty secret or a negative time.
std::string sign_payment(std::string_view raw_body, std::string_view secret,
                         std::int64_t unix_seconds);

}  // namespace gpurent::billing
