// The payment provider's callback body, parsed strictly: what was paid or refunded, to which
// org, under which provider id (the key that makes crediting it idempotent).
#pragma once

#include "core/money.h"

#include <cstddef>
#include <string>
#include <string_view>

namespace gpurent::billing {

inline constexpr std::size_t kMaxPaymentEventBytes = 64 * 1024;

inline constexpr std::string_view kPaymentSucceeded = "payment.succeeded";  // credited
inline constexpr std::string_view kPaymentRefunded = "payment.refunded";    // debited

struct PaymentEvent {
  std::string payment_id;  // the provider's id: 1..128 chars of [A-Za-z0-9_-]
  std::string type;        // kPaymentSucceeded or kPaymentRefunded; others are refused
  std::string org_id;      // an org id (is_valid_id with id_prefix::kOrg)
  Money amount;            // positive
};

// {"id": "...", "type": "...", "org_id": "...",
//  "amount": {"amount_minor": 100000, "currency": "RUB"}, "created": <unix seconds, optional>}
//
// Throws gpurent::Error as the API's request bodies do: invalid_json for text that is not
// JSON; invalid_request naming the field for a missing, mistyped, out-of-range or unknown
// field (null counts as missing); payload_too_large over kMaxPaymentEventBytes.
PaymentEvent parse_payment_event(std::string_view body);

}  // namespace gpurent::billing
