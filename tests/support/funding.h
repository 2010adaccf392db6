// Money on an org's balance for tests about something else than billing: a top-up posted as
// an operator would, in SQL, as one balanced ledger transaction (the database refuses any
// other, migrations/0015_ledger.sql).
#pragma once

#include <pqxx/pqxx>

#include <string>

namespace gpurent::testing {

inline void fund_org(pqxx::connection& c, const std::string& org_id, long long amount_minor) {
  pqxx::work tx(c);
  tx.exec_params(
      "WITH t AS (INSERT INTO ledger_transactions (idempotency_key, kind, org_id, description,"
      " currency, at) VALUES ('test-fund:' || gen_random_uuid(), 'top_up', $1,"
      " 'Top-up: test funding', 'RUB', now()) RETURNING id)"
      " INSERT INTO ledger_entries (transaction_id, account, org_id, amount_minor)"
      " SELECT id, 'payments', NULL, -$2::bigint FROM t"
      " UNION ALL SELECT id, 'available', $1, $2::bigint FROM t",
      org_id, amount_minor);
  tx.commit();
}

// A billion roubles: more than any test books.
inline constexpr long long kAmpleFunds = 100'000'000'000;

}  // namespace gpurent::testing
