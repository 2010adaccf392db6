// Monthly invoices: the draft of each org's calendar month that charged rental-days and SLA
// credits add to, issued with a gap-free number once the month is over.
#pragma once

#include "core/clock.h"
#include "core/db_pool.h"
#include "core/paging.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gpurent::billing {

// One unit of a line in minor units: net + tax == gross.
struct UnitAmounts {
  std::int64_t net_minor = 0, tax_minor = 0, gross_minor = 0;
};

struct InvoiceLine {
  std::string kind;  // rental_days | sla_credit
  std::string rental_id, description;
  int days = 0;      // 0 on a credit
  UnitAmounts unit;  // a day's price, or the whole credit
  // days × unit for rental days; the credit itself (negative) for a credit.
  std::int64_t amount_net_minor = 0, tax_minor = 0, amount_minor = 0;
};

struct InvoiceRecord {
  std::string id, org_id;
  std::string period_start, period_end;  // YYYY-MM-DD, the month half-open
  std::string status;                    // draft | issued | paid | void
  std::optional<std::string> number;     // YYYY-NNNNNN once issued
  std::string currency;
  // Net, the sum of the lines' tax, gross: subtotal + tax == total == Σ line amounts.
  std::int64_t subtotal_minor = 0, tax_minor = 0, total_minor = 0;
  int vat_basis_points = 0;  // 2000 = 20.00%
  Timestamp created_at;
  std::optional<Timestamp> issued_at;
  std::vector<InvoiceLine> lines;                  // in the order they were added
  std::string kind = "invoice";                    // invoice | credit_note
  std::optional<std::string> corrects_invoice_id;  // a credit note's invoice
};

// Every method runs in the caller's transaction (see gpurent::Tx) unless said otherwise.
class InvoiceStore {
 public:
  // `currency` and `vat_basis_points` are what a new draft is made with. `time_zone`: the
  // IANA zone whose calendar months invoices follow (PostgreSQL decides, default "UTC"; an
  // unknown name fails the first statement that uses it).
  InvoiceStore(const Clock& clock, std::string currency, int vat_basis_points,
               std::string time_zone = "UTC");

  const std::string& currency() const { return currency_; }
  int vat_basis_points() const { return vat_basis_points_; }
  const std::string& time_zone() const { return time_zone_; }

  // One more charged day of a rental on its org's draft for the month that `at` falls in
  // (created when missing): the rental's line at that gross unit price gets +1 day and its
  // amounts, and the invoice's totals move with it. The draft's row stays locked until the
  // caller's transaction ends, so concurrent charges of one org queue on it and all land,
  // while a finaliser skips it. A month already issued takes no more lines: a late charge
  // goes on the draft of the first month after it that is still a draft (a correction is
  // a new document). A line keeps the net/tax split of its first day. Throws
  // std::invalid_argument unless net + tax == gross, all three ≥ 0, and the rental id and
  // description are 1..64 and 1..500 bytes.
  void add_rental_day(Tx& tx, const std::string& org_id, const std::string& rental_id,
                      const std::string& description, Timestamp at, const UnitAmounts& unit);

  // An SLA credit as its own line on the draft of the month of `at` (or a later one, as
  // above), moving the totals down. Throws std::invalid_argument unless credit.gross_minor
  // < 0, net and tax ≤ 0 and net + tax == gross.
  void add_credit(Tx& tx, const std::string& org_id, const std::string& rental_id,
                  const std::string& description, Timestamp at, const UnitAmounts& credit);

  // Issues every draft whose month ended before `now` (in the store's time zone): status
  // issued, issued_at now, and the next numbers of the year the month belongs to, oldest
  // month first. Runs its own transactions on `pool`, one per batch of at most `batch`
  // drafts, claimed with FOR UPDATE SKIP LOCKED, so every replica may run it at once and a
  // draft a charge is writing to waits for the next run. Numbers are taken under a
  // per-year pg_advisory_xact_lock and the year's row in invoice_numbers: gap-free, unique
  // across replicas, and given back when a batch rolls back. Returns how many it issued.
  int finalise_due(PgPool& pool, Timestamp now, int batch = 500);

  // A credit note correcting an issued (or paid) invoice, never the invoice itself: a new
  // document of the invoice's month with one `correction` line of −amount (split at the
  // invoice's VAT rate), issued at once with the next number of the invoice's year. The
  // credit notes of an invoice give back at most its total. Throws Error not_found,
  // invalid_state (a draft, a void invoice or a credit note), invalid_request naming
  // "amount". The money itself is the caller's posting (billing/top_ups.h).
  InvoiceRecord issue_credit_note(Tx& tx, const std::string& invoice_id, std::int64_t amount_minor,
                                  const std::string& description);

  // The org's invoices with their lines, newest month first, at most `limit`, after
  // `cursor` (a next_cursor of an earlier page; invalid_request naming "cursor" otherwise).
  Page<InvoiceRecord> list(Tx& tx, const std::string& org_id, int limit,
                           const std::optional<std::string>& cursor);

  // With its lines, read in one statement so a draft's totals always match its lines;
  // nullopt for an unknown id or another org's (tenants cannot tell them apart).
  std::optional<InvoiceRecord> get(Tx& tx, const std::string& org_id, const std::string& id);

 private:
  // The id of the org's draft for the month of `at` (or the first later month still a
  // draft), created when missing and locked until the caller's transaction ends.
  std::string open_draft(Tx& tx, const std::string& org_id, Timestamp at);
  // One batch of finalise_due in its own transaction: how many drafts it claimed.
  int finalise_batch(PgPool& pool, Timestamp now, int batch);

  const Clock& clock_;
  std::string currency_;
  int vat_basis_points_;
  std::string time_zone_;
};

// RFC 4180 CSV of one invoice (CRLF line ends): a header row, one row per line, then the
// subtotal, tax and total rows. Amounts are decimal strings with two minor digits
// (1234.50, -12.00), made from the integers; text fields are quoted with quotes doubled, and
// one that starts with = + - @, a tab or a carriage return gets a leading ' so a
// spreadsheet shows it rather than running it.
std::string invoice_csv(const InvoiceRecord& invoice);

// A VAT rate in basis points as a percentage with two decimals: 2000 → "20.00".
std::string vat_rate_percent(int basis_points);

// Minor units as a decimal with two fraction digits: 123450 → "1234.50", -5 → "-0.05".
std::string decimal_amount(std::int64_t minor);

}  // namespace gpurent::billing
