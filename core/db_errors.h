// Typed database failures: PostgreSQL's SQLSTATEs as an enum, constraint violations as a
// typed exception, and a savepoint that turns a violation into a value the caller can act on.
#pragma once

#include <pqxx/transaction_base>

#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>

namespace gpurent {

// Why a statement failed, as far as the application cares.
enum class DbFailure {
  kUniqueViolation,       // 23505
  kExclusionViolation,    // 23P01: e.g. two allocations of one GPU over overlapping periods
  kForeignKeyViolation,   // 23503
  kCheckViolation,        // 23514
  kNotNullViolation,      // 23502
  kSerializationFailure,  // 40001
  kDeadlock,              // 40P01
  kOther,
};

// A stable lower-case name ("unique_violation") for logs and tests.
std::string_view db_failure_name(DbFailure failure);

// The kind a SQLSTATE stands for; kOther for any code not listed above.
DbFailure classify_sqlstate(std::string_view sqlstate);

// The kind of a database exception. libpqxx 6 throws serialization failures and deadlocks as
// pqxx::transaction_rollback subclasses that carry no SQLSTATE, and everything else the
// server refuses as pqxx::sql_error; both are covered here. Anything else is kOther.
DbFailure classify(const std::exception& e);

// Why a SQLSTATE means the database could not do the work rather than refused it, in a
// sentence for the caller, or nullopt: a statement timeout or cancel (57014), an operator
// or crash shutdown or a server starting up (57P01-57P03), a connection failure (class
// 08), exhausted resources (class 53: disk full, out of memory, too many connections), a
// lock not granted in time (55P03). Each is worth retrying later: HTTP 503.
std::optional<std::string> unavailable_reason(std::string_view sqlstate);

// The constraint a PostgreSQL message names (`… violates unique constraint "users_pkey"`),
// or "" when it names none (not-null violations name a column) or is not in English.
// libpqxx 6.4 does not expose the server's constraint-name field, so the text is all there is.
std::string constraint_name_in(std::string_view message);

// A statement violated an integrity constraint (the first five kinds of DbFailure). what()
// is the server's one-line message without its DETAIL, so row values stay out of logs.
class ConstraintViolation : public std::runtime_error {
 public:
  ConstraintViolation(DbFailure kind, std::string sqlstate, std::string constraint,
                      std::string message);

  DbFailure kind() const { return kind_; }
  const std::string& sqlstate() const { return sqlstate_; }
  // Empty when the message names no constraint.
  const std::string& constraint() const { return constraint_; }

  // The typed form of `e` when it is an integrity violation reported by PostgreSQL.
  static std::optional<ConstraintViolation> from(const std::exception& e);

 private:
  DbFailure kind_;
  std::string sqlstate_;
  std::string constraint_;
};

// What a statement run under a savepoint came to: its value, or the violation that refused
// it. T is std::monostate for statements that return nothing.
template <typename T>
class [[nodiscard]] Attempt {
 public:
  explicit Attempt(T value) : outcome_(std::in_place_index<0>, std::move(value)) {}
  explicit Attempt(ConstraintViolation violation)
      : outcome_(std::in_place_index<1>, std::move(violation)) {}

  bool ok() const { return outcome_.index() == 0; }
  explicit operator bool() const { return ok(); }
  // Only when ok().
  T& value() { return std::get<0>(outcome_); }
  const T& value() const { return std::get<0>(outcome_); }
  // Only when !ok().
  const ConstraintViolation& violation() const { return std::get<1>(outcome_); }
  DbFailure failure() const { return violation().kind(); }

 private:
  std::variant<T, ConstraintViolation> outcome_;
};

// A SAVEPOINT of the transaction `tx`, set at once: one round trip, where libpqxx 6's
// subtransaction took two (it sets the SAVEPOINT lazily on its first exec(), which prepared
// statements skip, so an empty statement had to follow it). It is never RELEASEd: a savepoint
// kept to the transaction's end changes nothing COMMIT would not do, and the round trip of
// RELEASE bought nothing (PostgreSQL keeps a released savepoint's subtransaction id all the
// same). rollback() returns the transaction to the point, which stays set, so the transaction
// goes on. Names are SQL identifiers; one reused names the latest point of that name. Both
// statements go out as exec_params: libpqxx 6's exec() rolls the whole transaction back when
// its statement fails, which would leave nothing to return to.
class Savepoint {
 public:
  Savepoint(pqxx::transaction_base& tx, const std::string& name)
      : tx_(tx), name_(tx.quote_name(name)) {
    tx_.exec_params("SAVEPOINT " + name_);
  }
  Savepoint(const Savepoint&) = delete;
  Savepoint& operator=(const Savepoint&) = delete;

  void rollback() { tx_.exec_params("ROLLBACK TO SAVEPOINT " + name_); }

 private:
  pqxx::transaction_base& tx_;
  std::string name_;
};

// Runs fn() inside a SAVEPOINT of `tx` named `savepoint`. When fn's statements (run on
// `tx`) violate a constraint, the transaction returns to the savepoint and the violation is
// returned, so `tx` stays usable: the scheduler tries the next candidate node after an
// exclusion violation instead of losing the whole booking. Serialization failures, deadlocks
// and every other error are thrown as they are: they doom the whole transaction, which
// PgPool::transact runs again.
template <typename Fn>
auto try_in_savepoint(pqxx::transaction_base& tx, const std::string& savepoint, Fn&& fn) {
  using R = std::invoke_result_t<Fn&>;
  using V = std::conditional_t<std::is_void_v<R>, std::monostate, R>;
  Savepoint point(tx, savepoint);
  try {
    if constexpr (std::is_void_v<R>) {
      fn();
      return Attempt<V>(std::monostate{});
    } else {
      return Attempt<V>(fn());
    }
  } catch (const std::exception& e) {
    auto violation = ConstraintViolation::from(e);
    if (!violation) throw;
    point.rollback();  // the parent transaction goes on
    return Attempt<V>(std::move(*violation));
  }
}

}  // namespace gpurent
