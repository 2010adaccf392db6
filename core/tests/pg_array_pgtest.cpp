// pg_array_literal against the real parser: hostile elements come back from `$1::text[]`
// exactly as they went in, and numbers fit `::int[]`.
#include "core/pg_array.h"
#include "tests/support/pg_harness.h"

#include <gtest/gtest.h>

#include <pqxx/pqxx>

#include <string>
#include <vector>

namespace gpurent {
namespace pg_array_pgtest {

std::vector<std::string> round_trip(const std::vector<std::string>& values) {
  testing::TestDatabase db;
  pqxx::connection c(db.url());
  pqxx::nontransaction tx(c);
  auto rows =
      tx.exec_params("SELECT v FROM unnest($1::text[]) WITH ORDINALITY AS u(v, n) ORDER BY n",
                     pg_array_literal(values));
  std::vector<std::string> out;
  for (const auto& row : rows)
    out.push_back(row[0].is_null() ? "<null>" : row[0].as<std::string>());
  return out;
}

TEST(PgArrayLiteral, HostileTextSurvivesTheRoundTrip) {
  std::vector<std::string> values = {
      "plain",    "",          "NULL",      "null", "a,b", "{x}",  "\"quoted\"", "back\\slash",
      " spaced ", "tab\there", "new\nline", "жж",   "}",   "\\\"", "'"};
  EXPECT_EQ(round_trip(values), values);
  EXPECT_EQ(round_trip({}), std::vector<std::string>{});
}

TEST(PgArrayLiteral, NumbersAreAcceptedAsIntegers) {
  testing::TestDatabase db;
  pqxx::connection c(db.url());
  pqxx::nontransaction tx(c);
  std::vector<int> numbers = {0, -7, 2147483647};
  auto sum = tx.exec_params("SELECT sum(x)::bigint FROM unnest($1::int[]) AS x",
                            pg_array_literal(numbers))[0][0]
                 .as<long long>();
  EXPECT_EQ(sum, 2147483640LL);
  EXPECT_EQ(pg_array_literal(numbers), "{\"0\",\"-7\",\"2147483647\"}");
}

}  // namespace pg_array_pgtest
}  // namespace gpurent
