// Strict reading of the payment provider's callback body.
#include "billing/payment_event.h"

#include "core/error.h"
#include "core/id.h"

#include <nlohmann/json.hpp>

#include <cstdint>

namespace gpurent::billing {
namespace payment_event_rules {

constexpr std::size_t kMaxPaymentIdChars = 128;
constexpr std::string_view kKnownFields[] = {"id", "type", "org_id", "amount", "created"};

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

// The field's value, or nullptr when it is absent or null.
const nlohmann::json* find_field(const nlohmann::json& object, const char* field) {
  auto it = object.find(field);
  if (it == object.end() || it->is_null()) return nullptr;
  return &*it;
}

const std::string& required_string(const nlohmann::json& object, const char* field) {
  const nlohmann::json* value = find_field(object, field);
  if (!value) throw Error::invalid_field(field, "is required");
  if (!value->is_string()) throw Error::invalid_field(field, "must be a string");
  return value->get_ref<const std::string&>();
}

}  // namespace payment_event_rules

PaymentEvent parse_payment_event(std::string_view body) {
  nlohmann::json j = payment_event_rules::parse_json(body);
  if (!j.is_object()) {
    throw Error(ErrorCode::kInvalidRequest, "The payment event must be a JSON object.",
                {{"field", "body"}, {"reason", "must be an object"}});
  }

  const std::string& id = payment_event_rules::required_string(j, "id");
  if (!payment_event_rules::is_payment_id(id)) {
    throw Error::invalid_field("id", "must be 1 to 128 characters of A-Z, a-z, 0-9, '_' and '-'");
  }
  const std::string& type = payment_event_rules::required_string(j, "type");
  if (type != kPaymentSucceeded && type != kPaymentRefunded) {
    throw Error::invalid_field("type", "must be payment.succeeded or payment.refunded");
  }
  const std::string& org_id = payment_event_rules::required_string(j, "org_id");
  if (!is_valid_id(id_prefix::kOrg, org_id)) {
    throw Error::invalid_field("org_id", "must be an org id");
  }
  const nlohmann::json* amount_json = payment_event_rules::find_field(j, "amount");
  if (!amount_json) throw Error::invalid_field("amount", "is required");
  Money amount = Money::from_json(*amount_json, "amount");
  if (amount.amount_minor() <= 0) {
    throw Error::invalid_field("amount.amount_minor", "must be positive");
  }
  // Checked for its shape only; PaymentEvent does not carry it.
  if (const nlohmann::json* created = payment_event_rules::find_field(j, "created")) {
    bool ok = created->is_number_unsigned() ||
              (created->is_number_integer() && created->get<std::int64_t>() >= 0);
    if (!ok) throw Error::invalid_field("created", "must be a non-negative integer of seconds");
  }
  for (const auto& [key, _] : j.items()) {
    bool known = false;
    for (std::string_view field : payment_event_rules::kKnownFields) known = known || key == field;
    if (!known) throw Error::invalid_field(key, "is not a known field");
  }
  return PaymentEvent{id, type, org_id, std::move(amount)};
}

}  // namespace gpurent::billing
