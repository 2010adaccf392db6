// Money coming in: an admin's credit (a manual top-up, or goodwill from the platform) and the
// payment provider's callbacks, each one posting. A provider's payment is keyed by its own
// id, so a callback delivered again credits nothing more. Every method runs in the caller's
// transaction.
#pragma once

#include "billing/invoice_store.h"
#include "billing/ledger.h"
#include "billing/payment_event.h"

#include <optional>
#include <string>

namespace gpurent::billing {

enum class CreditKind { kTopUp, kGoodwill };

// What a payment callback did: applied now, or a repeat of one applied before.
enum class PaymentOutcome { kApplied, kRepeated };

class TopUps {
 public:
  TopUps(const Clock& clock, Ledger& ledger) : clock_(clock), ledger_(ledger) {}

  // Credits `amount` (positive, in the platform's currency) to the org: a top-up is money
  // received outside the provider (a bank transfer), goodwill is the platform's gift. The
  // posting's id.
  long long credit(Tx& tx, const std::string& org_id, const Money& amount, CreditKind kind,
                   const std::string& reason, const std::optional<std::string>& actor_user_id);

  // Applies a verified callback: payment.succeeded credits the org, payment.refunded takes
  // the money back. Throws Error invalid_request when the org does not exist or the currency
  // is not the platform's, conflict when the payment id was used with another body.
  PaymentOutcome apply_payment(Tx& tx, const PaymentEvent& event, const std::string& body_sha256);

  // The money a credit note gives back (billing/invoice_store.h issue_credit_note): its
  // total, negative, returned from revenue to the org's available balance, once per note.
  void refund_credit_note(Tx& tx, const InvoiceRecord& note,
                          const std::optional<std::string>& actor_user_id);

 private:
  const Clock& clock_;
  Ledger& ledger_;
};

}  // namespace gpurent::billing
