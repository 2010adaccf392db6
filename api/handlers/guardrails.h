// Reading guardrails (max_concurrent_gpus, max_days, spend_limit) from a request body, for
// API tokens and for the limits platform admins set on orgs; one set of rules for both.
#pragma once

#include "api/json_body.h"
#include "core/limits.h"
#include "identity/org_admin_store.h"
#include "identity/token_store.h"

#include <nlohmann/json.hpp>

namespace gpurent::http {

// One field of a partial update: `change` when the body names the field at all (null
// clears), with the value read from it.
template <typename T>
identity::LimitChange<T> change_of(const nlohmann::json& body, const char* field,
                                   std::optional<T> value) {
  return {body.contains(field), std::move(value)};
}

inline constexpr int kMaxGuardrailGpus = limits::kMaxGuardrailGpus;
inline constexpr int kMaxGuardrailDays = limits::kMaxGuardrailDays;

// The three fields, each optional: absent or null is no limit.
identity::Guardrails read_guardrails(JsonObjectReader& in);

// A partial update of the three fields: absent leaves a limit, null clears it, a value sets
// it. `body` is the object `in` reads.
identity::GuardrailsChange read_guardrails_change(const nlohmann::json& body, JsonObjectReader& in);

}  // namespace gpurent::http
