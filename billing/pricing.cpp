// Daily prices, tax splits, SLA credits and rental days, in checked integer arithmetic.
#include "billing/pricing.h"

#include "core/limits.h"

#include <charconv>
#include <limits>
#include <stdexcept>
#include <string>

namespace gpurent::billing {
namespace pricing_rules {

constexpr int kMaxBasisPoints = 10000;
constexpr int kMinTierDays = limits::kMinDiscountTierDays;
constexpr int kMaxTierDays = limits::kMaxDiscountTierDays;
constexpr std::int64_t kHoursPerBlock = 24;
constexpr std::int64_t kSecondsPerHour = 3600;
constexpr std::int64_t kMicrosPerDay = 24LL * 3600 * 1000 * 1000;

// amount * factor / divisor rounded half up (away from zero for negatives), over a 128-bit
// intermediate; factor and divisor are rates and counts (0 <= factor, 0 < divisor < 2^31).
// A result past int64 is refused rather than wrapped.
std::int64_t scale_rounded(std::int64_t amount, std::int64_t factor, std::int64_t divisor) {
  __int128 product = static_cast<__int128>(amount) * factor;
  __int128 magnitude = product < 0 ? -product : product;
  __int128 rounded = (2 * magnitude + divisor) / (2 * static_cast<__int128>(divisor));
  if (product < 0) rounded = -rounded;
  if (rounded > std::numeric_limits<std::int64_t>::max() ||
      rounded < std::numeric_limits<std::int64_t>::min()) {
    throw std::overflow_error("amount past the range of int64 minor units");
  }
  return static_cast<std::int64_t>(rounded);
}

void require_basis_points(int basis_points) {
  if (basis_points < 0 || basis_points > kMaxBasisPoints) {
    throw std::invalid_argument("VAT rate must be 0..10000 basis points, not " +
                                std::to_string(basis_points));
  }
}

// Plain decimal: digits only, no sign, no leading zero (except "0" itself), up to 3 digits.
std::optional<int> small_decimal(std::string_view text) {
  if (text.empty() || text.size() > 3) return std::nullopt;
  if (text.size() > 1 && text.front() == '0') return std::nullopt;
  int n = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (ec != std::errc() || end != text.data() + text.size() || n < 0) return std::nullopt;
  return n;
}

}  // namespace pricing_rules

DailyPrice daily_price(const PricingPolicy& policy, std::int64_t list_per_day_minor, int days) {
  if (list_per_day_minor < 0) throw std::invalid_argument("a list price cannot be negative");
  if (days < 1) throw std::invalid_argument("a rental lasts at least one day");
  int percent = 0;
  for (const DiscountTier& tier : policy.discounts) {
    if (tier.percent < 0 || tier.percent > 100) {
      throw std::invalid_argument("a discount must be 0..100 percent, not " +
                                  std::to_string(tier.percent));
    }
    if (tier.min_days <= days && tier.percent > percent) percent = tier.percent;
  }
  return DailyPrice{list_per_day_minor, percent,
                    pricing_rules::scale_rounded(list_per_day_minor, 100 - percent, 100)};
}

TaxSplit split_gross(int vat_basis_points, std::int64_t gross_minor) {
  pricing_rules::require_basis_points(vat_basis_points);
  std::int64_t tax = pricing_rules::scale_rounded(
      gross_minor, vat_basis_points, pricing_rules::kMaxBasisPoints + vat_basis_points);
  // The tax has the gross's sign and is no larger, so the net cannot overflow.
  return TaxSplit{gross_minor - tax, tax, gross_minor};
}

TaxSplit split_price(const PricingPolicy& policy, std::int64_t price_minor) {
  if (policy.prices_include_tax) return split_gross(policy.vat_basis_points, price_minor);
  pricing_rules::require_basis_points(policy.vat_basis_points);
  std::int64_t tax = pricing_rules::scale_rounded(price_minor, policy.vat_basis_points,
                                                  pricing_rules::kMaxBasisPoints);
  std::int64_t gross = 0;
  if (__builtin_add_overflow(price_minor, tax, &gross)) {
    throw std::overflow_error("amount past the range of int64 minor units");
  }
  return TaxSplit{price_minor, tax, gross};
}

std::optional<std::vector<DiscountTier>> parse_discount_tiers(std::string_view text) {
  std::vector<DiscountTier> tiers;
  if (text.empty() || text == "none") return tiers;
  std::size_t pos = 0;
  while (true) {
    auto comma = text.find(',', pos);
    auto part = text.substr(pos, comma == std::string_view::npos ? text.npos : comma - pos);
    auto colon = part.find(':');
    if (colon == std::string_view::npos) return std::nullopt;
    auto days = pricing_rules::small_decimal(part.substr(0, colon));
    auto percent = pricing_rules::small_decimal(part.substr(colon + 1));
    if (!days || !percent) return std::nullopt;
    if (*days < pricing_rules::kMinTierDays || *days > pricing_rules::kMaxTierDays) {
      return std::nullopt;
    }
    if (*percent > 100) return std::nullopt;
    if (!tiers.empty() && *days <= tiers.back().min_days) return std::nullopt;
    tiers.push_back(DiscountTier{*days, *percent});
    if (comma == std::string_view::npos) break;
    pos = comma + 1;
  }
  return tiers;
}

std::optional<SlaPolicy> parse_sla_policy(std::string_view text) {
  for (SlaPolicy p :
       {SlaPolicy::kNone, SlaPolicy::kLostHours, SlaPolicy::kWholeBlock, SlaPolicy::kLostMinutes}) {
    if (text == to_string(p)) return p;
  }
  return std::nullopt;
}

std::string_view to_string(SlaPolicy p) {
  switch (p) {
    case SlaPolicy::kNone:
      return "none";
    case SlaPolicy::kLostHours:
      return "lost_hours";
    case SlaPolicy::kWholeBlock:
      return "whole_block";
    case SlaPolicy::kLostMinutes:
      return "lost_minutes";
  }
  return "none";
}

std::int64_t sla_credit_minor(SlaPolicy policy, std::int64_t charged_minor,
                              std::chrono::seconds lost) {
  if (charged_minor <= 0 || lost.count() <= 0) return 0;
  switch (policy) {
    case SlaPolicy::kNone:
      return 0;
    case SlaPolicy::kWholeBlock:
      return charged_minor;
    case SlaPolicy::kLostHours: {
      // Rounded up without adding first: `lost` may be near the top of int64.
      std::int64_t seconds = lost.count();
      std::int64_t hours = seconds / pricing_rules::kSecondsPerHour +
                           (seconds % pricing_rules::kSecondsPerHour != 0 ? 1 : 0);
      if (hours >= pricing_rules::kHoursPerBlock) return charged_minor;
      return pricing_rules::scale_rounded(charged_minor, hours, pricing_rules::kHoursPerBlock);
    }
    case SlaPolicy::kLostMinutes: {
      constexpr std::int64_t kMinutesPerBlock = pricing_rules::kHoursPerBlock * 60;
      std::int64_t seconds = lost.count();
      std::int64_t minutes = seconds / 60 + (seconds % 60 != 0 ? 1 : 0);
      if (minutes >= kMinutesPerBlock) return charged_minor;
      return pricing_rules::scale_rounded(charged_minor, minutes, kMinutesPerBlock);
    }
  }
  return 0;
}

Timestamp day_start(Timestamp period_start, int day) {
  if (day < 0) throw std::invalid_argument("rental days count from 0");
  std::int64_t offset = 0;
  std::int64_t micros = 0;
  if (__builtin_mul_overflow(std::int64_t{day}, pricing_rules::kMicrosPerDay, &offset) ||
      __builtin_add_overflow(period_start.time_since_epoch().count(), offset, &micros)) {
    throw std::overflow_error("rental day past the range of the clock");
  }
  return Timestamp(std::chrono::microseconds(micros));
}

int day_at(Timestamp period_start, Timestamp t) {
  if (t < period_start) return -1;
  // t >= start, so the unsigned difference is exact even across the whole int64 range, and
  // 2^64 microseconds is still under 2^31 days.
  std::uint64_t elapsed = static_cast<std::uint64_t>(t.time_since_epoch().count()) -
                          static_cast<std::uint64_t>(period_start.time_since_epoch().count());
  return static_cast<int>(elapsed / static_cast<std::uint64_t>(pricing_rules::kMicrosPerDay));
}

}  // namespace gpurent::billing
