// The org's monthly invoices (API.md "Billing": GET /v1/invoices, GET /v1/invoices/{id}),
// as JSON or, for one invoice, as a CSV download.
#pragma once

#include "api/auth.h"
#include "api/router.h"
#include "billing/invoice_store.h"
#include "core/db_pool.h"

#include <nlohmann/json.hpp>

namespace gpurent::http {

struct InvoiceRoutesState {
  PgPool* pool = nullptr;
  billing::InvoiceStore* invoices = nullptr;
};

void add_invoice_routes(Router& router, InvoiceRoutesState& state);

// {id, number, period: {start, end}, status, lines: [{kind, rental_id, description, days,
// unit_price, amount, tax, amount_net}], subtotal, tax, total, vat_rate_percent, created_at,
// issued_at}, amounts as money objects.
nlohmann::json invoice_json(const billing::InvoiceRecord& invoice);

}  // namespace gpurent::http
