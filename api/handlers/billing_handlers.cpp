// Billing routes: each one use case in one transaction; the webhook is checked (signature,
// freshness, body) before it touches the database.
#include "api/handlers/billing_handlers.h"

#include "api/handlers/invoice_handlers.h"
#include "api/handlers/json_values.h"
#include "api/handlers/query_params.h"
#include "api/json_body.h"
#include "api/responses.h"
#include "billing/payment_signature.h"
#include "core/audit.h"
#include "core/crypto.h"
#include "core/error.h"
#include "core/id.h"
#include "core/log.h"

#include <nlohmann/json.hpp>

namespace gpurent::http {
namespace {

nlohmann::json ledger_row_json(const billing::LedgerRow& r) {
  return {{"id", r.id},
          {"at", time_json(r.at)},
          {"kind", r.kind},
          {"amount", r.amount.to_json()},
          {"available_change", r.available_change.to_json()},
          {"held_change", r.held_change.to_json()},
          {"rental_id", optional_json(r.rental_id)},
          {"description", r.description}};
}

std::string path_org_id(const Request& req) {
  return path_id(req, "id", id_prefix::kOrg, "No such organisation.");
}

Money read_money(JsonObjectReader& in, const std::string& field) {
  const auto* value = in.optional_value(field);
  if (!value) throw Error::invalid_field(field, "is required");
  return Money::from_json(*value, field);
}

std::string read_reason(JsonObjectReader& in) {
  return printable_text("reason", in.required_string("reason", 500), 500);
}

// {amount, reason, kind?: top_up|goodwill}
billing::Credit read_credit(const Request& req) {
  auto body = parse_json_body(req);
  JsonObjectReader in(body);
  billing::Credit c{.amount = read_money(in, "amount"), .reason = read_reason(in)};
  if (auto k = in.optional_string("kind", 16)) {
    if (*k == "goodwill") {
      c.kind = billing::CreditKind::kGoodwill;
    } else if (*k != "top_up") {
      throw Error::invalid_field("kind", "must be top_up or goodwill");
    }
  }
  in.finish();
  return c;
}

// {credit_limit}
Money read_credit_limit(const Request& req) {
  auto body = parse_json_body(req);
  JsonObjectReader in(body);
  Money limit = read_money(in, "credit_limit");
  in.finish();
  return limit;
}

// {amount, reason}
std::pair<Money, std::string> read_credit_note(const Request& req) {
  auto body = parse_json_body(req);
  JsonObjectReader in(body);
  Money amount = read_money(in, "amount");
  std::string reason = read_reason(in);
  in.finish();
  return {amount, reason};
}

}  // namespace

nlohmann::json balances_json(const billing::Balances& b) {
  // What a booking may still spend: the available money and the credit the org is trusted
  // with.
  auto spendable = b.available + b.credit_limit;
  return {{"balance", b.balance().to_json()},
          {"held", b.held.to_json()},
          {"available", b.available.to_json()},
          {"credit_limit", b.credit_limit.to_json()},
          {"spendable", spendable.to_json()}};
}

void add_billing_routes(Router& router, BillingRoutesState& state) {
  router.add({.method = Method::kGet,
              .pattern = "/v1/billing/balance",
              .handler =
                  [&state](const Request&, const Principal& p) {
                    auto b = state.pool->read("billing_balance", [&](Tx& tx) {
                      return state.ledger->balances(tx, *p.org_id);
                    });
                    return json_response(200, balances_json(b));
                  },
              .needs_org = true,
              .scope = "billing:read",
              .summary = "The org's balance: what it has, what is held for booked days, and "
                         "what is available to book with.",
              .tag = "billing"});

  router.add({.method = Method::kGet,
              .pattern = "/v1/billing/transactions",
              .handler =
                  [&state](const Request& req, const Principal& p) {
                    QueryParams query(req, {"limit", "cursor"});
                    auto page = state.pool->read("billing_transactions", [&](Tx& tx) {
                      return state.ledger->history(tx, *p.org_id, query.limit(), query.cursor());
                    });
                    nlohmann::json items = nlohmann::json::array();
                    for (const auto& r : page.items) items.push_back(ledger_row_json(r));
                    return list_response(200, std::move(items), page.next_cursor);
                  },
              .needs_org = true,
              .scope = "billing:read",
              .summary = "The org's ledger, newest first: top-ups, holds, captured days, "
                         "releases and credits.",
              .tag = "billing"});

  router.add(
      {.method = Method::kPost,
       .pattern = "/v1/admin/orgs/{id}/credit",
       .handler =
           [&state](const Request& req, const Principal& p) {
             std::string org_id = path_org_id(req);
             auto credited = state.money->credit(caller_of(req, p), org_id, read_credit(req));
             auto out = balances_json(credited.balances);
             out["transaction_id"] = billing::transaction_id_text(credited.transaction_id);
             return json_response(201, out);
           },
       .platform_admin = true,
       .summary = "Credit an organisation: {amount, reason, kind?: top_up|goodwill} — a manual "
                  "top-up or a goodwill credit (platform admins; audited as billing.credit).",
       .tag = "admin"});

  router.add({.method = Method::kPut,
              .pattern = "/v1/admin/orgs/{id}/credit-limit",
              .handler =
                  [&state](const Request& req, const Principal& p) {
                    std::string org_id = path_org_id(req);
                    auto balances = state.money->set_credit_limit(caller_of(req, p), org_id,
                                                                  read_credit_limit(req));
                    return json_response(200, balances_json(balances));
                  },
              .platform_admin = true,
              .summary = "Set how far below zero an organisation's available balance may go: "
                         "{credit_limit} (0 is strictly prepaid; platform admins; audited).",
              .tag = "admin"});

  router.add(
      {.method = Method::kPost,
       .pattern = "/v1/admin/invoices/{id}/credit-notes",
       .handler =
           [&state](const Request& req, const Principal& p) {
             std::string invoice_id = path_id(req, "id", id_prefix::kInvoice, "No such invoice.");
             auto [amount, reason] = read_credit_note(req);
             auto note = state.money->credit_note(caller_of(req, p), invoice_id, amount, reason);
             return json_response(201, invoice_json(note));
           },
       .platform_admin = true,
       .summary = "Correct an issued invoice with a credit note: {amount, reason} — a numbered "
                  "document of its own, the amount back on the org's balance (platform admins; "
                  "audited as billing.credit_note).",
       .tag = "admin"});

  router.add({.method = Method::kGet,
              .pattern = "/v1/admin/orgs/{id}/balance",
              .handler =
                  [&state](const Request& req, const Principal&) {
                    return json_response(200,
                                         balances_json(state.money->balances(path_org_id(req))));
                  },
              .platform_admin = true,
              .summary = "An organisation's balance (platform admins).",
              .tag = "admin"});

  router.add(
      {.method = Method::kPost,
       .pattern = "/v1/billing/payments/webhook",
       .handler =
           [&state](const Request& req, const Principal&) {
             if (state.webhook_secret.empty()) throw Error(ErrorCode::kNotFound, "Not found.");
             auto check = billing::check_payment_signature(req.header("X-Signature"), req.body,
                                                           state.webhook_secret, state.clock->now(),
                                                           state.webhook_tolerance);
             if (check.verdict != billing::SignatureVerdict::kValid) {
               log::warn("payment webhook refused: {} signature",
                         billing::to_string(check.verdict));
               throw Error(ErrorCode::kUnauthenticated,
                           check.verdict == billing::SignatureVerdict::kStale
                               ? "The signature's time is too far from now; a replay is refused."
                               : "The signature does not verify.");
             }
             auto event = billing::parse_payment_event(req.body);
             auto outcome = state.pool->transact("billing_payment", [&](Tx& tx) {
               return state.top_ups->apply_payment(tx, event, crypto::sha256_hex(req.body));
             });
             return json_response(200,
                                  {{"received", true},
                                   {"payment_id", event.payment_id},
                                   {"duplicate", outcome == billing::PaymentOutcome::kRepeated}});
           },
       .access = Access::kAnyone,
       .summary = "The payment provider's callback: HMAC-SHA256 signed in X-Signature "
                  "(t=<unix time>,v1=<hex of HMAC(secret, t.body)>), applied once per payment id.",
       .tag = "billing",
       .idempotency_key = false});
}

}  // namespace gpurent::http
