// SQLSTATE classification and the constraint name read from PostgreSQL's message.
#include "core/db_errors.h"

#include <pqxx/except>

namespace gpurent {
namespace {

// The message's first line without libpq's "ERROR:  " severity prefix: the DETAIL line
// after it quotes the row's values, which have no place in a log line.
std::string primary_line(std::string_view message) {
  std::string_view line = message.substr(0, message.find('\n'));
  for (std::string_view prefix : {"ERROR:  ", "FATAL:  "}) {
    if (line.substr(0, prefix.size()) == prefix) {
      line.remove_prefix(prefix.size());
      break;
    }
  }
  return std::string(line);
}

bool is_constraint_violation(DbFailure failure) {
  switch (failure) {
    case DbFailure::kUniqueViolation:
    case DbFailure::kExclusionViolation:
    case DbFailure::kForeignKeyViolation:
    case DbFailure::kCheckViolation:
    case DbFailure::kNotNullViolation:
      return true;
    case DbFailure::kSerializationFailure:
    case DbFailure::kDeadlock:
    case DbFailure::kOther:
      return false;
  }
  return false;
}

}  // namespace

std::string_view db_failure_name(DbFailure failure) {
  switch (failure) {
    case DbFailure::kUniqueViolation:
      return "unique_violation";
    case DbFailure::kExclusionViolation:
      return "exclusion_violation";
    case DbFailure::kForeignKeyViolation:
      return "foreign_key_violation";
    case DbFailure::kCheckViolation:
      return "check_violation";
    case DbFailure::kNotNullViolation:
      return "not_null_violation";
    case DbFailure::kSerializationFailure:
      return "serialization_failure";
    case DbFailure::kDeadlock:
      return "deadlock";
    case DbFailure::kOther:
      return "other";
  }
  return "other";
}

DbFailure classify_sqlstate(std::string_view sqlstate) {
  if (sqlstate == "23505") return DbFailure::kUniqueViolation;
  if (sqlstate == "23P01") return DbFailure::kExclusionViolation;
  if (sqlstate == "23503") return DbFailure::kForeignKeyViolation;
  if (sqlstate == "23514") return DbFailure::kCheckViolation;
  if (sqlstate == "23502") return DbFailure::kNotNullViolation;
  if (sqlstate == "40001") return DbFailure::kSerializationFailure;
  if (sqlstate == "40P01") return DbFailure::kDeadlock;
  return DbFailure::kOther;
}

DbFailure classify(const std::exception& e) {
  if (dynamic_cast<const pqxx::serialization_failure*>(&e)) return DbFailure::kSerializationFailure;
  if (dynamic_cast<const pqxx::deadlock_detected*>(&e)) return DbFailure::kDeadlock;
  if (auto* sql = dynamic_cast<const pqxx::sql_error*>(&e))
    return classify_sqlstate(sql->sqlstate());
  return DbFailure::kOther;
}

std::optional<std::string> unavailable_reason(std::string_view sqlstate) {
  if (sqlstate == "57014") return "The database did not answer in time.";
  if (sqlstate == "55P03") return "The database could not take a lock in time; try again.";
  if (sqlstate.size() != 5) return std::nullopt;
  std::string_view cls = sqlstate.substr(0, 2);
  if (cls == "08") return "The database connection failed; try again.";
  if (sqlstate == "57P01" || sqlstate == "57P02" || sqlstate == "57P03")
    return "The database is restarting; try again.";
  if (cls == "53") return "The database is out of resources; try again.";
  return std::nullopt;
}

std::string constraint_name_in(std::string_view message) {
  std::string_view line = message.substr(0, message.find('\n'));
  constexpr std::string_view kMarker = "constraint \"";
  auto at = line.find(kMarker);
  if (at == std::string_view::npos) return "";
  std::string_view rest = line.substr(at + kMarker.size());
  // The name runs to its closing quote. A foreign key refused on delete names the
  // referencing table after it (`constraint "c_p_fkey" on table "c"`); otherwise the name
  // closes the line, which keeps a name that itself holds a quote whole.
  auto on_table = rest.find("\" on table \"");
  auto end = on_table != std::string_view::npos ? on_table : rest.rfind('"');
  if (end == std::string_view::npos) return "";
  return std::string(rest.substr(0, end));
}

ConstraintViolation::ConstraintViolation(DbFailure kind, std::string sqlstate,
                                         std::string constraint, std::string message)
    : std::runtime_error(std::move(message)),
      kind_(kind),
      sqlstate_(std::move(sqlstate)),
      constraint_(std::move(constraint)) {}

std::optional<ConstraintViolation> ConstraintViolation::from(const std::exception& e) {
  if (auto* already = dynamic_cast<const ConstraintViolation*>(&e)) return *already;
  auto* sql = dynamic_cast<const pqxx::sql_error*>(&e);
  if (!sql) return std::nullopt;
  DbFailure kind = classify_sqlstate(sql->sqlstate());
  if (!is_constraint_violation(kind)) return std::nullopt;
  return ConstraintViolation(kind, sql->sqlstate(), constraint_name_in(primary_line(e.what())),
                             primary_line(e.what()));
}

}  // namespace gpurent
