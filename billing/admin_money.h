// AdminMoney: the platform admins' use cases on an org's money (API.md "Billing", admin
// routes): a credit (a manual top-up or a goodwill credit), the credit limit, and a credit
// note against an issued invoice. Each is one transaction that posts to the ledger and writes
// its audit row together, so an audited change is never one that did not happen.
#pragma once

#include "billing/invoice_store.h"
#include "billing/ledger.h"
#include "billing/top_ups.h"
#include "core/caller.h"
#include "core/clock.h"
#include "core/db_pool.h"
#include "core/money.h"
#include "core/org_directory.h"

#include <string>

namespace gpurent::billing {

struct Credit {
  Money amount{0, "XXX"};
  CreditKind kind = CreditKind::kTopUp;
  std::string reason;
};

struct Credited {
  long long transaction_id = 0;  // the posting; billing::transaction_id_text names it
  Balances balances;             // the org's, after it
};

std::string_view to_string(CreditKind kind);  // "top_up" | "goodwill"

class AdminMoney {
 public:
  AdminMoney(PgPool& pool, const Clock& clock, Ledger& ledger, TopUps& top_ups,
             InvoiceStore& invoices, OrgDirectory& orgs)
      : pool_(pool),
        clock_(clock),
        ledger_(ledger),
        top_ups_(top_ups),
        invoices_(invoices),
        orgs_(orgs) {}

  // Credits the org, audited as billing.credit. not_found for no such org; TopUps::credit's
  // checks for the amount.
  Credited credit(const Caller& caller, const std::string& org_id, const Credit& credit);

  // How far below zero the org's available balance may go (0: strictly prepaid), audited as
  // billing.credit_limit_set. invalid_request naming credit_limit for another currency or a
  // negative amount; not_found for no such org.
  Balances set_credit_limit(const Caller& caller, const std::string& org_id, const Money& limit);

  // A credit note of `amount` against the issued invoice, its money back on the org's
  // balance, audited as billing.credit_note. invalid_request naming amount for another
  // currency; InvoiceStore::issue_credit_note's refusals otherwise.
  InvoiceRecord credit_note(const Caller& caller, const std::string& invoice_id,
                            const Money& amount, const std::string& reason);

  // The org's balances; not_found for no such org.
  Balances balances(const std::string& org_id);

 private:
  void require_org(Tx& tx, const std::string& org_id);

  PgPool& pool_;
  const Clock& clock_;
  Ledger& ledger_;
  TopUps& top_ups_;
  InvoiceStore& invoices_;
  OrgDirectory& orgs_;
};

}  // namespace gpurent::billing
