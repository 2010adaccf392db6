// Strict reading of the payment provider's callback body.
#include "billing/payment_event.h"

#include "core/error.h"
#include "core/id.h"
#include "core/json_reader.h"

#include <nlohmann/json.hpp>

#include <cstdint>

namespace gpurent::billing {
namespace payment_event_rules {

constexpr std::size_t kMaxPaymentIdChars = 128;

bool is_payment_id(std::string_view id) {
  if (id.empty() || id.size() > kMaxPaymentIdChars) return false;
  for (char c : id) {
    bool ok = (c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
              c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

nlohmann::json parse_json(std::string_view body) {
  if (body.size() > kMaxPaymentEventBytes) {
    throw Error(ErrorCode::kPayloadTooLarge,
                "The payment event is over " + std::to_string(kMaxPaymentEventBytes) + " bytes.");
  }
  try {
    return nlohmann::json::parse(body);
  } catch (const nlohmann::json::parse_error& e) {
    throw Error(
        ErrorCode::kInvalidJson,
        "The payment event is not valid JSON (error at byte " + std::to_string(e.byte) + ").",
        {{"offset", e.byte}});
  } catch (const nlohmann::json::exception&) {
    // Well-formed but not representable: a number beyond a double's range (1e400).
    throw Error(ErrorCode::kInvalidRequest, "The payment event holds a number out of range.",
                {{"field", "body"}, {"reason", "holds a number out of range"}});
  }
}

}  // namespace payment_event_rules

PaymentEvent parse_payment_event(std::string_view body) {
  nlohmann::json j = payment_event_rules::parse_json(body);
  if (!j.is_object()) {
    throw Error(ErrorCode::kInvalidRequest, "The payment event must be a JSON object.",
                {{"field", "body"}, {"reason", "must be an object"}});
  }

  JsonObjectReader in(j);
  // The text is bounded by kMaxPaymentEventBytes; each field's own rule says what it may hold.
  constexpr std::size_t kAnyLength = kMaxPaymentEventBytes;
  std::string id = in.required_string("id", kAnyLength);
  if (!payment_event_rules::is_payment_id(id)) {
    throw Error::invalid_field("id", "must be 1 to 128 characters of A-Z, a-z, 0-9, '_' and '-'");
  }
  std::string type = in.required_string("type", kAnyLength);
  if (type != kPaymentSucceeded && type != kPaymentRefunded) {
    throw Error::invalid_field("type", "must be payment.succeeded or payment.refunded");
  }
  std::string org_id = in.required_string("org_id", kAnyLength);
  if (!is_valid_id(id_prefix::kOrg, org_id)) {
    throw Error::invalid_field("org_id", "must be an org id");
  }
  const nlohmann::json* amount_json = in.optional_value("amount");
  if (!amount_json) throw Error::invalid_field("amount", "is required");
  Money amount = Money::from_json(*amount_json, "amount");
  if (amount.amount_minor() <= 0) {
    throw Error::invalid_field("amount.amount_minor", "must be positive");
  }
  // Checked for its shape only; PaymentEvent does not carry it.
  if (const nlohmann::json* created = in.optional_value("created")) {
    bool ok = created->is_number_unsigned() ||
              (created->is_number_integer() && created->get<std::int64_t>() >= 0);
    if (!ok) throw Error::invalid_field("created", "must be a non-negative integer of seconds");
  }
  in.finish();
  return PaymentEvent{std::move(id), std::move(type), std::move(org_id), std::move(amount)};
}

}  // namespace gpurent::billing
