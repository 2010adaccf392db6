// Guardrail fields: ranges, and spend limits as strict money objects.
#include "api/handlers/guardrails.h"

#include "core/error.h"
#include "core/money.h"

namespace gpurent::http {
namespace {

std::optional<int> read_max_concurrent_gpus(JsonObjectReader& in) {
  auto v = in.optional_int("max_concurrent_gpus", 0, kMaxGuardrailGpus);
  return v ? std::optional<int>(static_cast<int>(*v)) : std::nullopt;
}

std::optional<int> read_max_days(JsonObjectReader& in) {
  auto v = in.optional_int("max_days", 1, kMaxGuardrailDays);
  return v ? std::optional<int>(static_cast<int>(*v)) : std::nullopt;
}

// A money object; only the amount is kept (the platform bills in one currency).
std::optional<std::int64_t> read_spend_limit(JsonObjectReader& in) {
  const auto* limit = in.optional_value("spend_limit");
  if (!limit) return std::nullopt;
  long long minor = Money::from_json(*limit, "spend_limit").amount_minor();
  if (minor < 0) throw Error::invalid_field("spend_limit.amount_minor", "must not be negative");
  return minor;
}

}  // namespace

identity::Guardrails read_guardrails(JsonObjectReader& in) {
  identity::Guardrails g;
  g.max_concurrent_gpus = read_max_concurrent_gpus(in);
  g.max_days = read_max_days(in);
  g.spend_limit_minor = read_spend_limit(in);
  return g;
}

identity::GuardrailsChange read_guardrails_change(const nlohmann::json& body,
                                                  JsonObjectReader& in) {
  identity::GuardrailsChange c;
  c.max_concurrent_gpus = change_of(body, "max_concurrent_gpus", read_max_concurrent_gpus(in));
  c.max_days = change_of(body, "max_days", read_max_days(in));
  c.spend_limit_minor = change_of(body, "spend_limit", read_spend_limit(in));
  return c;
}

}  // namespace gpurent::http
