// Fuzz target: the payment webhook (a provider's callback, or anyone's). The input is the
// X-Signature header, a newline, then the raw body. The signature check gives a verdict and
// never throws; the body either parses into an event that keeps the documented rules or is
// refused with a gpurent::Error that prints as JSON (it goes into the reply).
#include "billing/payment_event.h"
#include "billing/payment_signature.h"
#include "core/error.h"
#include "core/id.h"

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <string_view>

namespace {

// The corpus's signed seed is signed with this secret at this time (corpus/payment_webhook/).
constexpr std::string_view kSecret = "whsec_fuzz_secret";
constexpr std::int64_t kNowSeconds = 1'767'225'600;  // 2026-01-01T00:00:00Z
constexpr std::chrono::seconds kTolerance{300};

void check_signature(std::string_view header, std::string_view body) {
  using gpurent::billing::SignatureVerdict;
  gpurent::Timestamp now{std::chrono::seconds(kNowSeconds)};
  auto result = gpurent::billing::check_payment_signature(header, body, kSecret, now, kTolerance);
  switch (result.verdict) {
    case SignatureVerdict::kMalformed:
      if (result.timestamp != 0) abort();
      break;
    case SignatureVerdict::kValid:
      if (result.timestamp < kNowSeconds - kTolerance.count() ||
          result.timestamp > kNowSeconds + kTolerance.count()) {
        abort();
      }
      break;
    case SignatureVerdict::kStale:
    case SignatureVerdict::kMismatch:
      if (result.timestamp < 0) abort();
      break;
  }
  // Whatever the body, signing it now gives a header the check accepts.
  auto own = gpurent::billing::sign_payment(body, kSecret, kNowSeconds);
  if (gpurent::billing::check_payment_signature(own, body, kSecret, now, kTolerance).verdict !=
      SignatureVerdict::kValid) {
    abort();
  }
}

void check_event(std::string_view body) {
  using namespace gpurent::billing;
  try {
    PaymentEvent e = parse_payment_event(body);
    if (e.payment_id.empty() || e.payment_id.size() > 128) abort();
    if (e.type != kPaymentSucceeded && e.type != kPaymentRefunded) abort();
    if (!gpurent::is_valid_id(gpurent::id_prefix::kOrg, e.org_id)) abort();
    if (e.amount.amount_minor() <= 0) abort();
  } catch (const gpurent::Error& e) {
    try {
      (void)e.to_json().dump();
    } catch (...) {
      abort();
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  auto newline = input.find('\n');
  std::string_view header = input.substr(0, newline);
  std::string_view body =
      newline == std::string_view::npos ? std::string_view() : input.substr(newline + 1);
  check_signature(header, body);
  check_event(body);
  return 0;
}
