// The pure rules of pricing: daily prices with length discounts, the tax split, SLA credits
// and rental days. Integer minor units only; rounding is half up (away from zero).
#pragma once

#include "core/clock.h"

#include <chrono>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace gpurent::billing {

struct DiscountTier {
  int min_days;
  int percent;  // 0..100
};

struct PricingPolicy {
  // E.g. {{7, 5}, {30, 10}}: of the tiers whose min_days <= days, the one with the largest
  // percent applies (the best for the customer, whatever order the tiers are in).
  std::vector<DiscountTier> discounts;
  int vat_basis_points = 2000;     // 20.00 %; 0..10000
  bool prices_include_tax = true;  // price list amounts are gross (tax included) or net
};

// The price per day a rental of `days` days pays: the list price less the best tier's
// discount, rounded half up (so 10 minor at 5 % is 10, 330 at 5 % is 314).
struct DailyPrice {
  std::int64_t list_minor = 0;
  int discount_percent = 0;
  std::int64_t price_minor = 0;
};
// Throws std::invalid_argument for a negative list price, days < 1, or a tier percent or
// VAT rate out of range.
DailyPrice daily_price(const PricingPolicy& policy, std::int64_t list_per_day_minor, int days);

// One unit of price split into net, tax and gross, so that net + tax == gross exactly.
struct TaxSplit {
  std::int64_t net_minor = 0;
  std::int64_t tax_minor = 0;
  std::int64_t gross_minor = 0;
};

// `price_minor` in the policy's basis: gross when prices include tax
// (tax = round(gross*bp/(10000+bp)), net = gross - tax), else net
// (tax = round(net*bp/10000), gross = net + tax). Throws std::overflow_error when the gross
// is past int64 and std::invalid_argument for a VAT rate out of range.
TaxSplit split_price(const PricingPolicy& policy, std::int64_t price_minor);

// A gross amount (e.g. a credit, possibly negative) split at `vat_basis_points`:
// tax = round(gross*bp/(10000+bp)), net = gross - tax.
TaxSplit split_gross(int vat_basis_points, std::int64_t gross_minor);

// The discount tiers as configuration writes them: "7:5,30:10" (min_days:percent, comma
// separated, strictly increasing min_days, percent 0..100, min_days within
// limits::kMinDiscountTierDays..kMaxDiscountTierDays, plain decimal without signs, spaces or
// leading zeros); "" or "none" is no discount. std::nullopt when malformed.
std::optional<std::vector<DiscountTier>> parse_discount_tiers(std::string_view text);

// SLA credits for an interruption: how much of the charged block is given back.
enum class SlaPolicy { kNone, kLostHours, kWholeBlock, kLostMinutes };

// "none", "lost_hours", "whole_block", "lost_minutes"; exact and case-sensitive.
std::optional<SlaPolicy> parse_sla_policy(std::string_view text);
std::string_view to_string(SlaPolicy p);

// The block is 24 h. kLostHours: `lost` rounded up to whole hours,
// credit = round(charged * hours / 24), capped at `charged`; kLostMinutes: the same to the
// minute, round(charged * minutes / 1440); kWholeBlock: all of `charged`
// when lost > 0; kNone, lost <= 0 or charged <= 0: 0.
std::int64_t sla_credit_minor(SlaPolicy policy, std::int64_t charged_minor,
                              std::chrono::seconds lost);

// Rental days: day k of a rental is the 24-hour block [start + k*24h, start + (k+1)*24h).
// Throws std::invalid_argument for a negative day and std::overflow_error past the clock.
Timestamp day_start(Timestamp period_start, int day);

// The day `t` falls in: floor((t - start) / 24h); -1 when t is before the start.
int day_at(Timestamp period_start, Timestamp t);

}  // namespace gpurent::billing
