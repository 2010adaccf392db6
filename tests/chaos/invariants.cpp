// The invariants as SQL over the schema of migrations/0007_rentals.sql and 0015_ledger.sql.
// Several are also enforced by constraints; they are checked all the same, since a fault
// must not find a way around them (and a migration may one day drop one).
#include "tests/chaos/invariants.h"

#include <pqxx/pqxx>

#include <algorithm>
#include <map>

namespace gpurent::testing::chaos {
namespace {

constexpr const char* kLive = "('scheduled', 'provisioning', 'active', 'releasing')";

// Each row of `sql` is one violation of `name`, its columns joined as the detail.
void each_row(pqxx::transaction_base& tx, const std::string& name, const std::string& sql,
              std::vector<Violation>& out) {
  for (const auto& row : tx.exec(sql)) {
    std::string detail;
    for (const auto& field : row) {
      if (!detail.empty()) detail += " ";
      detail += std::string(field.name()) + "=" + (field.is_null() ? "NULL" : field.c_str());
    }
    out.push_back({name, detail});
  }
}

}  // namespace

std::vector<Violation> check_database(const std::string& url) {
  std::vector<Violation> out;
  pqxx::connection c(url);
  pqxx::read_transaction tx(c);
  each_row(tx, "overlapping_allocations",
           std::string("SELECT a.gpu_id, a.rental_id AS first, b.rental_id AS second,"
                       " a.period AS first_period, b.period AS second_period"
                       " FROM allocations a JOIN allocations b ON a.gpu_id = b.gpu_id"
                       " AND a.rental_id < b.rental_id AND a.period && b.period"
                       " JOIN rentals ra ON ra.id = a.rental_id JOIN rentals rb ON rb.id = "
                       "b.rental_id WHERE ra.state IN ") +
               kLive + " AND rb.state IN " + kLive + " LIMIT 50",
           out);
  each_row(tx, "ledger_transaction_unbalanced",
           "SELECT t.id AS transaction, t.kind, t.idempotency_key,"
           " coalesce(sum(e.amount_minor), 0) AS total, count(e.id) AS entries"
           " FROM ledger_transactions t LEFT JOIN ledger_entries e ON e.transaction_id = t.id"
           " GROUP BY t.id HAVING coalesce(sum(e.amount_minor), 0) <> 0 OR count(e.id) < 2"
           " LIMIT 50",
           out);
  each_row(tx, "balance_not_replay",
           "WITH replay AS (SELECT org_id,"
           " coalesce(sum(amount_minor) FILTER (WHERE account = 'available'), 0) AS available,"
           " coalesce(sum(amount_minor) FILTER (WHERE account = 'held'), 0) AS held"
           " FROM ledger_entries WHERE org_id IS NOT NULL GROUP BY org_id)"
           " SELECT coalesce(a.org_id, r.org_id) AS org, a.available_minor, a.held_minor,"
           " r.available AS replayed_available, r.held AS replayed_held"
           " FROM billing_accounts a FULL JOIN replay r ON r.org_id = a.org_id"
           " WHERE coalesce(a.available_minor, 0) <> coalesce(r.available, 0)"
           " OR coalesce(a.held_minor, 0) <> coalesce(r.held, 0) LIMIT 50",
           out);
  each_row(
      tx, "hold_not_price",
      std::string("SELECT r.id AS rental, r.state, r.price_per_day_minor, r.days,"
                  " br.day_gross_minor AS billed_day,"
                  " (SELECT sum(h.amount_minor) FROM billing_holds h WHERE h.rental_id = r.id)"
                  " AS held_total,"
                  " (SELECT count(*) FROM billing_holds h WHERE h.rental_id = r.id"
                  " AND h.first_day = 0) AS booking_holds"
                  " FROM rentals r LEFT JOIN billing_rentals br ON br.rental_id = r.id"
                  " WHERE r.state IN ('scheduled', 'provisioning', 'active') AND ("
                  " br.rental_id IS NULL OR br.day_gross_minor <> r.price_per_day_minor"
                  " OR (SELECT sum(h.amount_minor) FROM billing_holds h WHERE h.rental_id = r.id)"
                  " IS DISTINCT FROM r.price_per_day_minor * r.days"
                  " OR (SELECT count(*) FROM billing_holds h WHERE h.rental_id = r.id"
                  " AND h.first_day = 0) <> 1) LIMIT 50"),
      out);
  // Money held for a booking the database does not have: a hold committed apart from it.
  each_row(tx, "hold_without_rental",
           "SELECT br.rental_id, br.org_id, br.state FROM billing_rentals br"
           " WHERE NOT EXISTS (SELECT 1 FROM rentals r WHERE r.id = br.rental_id) LIMIT 50",
           out);
  each_row(tx, "hold_posting_mismatch",
           "SELECT h.id AS hold, h.rental_id, h.amount_minor,"
           " (SELECT sum(e.amount_minor) FROM ledger_transactions t"
           " JOIN ledger_entries e ON e.transaction_id = t.id"
           " WHERE t.idempotency_key = 'hold:' || h.id AND e.account = 'held') AS posted"
           " FROM billing_holds h WHERE h.amount_minor > 0 AND"
           " (SELECT sum(e.amount_minor) FROM ledger_transactions t"
           " JOIN ledger_entries e ON e.transaction_id = t.id"
           " WHERE t.idempotency_key = 'hold:' || h.id AND e.account = 'held')"
           " IS DISTINCT FROM h.amount_minor LIMIT 50",
           out);
  each_row(tx, "held_not_holds",
           "SELECT a.org_id, a.held_minor,"
           " coalesce(sum(h.amount_minor - h.captured_minor - h.released_minor), 0) AS in_holds"
           " FROM billing_accounts a LEFT JOIN billing_holds h ON h.org_id = a.org_id"
           " GROUP BY a.org_id, a.held_minor"
           " HAVING a.held_minor <> coalesce(sum(h.amount_minor - h.captured_minor"
           " - h.released_minor), 0) LIMIT 50",
           out);
  each_row(tx, "day_charged_twice",
           "SELECT rental_id, day, count(*) AS charges FROM billing_charges"
           " GROUP BY rental_id, day HAVING count(*) > 1 LIMIT 50",
           out);
  each_row(tx, "capture_without_charge",
           "SELECT t.id AS transaction, t.idempotency_key, t.rental_id FROM ledger_transactions t"
           " WHERE t.kind = 'capture' AND NOT EXISTS"
           " (SELECT 1 FROM billing_charges c WHERE c.transaction_id = t.id) LIMIT 50",
           out);
  each_row(tx, "captures_beyond_days",
           "SELECT r.id AS rental, r.days, count(*) AS captures FROM ledger_transactions t"
           " JOIN rentals r ON r.id = t.rental_id WHERE t.kind = 'capture'"
           " GROUP BY r.id, r.days HAVING count(*) > r.days LIMIT 50",
           out);
  return out;
}

std::vector<Violation> check_clients(const std::string& url,
                                     const std::vector<KeyRecord>& records) {
  std::vector<Violation> out;
  std::map<std::string, std::vector<std::string>> by_name;  // every rental is a storm key's
  {
    pqxx::connection c(url);
    pqxx::read_transaction tx(c);
    for (const auto& row : tx.exec("SELECT name, id FROM rentals")) {
      by_name[row[0].as<std::string>()].push_back(row[1].as<std::string>());
    }
  }
  auto ids_text = [](const auto& ids) {
    std::string s;
    for (const auto& id : ids) s += (s.empty() ? "" : ",") + id;
    return s;
  };
  for (const auto& r : records) {
    const auto found = by_name.find(r.key);
    const std::vector<std::string> none;
    const auto& ids = found == by_name.end() ? none : found->second;
    for (const auto& id : r.rental_ids) {
      if (std::find(ids.begin(), ids.end(), id) == ids.end()) {
        out.push_back({"acknowledged_missing",
                       "key=" + r.key + " rental=" + id + " in_database=" + ids_text(ids)});
      }
    }
    if (r.rental_ids.size() > 1) {
      out.push_back({"key_answered_two_ids", "key=" + r.key + " ids=" + ids_text(r.rental_ids)});
    }
    if (ids.size() > 1) {
      out.push_back({"key_made_many_rentals", "key=" + r.key + " rentals=" + ids_text(ids)});
    }
    if (r.outcome == KeyRecord::Outcome::kRefused && !ids.empty()) {
      out.push_back({"refused_but_booked", "key=" + r.key + " answered " +
                                               std::to_string(r.final_status) + " " + r.final_code +
                                               " but rental=" + ids_text(ids)});
    }
    for (const auto& a : r.attempts) {
      if (a.status == 503 && !a.retry_after) {
        out.push_back(
            {"unavailable_without_retry_after",
             "key=" + r.key + " replica=" + std::to_string(a.replica) + " " + a.body_head});
      } else if (a.status >= 500 && a.status != 503) {
        out.push_back({"server_error", "key=" + r.key + " status=" + std::to_string(a.status) +
                                           " replica=" + std::to_string(a.replica) + " " +
                                           a.body_head});
      }
    }
  }
  return out;
}

}  // namespace gpurent::testing::chaos
