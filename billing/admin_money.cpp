// AdminMoney: each use case posts and audits in one transaction.
#include "billing/admin_money.h"

#include "core/audit.h"
#include "core/error.h"

namespace gpurent::billing {

std::string_view to_string(CreditKind kind) {
  return kind == CreditKind::kGoodwill ? "goodwill" : "top_up";
}

void AdminMoney::require_org(Tx& tx, const std::string& org_id) {
  if (!orgs_.org_exists(tx, org_id)) throw Error(ErrorCode::kNotFound, "No such organisation.");
}

Credited AdminMoney::credit(const Caller& caller, const std::string& org_id, const Credit& c) {
  return pool_.transact("billing_admin_credit", [&](Tx& tx) {
    require_org(tx, org_id);
    long long id = top_ups_.credit(tx, org_id, c.amount, c.kind, c.reason, caller.actor.user_id);
    write_audit(
        tx, clock_.now(), caller.actor,
        {.org_id = org_id,
         .action = "billing.credit",
         .target = transaction_id_text(id),
         .details = {
             {"amount", c.amount.to_json()}, {"kind", to_string(c.kind)}, {"reason", c.reason}}});
    return Credited{id, ledger_.balances(tx, org_id)};
  });
}

Balances AdminMoney::set_credit_limit(const Caller& caller, const std::string& org_id,
                                      const Money& limit) {
  if (limit.currency() != ledger_.currency()) {
    throw Error::invalid_field("credit_limit", "must be in " + ledger_.currency());
  }
  if (limit.amount_minor() < 0) throw Error::invalid_field("credit_limit", "must not be negative");
  return pool_.transact("billing_set_credit_limit", [&](Tx& tx) {
    require_org(tx, org_id);
    ledger_.set_credit_limit(tx, org_id, limit.amount_minor());
    write_audit(tx, clock_.now(), caller.actor,
                {.org_id = org_id,
                 .action = "billing.credit_limit_set",
                 .target = org_id,
                 .details = {{"credit_limit", limit.to_json()}}});
    return ledger_.balances(tx, org_id);
  });
}

InvoiceRecord AdminMoney::credit_note(const Caller& caller, const std::string& invoice_id,
                                      const Money& amount, const std::string& reason) {
  if (amount.currency() != ledger_.currency()) {
    throw Error::invalid_field("amount", "must be in " + ledger_.currency());
  }
  return pool_.transact("billing_credit_note", [&](Tx& tx) {
    auto note = invoices_.issue_credit_note(tx, invoice_id, amount.amount_minor(), reason);
    top_ups_.refund_credit_note(tx, note, caller.actor.user_id);
    write_audit(
        tx, clock_.now(), caller.actor,
        {.org_id = note.org_id,
         .action = "billing.credit_note",
         .target = note.id,
         .details = {
             {"invoice_id", invoice_id}, {"amount", amount.to_json()}, {"reason", reason}}});
    return note;
  });
}

Balances AdminMoney::balances(const std::string& org_id) {
  return pool_.read("billing_admin_balance", [&](Tx& tx) {
    require_org(tx, org_id);
    return ledger_.balances(tx, org_id);
  });
}

}  // namespace gpurent::billing
