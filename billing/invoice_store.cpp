// InvoiceStore: named, parameterised statements over invoices, invoice_lines and
// invoice_numbers. A charged day or a credit is its line and the invoice's totals in one
// statement (a data-modifying CTE), so the two cannot drift apart; the database's own
// checks and triggers (migrations/0016_invoices.sql) keep issued invoices as they were.
#include "billing/invoice_store.h"

#include "billing/pricing.h"
#include "core/error.h"
#include "core/id.h"
#include "core/money.h"
#include "core/pg_array.h"
#include "core/sql.h"

#include <chrono>
#include <cstdio>
#include <map>
#include <stdexcept>

namespace gpurent::billing {
namespace {

// How many months past the month of `at` a late charge may look for a draft. Only months
// that have ended are issued, so the month a charge is made in is always a draft; a charge
// dated two years back is a fault of its caller.
constexpr int kInvoiceMonthsToTry = 24;

// Numbers are taken under a transaction-level advisory lock per year, in a key space of
// their own (the two-key form, class "inv"), apart from the migrator's and the GPUs' locks.
constexpr int kInvoiceNumberLockClass = 0x696e76;

constexpr std::size_t kMaxInvoiceRentalIdBytes = 64;
constexpr std::size_t kMaxInvoiceLineDescriptionBytes = 500;

// The org's draft for the month `at` falls in, `$5` months on, in zone $4. The no-op update
// locks an existing draft until the transaction ends (the finaliser skips it meanwhile) and
// returns it; a month already issued updates and returns nothing, and the caller tries the
// next month. A concurrent first insert of the same month waits for the other transaction
// and then takes the update path, so both charges land on one invoice.
constexpr Statement kInvoiceOpenDraft = {
    "invoice_open_draft",
    "INSERT INTO invoices (id, org_id, period_start, period_end, status, currency,"
    " subtotal_minor, tax_minor, total_minor, vat_basis_points, created_at)"
    " SELECT $1::text, $2::text, m.start, (m.start + interval '1 month')::date, 'draft',"
    " $6::text, 0, 0, 0, $7::int,"
    " $8::timestamptz FROM (SELECT (date_trunc('month', $3::timestamptz AT TIME ZONE $4::text)"
    " + make_interval(months => $5::int))::date AS start) m"
    " ON CONFLICT (org_id, period_start) WHERE kind = 'invoice'"
    " DO UPDATE SET status = invoices.status"
    " WHERE invoices.status = 'draft' RETURNING id"};

// +1 day on the rental's line at this gross price (made with one day when missing), and the
// invoice's totals by the line's own unit: a line keeps the split of its first day.
constexpr Statement kInvoiceAddDay = {
    "invoice_add_rental_day",
    "WITH line AS (INSERT INTO invoice_lines (invoice_id, kind, rental_id, description, days,"
    " unit_net_minor, unit_tax_minor, unit_gross_minor, amount_net_minor, tax_minor,"
    " amount_minor) VALUES ($1, 'rental_days', $2, $3, 1, $4, $5, $6, $4, $5, $6)"
    " ON CONFLICT (invoice_id, rental_id, unit_gross_minor) WHERE kind = 'rental_days'"
    " DO UPDATE SET days = invoice_lines.days + 1,"
    " amount_net_minor = invoice_lines.amount_net_minor + invoice_lines.unit_net_minor,"
    " tax_minor = invoice_lines.tax_minor + invoice_lines.unit_tax_minor,"
    " amount_minor = invoice_lines.amount_minor + invoice_lines.unit_gross_minor"
    " RETURNING unit_net_minor, unit_tax_minor, unit_gross_minor)"
    " UPDATE invoices SET subtotal_minor = invoices.subtotal_minor + line.unit_net_minor,"
    " tax_minor = invoices.tax_minor + line.unit_tax_minor,"
    " total_minor = invoices.total_minor + line.unit_gross_minor"
    " FROM line WHERE invoices.id = $1 RETURNING invoices.id"};

constexpr Statement kInvoiceAddCredit = {
    "invoice_add_credit",
    "WITH line AS (INSERT INTO invoice_lines (invoice_id, kind, rental_id, description, days,"
    " unit_net_minor, unit_tax_minor, unit_gross_minor, amount_net_minor, tax_minor,"
    " amount_minor) VALUES ($1, 'sla_credit', $2, $3, 0, $4, $5, $6, $4, $5, $6)"
    " RETURNING amount_net_minor, tax_minor, amount_minor)"
    " UPDATE invoices SET subtotal_minor = invoices.subtotal_minor + line.amount_net_minor,"
    " tax_minor = invoices.tax_minor + line.tax_minor,"
    " total_minor = invoices.total_minor + line.amount_minor"
    " FROM line WHERE invoices.id = $1 RETURNING invoices.id"};

// Drafts whose month has ended by $1: the months before the one $1 falls in, in zone $2.
// Oldest month first, read in the order of invoices_drafts_idx.
constexpr Statement kInvoiceClaimDue = {
    "invoice_claim_due",
    "SELECT id, extract(year FROM period_start)::int FROM invoices WHERE status = 'draft'"
    " AND period_start < date_trunc('month', $1::timestamptz AT TIME ZONE $2::text)::date"
    " ORDER BY period_start, created_at, id LIMIT $3 FOR UPDATE SKIP LOCKED"};
// The invoice a credit note corrects, locked, with what earlier credit notes gave back.
constexpr Statement kInvoiceLockForCredit = {
    "invoice_lock_for_credit",
    "SELECT i.org_id, i.kind, i.status, i.total_minor, i.vat_basis_points,"
    " extract(year FROM i.period_start)::int, coalesce((SELECT -sum(c.total_minor) FROM invoices c"
    " WHERE c.corrects_invoice_id = i.id), 0)::bigint"
    " FROM invoices i WHERE i.id = $1 FOR UPDATE"};
// A credit note: a draft of the corrected invoice's month, one correction line, then issued.
constexpr Statement kCreditNoteInsert = {
    "credit_note_insert",
    "INSERT INTO invoices (id, org_id, period_start, period_end, status, currency,"
    " subtotal_minor, tax_minor, total_minor, vat_basis_points, created_at, kind,"
    " corrects_invoice_id)"
    " SELECT $1, org_id, period_start, period_end, 'draft', currency, $3, $4, $5,"
    " vat_basis_points, $6::timestamptz, 'credit_note', id FROM invoices WHERE id = $2"};
constexpr Statement kCreditNoteLine = {
    "credit_note_line",
    "INSERT INTO invoice_lines (invoice_id, kind, rental_id, description, days,"
    " unit_net_minor, unit_tax_minor, unit_gross_minor, amount_net_minor, tax_minor,"
    " amount_minor) VALUES ($1, 'correction', $2, $3, 0, $4, $5, $6, $4, $5, $6)"};
constexpr Statement kInvoiceLockYear = {"invoice_lock_year",
                                        "SELECT pg_advisory_xact_lock($1::int, $2::int)"};
// $2 numbers of year $1: returns the last of them.
constexpr Statement kInvoiceTakeNumbers = {
    "invoice_take_numbers",
    "INSERT INTO invoice_numbers (year, last_number) VALUES ($1, $2) ON CONFLICT (year)"
    " DO UPDATE SET last_number = invoice_numbers.last_number + EXCLUDED.last_number"
    " RETURNING last_number"};
constexpr Statement kInvoiceIssue = {
    "invoice_issue",
    "UPDATE invoices i SET status = 'issued', issued_at = $1::timestamptz, number = u.number"
    " FROM unnest($2::text[], $3::text[]) AS u(id, number)"
    " WHERE i.id = u.id AND i.status = 'draft' RETURNING i.id"};

#define INVOICE_COLUMNS                                                                         \
  "i.id, i.org_id, to_char(i.period_start, 'YYYY-MM-DD'), to_char(i.period_end, 'YYYY-MM-DD')," \
  " i.status, i.number, i.currency, i.subtotal_minor, i.tax_minor, i.total_minor,"              \
  " i.vat_basis_points, " SQL_MICROS("i.created_at") ", " SQL_MICROS(                           \
      "i.issued_at") ", i.kind, i.corrects_invoice_id"
#define INVOICE_LINE_COLUMNS                                                              \
  "l.id, l.kind, l.rental_id, l.description, l.days, l.unit_net_minor, l.unit_tax_minor," \
  " l.unit_gross_minor, l.amount_net_minor, l.tax_minor, l.amount_minor"
constexpr int kInvoiceLineColumn = 15;  // where INVOICE_LINE_COLUMNS start

// One statement, so a draft's totals and lines come from one snapshot.
constexpr Statement kInvoiceGet = {"invoice_get",
                                   "SELECT " INVOICE_COLUMNS ", " INVOICE_LINE_COLUMNS
                                   " FROM invoices i"
                                   " LEFT JOIN invoice_lines l ON l.invoice_id = i.id"
                                   " WHERE i.id = $1 AND i.org_id = $2 ORDER BY l.id"};
// Newest month first; the page's invoices (one more than asked) with their lines. The first
// page and the ones after a cursor are separate statements, so the cursor's bound is an
// index condition on invoices_org_period_idx.
#define INVOICE_PAGE(where, limit)                                                                \
  "SELECT " INVOICE_COLUMNS ", " INVOICE_LINE_COLUMNS                                             \
  " FROM (SELECT * FROM invoices WHERE org_id = $1" where                                         \
  " ORDER BY period_start DESC, id DESC LIMIT " limit                                             \
  ") i LEFT JOIN invoice_lines l ON l.invoice_id = i.id ORDER BY i.period_start DESC, i.id DESC," \
  " l.id"
constexpr Statement kInvoiceListFirst = {"invoice_list_first", INVOICE_PAGE("", "$2")};
constexpr Statement kInvoiceListAfter = {
    "invoice_list_after", INVOICE_PAGE(" AND (period_start, id) < ($2::date, $3::text)", "$4")};

InvoiceRecord invoice_from(const pqxx::row& row) {
  InvoiceRecord r;
  r.id = row[0].as<std::string>();
  r.org_id = row[1].as<std::string>();
  r.period_start = row[2].as<std::string>();
  r.period_end = row[3].as<std::string>();
  r.status = row[4].as<std::string>();
  r.number = optional_field<std::string>(row[5]);
  r.currency = row[6].as<std::string>();
  r.subtotal_minor = row[7].as<long long>();
  r.tax_minor = row[8].as<long long>();
  r.total_minor = row[9].as<long long>();
  r.vat_basis_points = row[10].as<int>();
  r.created_at = read_timestamp(row[11]);
  r.issued_at = read_optional_timestamp(row[12]);
  r.kind = row[13].as<std::string>();
  r.corrects_invoice_id = optional_field<std::string>(row[14]);
  return r;
}

InvoiceLine invoice_line_from(const pqxx::row& row) {
  const int c = kInvoiceLineColumn;
  InvoiceLine l;
  l.kind = row[c + 1].as<std::string>();
  l.rental_id = row[c + 2].as<std::string>();
  l.description = row[c + 3].as<std::string>();
  l.days = row[c + 4].as<int>();
  l.unit = {row[c + 5].as<long long>(), row[c + 6].as<long long>(), row[c + 7].as<long long>()};
  l.amount_net_minor = row[c + 8].as<long long>();
  l.tax_minor = row[c + 9].as<long long>();
  l.amount_minor = row[c + 10].as<long long>();
  return l;
}

// Rows of INVOICE_COLUMNS + INVOICE_LINE_COLUMNS, an invoice's rows together, as invoices with
// their lines (an invoice without lines has one row of NULL line columns).
std::vector<InvoiceRecord> invoices_from(const pqxx::result& rows) {
  std::vector<InvoiceRecord> out;
  for (const auto& row : rows) {
    if (out.empty() || out.back().id != row[0].c_str()) out.push_back(invoice_from(row));
    if (!row[kInvoiceLineColumn].is_null()) out.back().lines.push_back(invoice_line_from(row));
  }
  return out;
}

// The listing's keyset: the month's first day (as midnight UTC) and the id.
Timestamp invoice_date_timestamp(const std::string& date) {
  int y = 0;
  unsigned m = 0, d = 0;
  if (std::sscanf(date.c_str(), "%d-%u-%u", &y, &m, &d) != 3) {
    throw std::logic_error("invoice dates are YYYY-MM-DD, not " + date);
  }
  std::chrono::sys_days day{std::chrono::year{y} / std::chrono::month{m} / std::chrono::day{d}};
  return std::chrono::time_point_cast<Timestamp::duration>(day);
}

std::string invoice_date_text(Timestamp t) {
  std::chrono::year_month_day ymd{std::chrono::floor<std::chrono::days>(t)};
  char buf[32];
  std::snprintf(buf, sizeof buf, "%04d-%02u-%02u", static_cast<int>(ymd.year()),
                static_cast<unsigned>(ymd.month()), static_cast<unsigned>(ymd.day()));
  return buf;
}

std::string invoice_number(int year, long long n) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%04d-%06lld", year, n);
  return buf;
}

void check_line_text(const std::string& value, std::size_t max, const char* what) {
  if (value.empty() || value.size() > max || value.find('\0') != std::string::npos) {
    throw std::invalid_argument(std::string(what) + " must be 1 to " + std::to_string(max) +
                                " bytes without NUL");
  }
}

bool unit_adds_up(const UnitAmounts& u) {
  std::int64_t sum = 0;
  return !__builtin_add_overflow(u.net_minor, u.tax_minor, &sum) && sum == u.gross_minor;
}

// A CSV field of text: formula starts defused, quoted, quotes doubled.
void csv_text_field(std::string& out, const std::string& value) {
  out += '"';
  if (!value.empty() && (value[0] == '=' || value[0] == '+' || value[0] == '-' || value[0] == '@' ||
                         value[0] == '\t' || value[0] == '\r')) {
    out += '\'';
  }
  for (char c : value) {
    if (c == '"') out += '"';
    out += c;
  }
  out += '"';
}

}  // namespace

InvoiceStore::InvoiceStore(const Clock& clock, std::string currency, int vat_basis_points,
                           std::string time_zone)
    : clock_(clock),
      currency_(std::move(currency)),
      vat_basis_points_(vat_basis_points),
      time_zone_(std::move(time_zone)) {
  if (!Money::is_valid_currency(currency_)) {
    throw std::invalid_argument("an invoice currency is an ISO 4217 code such as RUB");
  }
  if (vat_basis_points_ < 0 || vat_basis_points_ > 10'000) {
    throw std::invalid_argument("a VAT rate is 0 to 10000 basis points");
  }
  if (time_zone_.empty()) throw std::invalid_argument("an invoice time zone is an IANA name");
}

std::string InvoiceStore::open_draft(Tx& tx, const std::string& org_id, Timestamp at) {
  auto when = sql_timestamp(at);
  auto created = sql_timestamp(clock_.now());
  for (int ahead = 0; ahead < kInvoiceMonthsToTry; ++ahead) {
    auto rows = tx.exec(kInvoiceOpenDraft, new_id(id_prefix::kInvoice), org_id, when, time_zone_,
                        ahead, currency_, vat_basis_points_, created);
    if (!rows.empty()) return rows[0][0].as<std::string>();
  }
  throw std::logic_error("no draft invoice of org " + org_id + " within " +
                         std::to_string(kInvoiceMonthsToTry) + " months of " + when);
}

void InvoiceStore::add_rental_day(Tx& tx, const std::string& org_id, const std::string& rental_id,
                                  const std::string& description, Timestamp at,
                                  const UnitAmounts& unit) {
  if (!unit_adds_up(unit) || unit.net_minor < 0 || unit.tax_minor < 0) {
    throw std::invalid_argument("a day's price is net + tax = gross, none of them negative");
  }
  check_line_text(rental_id, kMaxInvoiceRentalIdBytes, "a rental id");
  check_line_text(description, kMaxInvoiceLineDescriptionBytes, "an invoice line's description");
  auto invoice = open_draft(tx, org_id, at);
  tx.exec(kInvoiceAddDay, invoice, rental_id, description, static_cast<long long>(unit.net_minor),
          static_cast<long long>(unit.tax_minor), static_cast<long long>(unit.gross_minor));
}

void InvoiceStore::add_credit(Tx& tx, const std::string& org_id, const std::string& rental_id,
                              const std::string& description, Timestamp at,
                              const UnitAmounts& credit) {
  if (!unit_adds_up(credit) || credit.gross_minor >= 0 || credit.net_minor > 0 ||
      credit.tax_minor > 0) {
    throw std::invalid_argument("a credit is net + tax = gross < 0, net and tax not positive");
  }
  check_line_text(rental_id, kMaxInvoiceRentalIdBytes, "a rental id");
  check_line_text(description, kMaxInvoiceLineDescriptionBytes, "an invoice line's description");
  auto invoice = open_draft(tx, org_id, at);
  tx.exec(kInvoiceAddCredit, invoice, rental_id, description,
          static_cast<long long>(credit.net_minor), static_cast<long long>(credit.tax_minor),
          static_cast<long long>(credit.gross_minor));
}

int InvoiceStore::finalise_batch(PgPool& pool, Timestamp now, int batch) {
  return pool.transact("invoice_finalise", [&](Tx& tx) {
    auto claimed = tx.exec(kInvoiceClaimDue, sql_timestamp(now), time_zone_, batch);
    // By year, ascending, so two finalisers lock years in one order; within a year in the
    // claim's order (oldest month first).
    std::map<int, std::vector<std::string>> by_year;
    for (const auto& row : claimed) by_year[row[1].as<int>()].push_back(row[0].as<std::string>());
    std::vector<std::string> ids, numbers;
    for (const auto& [year, of_year] : by_year) {
      tx.exec(kInvoiceLockYear, kInvoiceNumberLockClass, year);
      const auto count = static_cast<long long>(of_year.size());
      const long long last = tx.exec(kInvoiceTakeNumbers, year, count)[0][0].as<long long>();
      for (long long i = 0; i < count; ++i) {
        ids.push_back(of_year[static_cast<std::size_t>(i)]);
        numbers.push_back(invoice_number(year, last - count + 1 + i));
      }
    }
    if (ids.empty()) return 0;
    auto issued = tx.exec(kInvoiceIssue, sql_timestamp(now), pg_array_literal(ids),
                          pg_array_literal(numbers));
    // Every claimed row is locked by this transaction and was a draft: all of them move.
    if (issued.size() != ids.size()) {
      throw std::logic_error("claimed " + std::to_string(ids.size()) + " drafts, issued " +
                             std::to_string(issued.size()));
    }
    return static_cast<int>(ids.size());
  });
}

InvoiceRecord InvoiceStore::issue_credit_note(Tx& tx, const std::string& invoice_id,
                                              std::int64_t amount_minor,
                                              const std::string& description) {
  check_line_text(description, kMaxInvoiceLineDescriptionBytes, "a credit note's description");
  auto rows = tx.exec(kInvoiceLockForCredit, invoice_id);
  if (rows.empty()) throw Error(ErrorCode::kNotFound, "No such invoice.");
  const auto& r = rows[0];
  std::string org_id = r[0].as<std::string>();
  std::string kind = r[1].as<std::string>();
  std::string status = r[2].as<std::string>();
  if (kind != "invoice" || (status != "issued" && status != "paid")) {
    throw Error(ErrorCode::kInvalidState,
                "Only an issued invoice is corrected by a credit note; a draft is still growing.",
                {{"kind", kind}, {"status", status}});
  }
  std::int64_t total = r[3].as<std::int64_t>();
  std::int64_t credited = r[6].as<std::int64_t>();
  if (amount_minor <= 0 || amount_minor > total - credited) {
    throw Error::invalid_field("amount",
                               "must be positive and at most what the invoice has not "
                               "yet credited (" +
                                   decimal_amount(total - credited) + ")");
  }
  auto split = split_gross(r[4].as<int>(), -amount_minor);
  std::string id = new_id(id_prefix::kInvoice);
  tx.exec(kCreditNoteInsert, id, invoice_id, static_cast<long long>(split.net_minor),
          static_cast<long long>(split.tax_minor), static_cast<long long>(split.gross_minor),
          sql_timestamp(clock_.now()));
  tx.exec(kCreditNoteLine, id, invoice_id, description, static_cast<long long>(split.net_minor),
          static_cast<long long>(split.tax_minor), static_cast<long long>(split.gross_minor));
  int year = r[5].as<int>();
  tx.exec(kInvoiceLockYear, kInvoiceNumberLockClass, year);
  long long number = tx.exec(kInvoiceTakeNumbers, year, 1)[0][0].as<long long>();
  tx.exec(kInvoiceIssue, sql_timestamp(clock_.now()), pg_array_literal(std::vector{id}),
          pg_array_literal(std::vector{invoice_number(year, number)}));
  return *get(tx, org_id, id);
}

int InvoiceStore::finalise_due(PgPool& pool, Timestamp now, int batch) {
  if (batch < 1) throw std::invalid_argument("a finalising batch holds at least one invoice");
  int issued = 0;
  for (;;) {
    const int n = finalise_batch(pool, now, batch);
    issued += n;
    // A short batch found no more unclaimed drafts: the rest are another replica's now, or
    // locked by a charge and issued by a later run.
    if (n < batch) return issued;
  }
}

Page<InvoiceRecord> InvoiceStore::list(Tx& tx, const std::string& org_id, int limit,
                                       const std::optional<std::string>& cursor) {
  if (limit < 1) throw std::invalid_argument("an invoice page holds at least one invoice");
  pqxx::result rows;
  if (cursor) {
    Keyset from = decode_cursor(
        *cursor, [](std::string_view id) { return is_valid_id(id_prefix::kInvoice, id); });
    rows = tx.exec(kInvoiceListAfter, org_id, invoice_date_text(from.at), from.id, limit + 1);
  } else {
    rows = tx.exec(kInvoiceListFirst, org_id, limit + 1);
  }
  Page<InvoiceRecord> page;
  page.items = invoices_from(rows);
  if (static_cast<int>(page.items.size()) > limit) {
    page.items.resize(static_cast<std::size_t>(limit));
    const auto& last = page.items.back();
    page.next_cursor = encode_cursor({invoice_date_timestamp(last.period_start), last.id});
  }
  return page;
}

std::optional<InvoiceRecord> InvoiceStore::get(Tx& tx, const std::string& org_id,
                                               const std::string& id) {
  auto invoices = invoices_from(tx.exec(kInvoiceGet, id, org_id));
  if (invoices.empty()) return std::nullopt;
  return std::move(invoices.front());
}

std::string decimal_amount(std::int64_t minor) {
  // The magnitude as unsigned, so the most negative amount prints too.
  const std::uint64_t magnitude =
      minor < 0 ? 0 - static_cast<std::uint64_t>(minor) : static_cast<std::uint64_t>(minor);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%s%llu.%02llu", minor < 0 ? "-" : "",
                static_cast<unsigned long long>(magnitude / 100),
                static_cast<unsigned long long>(magnitude % 100));
  return buf;
}

std::string vat_rate_percent(int basis_points) {
  return decimal_amount(basis_points);
}

std::string invoice_csv(const InvoiceRecord& invoice) {
  std::string out =
      "\"kind\",\"rental_id\",\"description\",\"days\",\"unit_price\",\"amount_net\",\"tax\","
      "\"amount\",\"currency\"\r\n";
  auto amount = [&out](std::int64_t minor) { out += decimal_amount(minor); };
  for (const auto& l : invoice.lines) {
    csv_text_field(out, l.kind);
    out += ',';
    csv_text_field(out, l.rental_id);
    out += ',';
    csv_text_field(out, l.description);
    out += ',';
    out += std::to_string(l.days);
    out += ',';
    amount(l.unit.gross_minor);
    out += ',';
    amount(l.amount_net_minor);
    out += ',';
    amount(l.tax_minor);
    out += ',';
    amount(l.amount_minor);
    out += ',';
    csv_text_field(out, invoice.currency);
    out += "\r\n";
  }
  auto summary = [&](const char* kind, const std::string& description, std::int64_t minor) {
    csv_text_field(out, kind);
    out += ",,";
    csv_text_field(out, description);
    out += ",,,,,";
    amount(minor);
    out += ',';
    csv_text_field(out, invoice.currency);
    out += "\r\n";
  };
  summary("subtotal", "Net", invoice.subtotal_minor);
  summary("tax", "VAT " + vat_rate_percent(invoice.vat_basis_points) + "%", invoice.tax_minor);
  summary("total", "Total", invoice.total_minor);
  return out;
}

}  // namespace gpurent::billing
