// Credits and provider payments as ledger postings.
#include "billing/top_ups.h"

#include "core/error.h"
#include "core/id.h"
#include "core/sql.h"

namespace gpurent::billing {
namespace {

constexpr Statement kOrgExists = {"billing_org_exists", "SELECT 1 FROM orgs WHERE id = $1"};

constexpr Statement kRecordPayment = {
    "billing_payment_record",
    "INSERT INTO billing_payments (payment_id, kind, org_id, amount_minor, currency,"
    " transaction_id, received_at, body_sha256) VALUES ($1, $2, $3, $4, $5, $6,"
    " $7::timestamptz, $8)"};

constexpr Statement kPaymentOf = {"billing_payment_of",
                                  "SELECT body_sha256 FROM billing_payments WHERE payment_id = $1"};

}  // namespace

long long TopUps::credit(Tx& tx, const std::string& org_id, const Money& amount, CreditKind kind,
                         const std::string& reason,
                         const std::optional<std::string>& actor_user_id) {
  if (amount.currency() != ledger_.currency()) {
    throw Error::invalid_field("amount", "must be in " + ledger_.currency());
  }
  if (amount.amount_minor() <= 0) throw Error::invalid_field("amount", "must be positive");
  bool top_up = kind == CreditKind::kTopUp;
  // A fresh key: each admin credit is its own posting (a retried request is caught by the
  // API's Idempotency-Key before it gets here).
  auto id = ledger_.post(
      tx, {.idempotency_key = "credit:" + new_id("crd"),
           .kind = top_up ? "top_up" : "credit",
           .org_id = org_id,
           .description = (top_up ? "Top-up: " : "Credit: ") + reason,
           .at = clock_.now(),
           .actor_user_id = actor_user_id,
           .entries = {{top_up ? Account::kPayments : Account::kGrants, -amount.amount_minor()},
                       {Account::kAvailable, amount.amount_minor()}}});
  return *id;
}

PaymentOutcome TopUps::apply_payment(Tx& tx, const PaymentEvent& e,
                                     const std::string& body_sha256) {
  if (e.amount.currency() != ledger_.currency()) {
    throw Error::invalid_field("amount", "must be in " + ledger_.currency());
  }
  if (tx.exec(kOrgExists, e.org_id).empty()) {
    throw Error::invalid_field("org_id", "names no organisation");
  }
  bool refund = e.type == "payment.refunded";
  std::int64_t x = e.amount.amount_minor();
  Timestamp now = clock_.now();
  auto id = ledger_.post(
      tx,
      {.idempotency_key = "payment:" + e.payment_id,
       .kind = refund ? "refund" : "top_up",
       .org_id = e.org_id,
       .description = (refund ? "Refund of payment " : "Payment ") + e.payment_id,
       .at = now,
       .entries = {{Account::kPayments, refund ? x : -x}, {Account::kAvailable, refund ? -x : x}}});
  if (!id) {
    // Delivered before: the same callback is answered as the first time; the same id with
    // another body is not the same payment.
    auto rows = tx.exec(kPaymentOf, e.payment_id);
    if (!rows.empty() && rows[0][0].as<std::string>() != body_sha256) {
      throw Error(ErrorCode::kConflict,
                  "Payment " + e.payment_id + " was received before with another body.");
    }
    return PaymentOutcome::kRepeated;
  }
  tx.exec(kRecordPayment, e.payment_id, e.type, e.org_id, x, e.amount.currency(), *id,
          sql_timestamp(now), body_sha256);
  return PaymentOutcome::kApplied;
}

void TopUps::refund_credit_note(Tx& tx, const InvoiceRecord& note,
                                const std::optional<std::string>& actor_user_id) {
  if (note.kind != "credit_note" || note.total_minor >= 0) {
    throw std::invalid_argument("only a credit note gives money back");
  }
  ledger_.post(tx, {.idempotency_key = "credit-note:" + note.id,
                    .kind = "reversal",
                    .org_id = note.org_id,
                    .description = "Credit note " + note.number.value_or(note.id) +
                                   " correcting invoice " + note.corrects_invoice_id.value_or(""),
                    .at = clock_.now(),
                    .actor_user_id = actor_user_id,
                    .entries = {{Account::kRevenue, note.total_minor},
                                {Account::kAvailable, -note.total_minor}}});
}

}  // namespace gpurent::billing
