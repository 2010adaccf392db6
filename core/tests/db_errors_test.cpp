// Tests SQLSTATE classification and constraint names read from messages, without a database
// (db_errors_pgtest.cpp makes each violation really happen).
#include "core/db_errors.h"

#include <gtest/gtest.h>

#include <pqxx/except>

#include <map>
#include <set>

namespace gpurent {
namespace db_errors_test {

TEST(DbErrorsText, ClassifiesEachListedSqlstate) {
  const std::map<std::string, DbFailure> cases = {
      {"23505", DbFailure::kUniqueViolation},
      {"23P01", DbFailure::kExclusionViolation},
      {"23503", DbFailure::kForeignKeyViolation},
      {"23514", DbFailure::kCheckViolation},
      {"23502", DbFailure::kNotNullViolation},
      {"40001", DbFailure::kSerializationFailure},
      {"40P01", DbFailure::kDeadlock},
  };
  std::set<std::string_view> names;
  for (const auto& [sqlstate, kind] : cases) {
    EXPECT_EQ(classify_sqlstate(sqlstate), kind) << sqlstate;
    names.insert(db_failure_name(kind));
  }
  EXPECT_EQ(names.size(), cases.size()) << "every kind has a name of its own";
  EXPECT_EQ(db_failure_name(DbFailure::kOther), "other");
}

TEST(DbErrorsText, UnknownSqlstatesAreOther) {
  // Neighbours of the listed codes, other classes, and nothing at all.
  for (const char* sqlstate : {"23000", "23001", "2350", "235050", "23p01", "40000", "40003",
                               "22012", "57014", "42P01", "XX000", ""}) {
    EXPECT_EQ(classify_sqlstate(sqlstate), DbFailure::kOther) << sqlstate;
  }
}

TEST(DbErrorsText, ClassifiesLibpqxxExceptionTypes) {
  // libpqxx 6 throws class 40 as transaction_rollback subclasses without a SQLSTATE.
  EXPECT_EQ(classify(pqxx::serialization_failure("ERROR:  could not serialize access\n")),
            DbFailure::kSerializationFailure);
  EXPECT_EQ(classify(pqxx::deadlock_detected("ERROR:  deadlock detected\n")), DbFailure::kDeadlock);
  EXPECT_EQ(classify(pqxx::transaction_rollback("ERROR:  rolled back\n")), DbFailure::kOther);
  EXPECT_EQ(classify(pqxx::unique_violation("ERROR:  duplicate\n", "INSERT", "23505")),
            DbFailure::kUniqueViolation);
  EXPECT_EQ(classify(pqxx::integrity_constraint_violation("ERROR:  x\n", "INSERT", "23P01")),
            DbFailure::kExclusionViolation);
  EXPECT_EQ(classify(pqxx::sql_error("ERROR:  division by zero\n", "SELECT 1/0", "22012")),
            DbFailure::kOther);
  EXPECT_EQ(classify(pqxx::broken_connection("gone")), DbFailure::kOther);
  EXPECT_EQ(classify(std::runtime_error("not a database error")), DbFailure::kOther);
}

TEST(DbErrorsText, ReadsTheConstraintNameFromTheMessage) {
  const std::map<std::string, std::string> cases = {
      {"ERROR:  duplicate key value violates unique constraint \"users_email_key\"\n"
       "DETAIL:  Key (lower(email))=(a@example.com) already exists.\n",
       "users_email_key"},
      {"conflicting key value violates exclusion constraint \"allocations_no_overlap\"",
       "allocations_no_overlap"},
      {"insert or update on table \"c\" violates foreign key constraint \"c_p_fkey\"", "c_p_fkey"},
      {"update or delete on table \"p\" violates foreign key constraint \"c_p_fkey\" on table "
       "\"c\"",
       "c_p_fkey"},
      {"new row for relation \"t\" violates check constraint \"t_x_check\"", "t_x_check"},
      {"value for domain positive violates check constraint \"positive_check\"", "positive_check"},
      // A quoted identifier may itself hold a quote or spaces.
      {"duplicate key value violates unique constraint \"odd \"name\"\"", "odd \"name\""},
      // Not-null violations name a column, not a constraint.
      {"null value in column \"x\" of relation \"t\" violates not-null constraint", ""},
      // A server that speaks another language: no name rather than a wrong one.
      {"повторяющееся значение ключа нарушает ограничение уникальности «users_pkey»", ""},
      {"", ""},
      {"constraint \"", ""},
  };
  for (const auto& [message, name] : cases) {
    EXPECT_EQ(constraint_name_in(message), name) << message;
  }
}

TEST(DbErrorsText, ConstraintViolationFromKeepsRowValuesOutOfItsMessage) {
  pqxx::unique_violation raw(
      "ERROR:  duplicate key value violates unique constraint \"users_email_key\"\n"
      "DETAIL:  Key (lower(email))=(secret@example.com) already exists.\n",
      "INSERT INTO users …", "23505");
  auto v = ConstraintViolation::from(raw);
  ASSERT_TRUE(v);
  EXPECT_EQ(v->kind(), DbFailure::kUniqueViolation);
  EXPECT_EQ(v->sqlstate(), "23505");
  EXPECT_EQ(v->constraint(), "users_email_key");
  EXPECT_STREQ(v->what(), "duplicate key value violates unique constraint \"users_email_key\"");
  // Failures that are not constraint violations have no such form.
  EXPECT_FALSE(ConstraintViolation::from(pqxx::serialization_failure("ERROR:  x\n")));
  EXPECT_FALSE(ConstraintViolation::from(pqxx::sql_error("ERROR:  x\n", "SELECT", "22012")));
  EXPECT_FALSE(ConstraintViolation::from(std::runtime_error("x")));
  // One already typed stays as it is.
  auto again = ConstraintViolation::from(*v);
  ASSERT_TRUE(again);
  EXPECT_EQ(again->constraint(), "users_email_key");
}

}  // namespace db_errors_test
}  // namespace gpurent
