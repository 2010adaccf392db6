// Billing (API.md "Billing"): the org's balance and ledger history, the payment provider's
// webhook, and the admins' credits and credit limits.
#pragma once

#include "api/router.h"
#include "billing/admin_money.h"
#include "billing/ledger.h"
#include "billing/top_ups.h"
#include "core/db_pool.h"

#include <nlohmann/json.hpp>

#include <chrono>
#include <string>

namespace gpurent::http {

struct BillingRoutesState {
  PgPool* pool = nullptr;
  const Clock* clock = nullptr;
  billing::Ledger* ledger = nullptr;
  billing::TopUps* top_ups = nullptr;    // payments
  billing::AdminMoney* money = nullptr;  // the admins' credits, credit limits and notes
  // Empty: the webhook route answers 404, as if it did not exist.
  std::string webhook_secret;
  std::chrono::seconds webhook_tolerance{300};
};

void add_billing_routes(Router& router, BillingRoutesState& state);

// An org's balances as every billing route shows them (API.md "Billing").
nlohmann::json balances_json(const billing::Balances& b);

}  // namespace gpurent::http
