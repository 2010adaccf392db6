// The product's fixed limits on what a request may ask for, in one place. The server checks
// them (the readers' ranges and the use cases' rules read these names); the OpenAPI document
// states them as `minimum`/`maximum`, held to these values by api/tests/limits_test.cpp; the
// CLI and the panel read the document instead of checking again. scripts/check-limits fails
// the suite on a bare number for one of them anywhere else.
#pragma once

namespace gpurent::limits {

// A rental: days booked at once, and the length an extension may bring it to.
inline constexpr int kMinRentalDays = 1;
inline constexpr int kMaxRentalDays = 365;
// The availability calendar's window: days shown at once.
inline constexpr int kMaxAvailabilityDays = 90;
// GPUs in one booking (a whole node at most; the largest has 64).
inline constexpr int kMaxRentalGpus = 64;
// A volume discount's tier starts at a rental of this many days (the first tier at 2).
inline constexpr int kMinDiscountTierDays = 2;
inline constexpr int kMaxDiscountTierDays = kMaxRentalDays;
// An API token's lifetime, and the longest rental a token's or org's guardrail may allow.
inline constexpr int kMaxTokenExpiryDays = 3650;
inline constexpr int kMaxGuardrailDays = 3650;
inline constexpr int kMaxGuardrailGpus = 100000;

}  // namespace gpurent::limits
