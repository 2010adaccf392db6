// The org's monthly invoices (API.md "Billing": GET /v1/invoices, GET /v1/invoices/{id}),
// as JSON or, for one invoice, as a CSV download.
#pragma once

#include "api/auth.h"
#include "api/router.h"
#include "billing/invoice_store.h"
#include "core/db_pool.h"

#include <nlohmann/json.hpp>

#include <map>
#include <string>
#include <vector>

namespace gpurent::http {

// What the scheduler measured of an invoice's rentals (billing knows nothing of telemetry),
// read in the invoice route's own transaction.
class InvoiceLineDetails {
 public:
  virtual ~InvoiceLineDetails() = default;
  // The energy in kWh each of the org's `rental_ids` drew within the invoice's month
  // [month_start, month_end) (dates in `time_zone`); a rental with no samples is left out.
  virtual std::map<std::string, double> energy_kwh(Tx& tx, const std::string& org_id,
                                                   const std::vector<std::string>& rental_ids,
                                                   const std::string& month_start,
                                                   const std::string& month_end,
                                                   const std::string& time_zone) = 0;
};

struct InvoiceRoutesState {
  PgPool* pool = nullptr;
  billing::InvoiceStore* invoices = nullptr;
  InvoiceLineDetails* details = nullptr;  // none: every line's energy_kwh is null
};

void add_invoice_routes(Router& router, InvoiceRoutesState& state);

// {id, number, period: {start, end}, status, lines: [{kind, rental_id, description, days,
// unit_price, amount, tax, amount_net, energy_kwh}], subtotal, tax, total, vat_rate_percent,
// created_at, issued_at}, amounts as money objects. A rental_days line's energy_kwh is what its
// rental drew within the invoice's month (`energy`, by rental id), on the rental's first line
// only; null when unmeasured, and on credits.
nlohmann::json invoice_json(const billing::InvoiceRecord& invoice,
                            const std::map<std::string, double>& energy = {});

}  // namespace gpurent::http
