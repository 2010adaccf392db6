// Notices: written with their cause, listed per org or per rental.
#include "scheduler/notices.h"

#include "core/id.h"
#include "core/pg_array.h"
#include "core/sql.h"

namespace gpurent::scheduler {
namespace {

constexpr Statement kNoticeInsert = {
    "notice_insert",
    "INSERT INTO rental_notices (id, rental_id, org_id, kind, message, effective_at,"
    " maintenance_id, created_at, ends_at, choices, respond_by) VALUES ($1, $2, $3, $4, $5,"
    " $6::timestamptz, $7, $8::timestamptz, $9::timestamptz, $10::text[], $11::timestamptz)"};
#define NOTICE_COLUMNS \
  "id, rental_id, org_id, kind, message, " SQL_MICROS("effective_at") ", maintenance_id, "      \
  SQL_MICROS("created_at") ", " SQL_MICROS("ends_at") ", array_to_string(choices, ','), " SQL_MICROS("respond_by")   \
  ", choice, " SQL_MICROS("chosen_at") ", " SQL_MICROS("applied_at")
constexpr Statement kNoticeList = {
    "notice_list",
    "SELECT " NOTICE_COLUMNS
    " FROM rental_notices WHERE org_id = $1"
    " AND ($2::text IS NULL OR rental_id = $2) ORDER BY created_at DESC, id DESC LIMIT $3"};
constexpr Statement kNoticeLock = {"notice_lock", "SELECT " NOTICE_COLUMNS
                                                  " FROM rental_notices WHERE id = $3"
                                                  " AND org_id = $1 AND rental_id = $2 FOR UPDATE"};
constexpr Statement kNoticeChoose = {
    "notice_choose",
    "UPDATE rental_notices SET choice = $2, chosen_at = $3::timestamptz,"
    " applied_at = $3::timestamptz WHERE id = $1"};
constexpr Statement kNoticeDue = {"notice_due",
                                  "SELECT " NOTICE_COLUMNS
                                  " FROM rental_notices WHERE kind = 'maintenance'"
                                  " AND applied_at IS NULL AND respond_by <= $1::timestamptz"
                                  " ORDER BY respond_by, id LIMIT $2 FOR UPDATE SKIP LOCKED"};
constexpr Statement kNoticeAnyDue = {
    "notice_any_due",
    "SELECT EXISTS (SELECT 1 FROM rental_notices WHERE kind = 'maintenance'"
    " AND applied_at IS NULL AND respond_by <= $1::timestamptz)"};
constexpr Statement kNoticeApplied = {
    "notice_applied", "UPDATE rental_notices SET applied_at = $2::timestamptz WHERE id = $1"};
constexpr Statement kNoticeOfWindow = {
    "notice_of_window",
    "SELECT " NOTICE_COLUMNS
    " FROM rental_notices WHERE maintenance_id = $1"
    " AND applied_at IS NULL AND cardinality(choices) > 0 ORDER BY id FOR UPDATE"};
constexpr Statement kNoticeSettle = {
    "notice_settle",
    "UPDATE rental_notices SET applied_at = $3::timestamptz WHERE rental_id = $1 AND kind = $2"
    " AND applied_at IS NULL"};
#undef NOTICE_COLUMNS

std::optional<Timestamp> optional_time(const pqxx::field& f) {
  if (f.is_null()) return std::nullopt;
  return read_timestamp(f);
}

std::optional<std::string> notice_time_param(const std::optional<Timestamp>& t) {
  if (!t) return std::nullopt;
  return sql_timestamp(*t);
}

// The choices column, selected as array_to_string(choices, ','): words without commas.
std::vector<std::string> notice_choices(const pqxx::field& f) {
  std::vector<std::string> out;
  std::string text = f.is_null() ? "" : f.as<std::string>();
  std::size_t start = 0;
  while (start < text.size()) {
    auto comma = text.find(',', start);
    if (comma == std::string::npos) comma = text.size();
    out.push_back(text.substr(start, comma - start));
    start = comma + 1;
  }
  return out;
}

RentalNotice notice_of(const pqxx::row& row) {
  return {.id = row[0].as<std::string>(),
          .rental_id = row[1].as<std::string>(),
          .org_id = row[2].as<std::string>(),
          .kind = row[3].as<std::string>(),
          .message = row[4].as<std::string>(),
          .effective_at = read_timestamp(row[5]),
          .maintenance_id = optional_field<std::string>(row[6]),
          .created_at = read_timestamp(row[7]),
          .ends_at = optional_time(row[8]),
          .choices = notice_choices(row[9]),
          .respond_by = optional_time(row[10]),
          .choice = optional_field<std::string>(row[11]),
          .chosen_at = optional_time(row[12]),
          .applied_at = optional_time(row[13])};
}

nlohmann::json optional_time_json(const std::optional<Timestamp>& t) {
  return t ? nlohmann::json(format_rfc3339(*t)) : nlohmann::json(nullptr);
}

}  // namespace

RentalNotice NoticeStore::add(Tx& tx, const std::string& rental_id, const std::string& org_id,
                              const std::string& kind, const std::string& message,
                              Timestamp effective_at,
                              const std::optional<std::string>& maintenance_id,
                              const NoticeExtras& extras) {
  RentalNotice n{.id = new_id(id_prefix::kNotice),
                 .rental_id = rental_id,
                 .org_id = org_id,
                 .kind = kind,
                 .message = message.substr(0, 1000),
                 .effective_at = effective_at,
                 .maintenance_id = maintenance_id,
                 .created_at = clock_.now(),
                 .ends_at = extras.ends_at,
                 .choices = extras.choices,
                 .respond_by = extras.respond_by};
  tx.exec(kNoticeInsert, n.id, n.rental_id, n.org_id, n.kind, n.message,
          sql_timestamp(n.effective_at), n.maintenance_id, sql_timestamp(n.created_at),
          notice_time_param(n.ends_at), pg_array_literal(n.choices),
          notice_time_param(n.respond_by));
  for (const auto& hook : on_created_) hook(tx, n);
  return n;
}

std::vector<RentalNotice> NoticeStore::list(Tx& tx, const std::string& org_id,
                                            const std::optional<std::string>& rental_id,
                                            int limit) {
  std::vector<RentalNotice> out;
  for (const auto& row : tx.exec(kNoticeList, org_id, rental_id, limit)) {
    out.push_back(notice_of(row));
  }
  return out;
}

std::optional<RentalNotice> NoticeStore::lock(Tx& tx, const std::string& org_id,
                                              const std::string& rental_id,
                                              const std::string& notice_id) {
  auto rows = tx.exec(kNoticeLock, org_id, rental_id, notice_id);
  if (rows.empty()) return std::nullopt;
  return notice_of(rows[0]);
}

void NoticeStore::record_choice(Tx& tx, const std::string& notice_id, const std::string& choice,
                                Timestamp now) {
  tx.exec(kNoticeChoose, notice_id, choice, sql_timestamp(now));
}

std::vector<RentalNotice> NoticeStore::due_unanswered(Tx& tx, Timestamp now, int limit) {
  std::vector<RentalNotice> out;
  for (const auto& row : tx.exec(kNoticeDue, sql_timestamp(now), limit))
    out.push_back(notice_of(row));
  return out;
}

void NoticeStore::settle_unanswered(Tx& tx, const std::string& rental_id, Timestamp now) {
  tx.exec(kNoticeSettle, rental_id, std::string("maintenance"), sql_timestamp(now));
}

std::vector<RentalNotice> NoticeStore::unanswered_of_window(Tx& tx,
                                                            const std::string& maintenance_id) {
  std::vector<RentalNotice> out;
  for (const auto& row : tx.exec(kNoticeOfWindow, maintenance_id)) out.push_back(notice_of(row));
  return out;
}

bool NoticeStore::any_due_unanswered(Tx& tx, Timestamp now) {
  return tx.exec(kNoticeAnyDue, sql_timestamp(now))[0][0].as<bool>();
}

void NoticeStore::mark_applied(Tx& tx, const std::string& notice_id, Timestamp now) {
  tx.exec(kNoticeApplied, notice_id, sql_timestamp(now));
}

nlohmann::json notice_json(const RentalNotice& n) {
  return {{"id", n.id},
          {"rental_id", n.rental_id},
          {"kind", n.kind},
          {"message", n.message},
          {"effective_at", format_rfc3339(n.effective_at)},
          {"ends_at", optional_time_json(n.ends_at)},
          {"maintenance_id", n.maintenance_id ? nlohmann::json(*n.maintenance_id) : nullptr},
          {"created_at", format_rfc3339(n.created_at)},
          {"choices", n.choices},
          {"respond_by", optional_time_json(n.respond_by)},
          {"choice", n.choice ? nlohmann::json(*n.choice) : nullptr},
          {"chosen_at", optional_time_json(n.chosen_at)},
          {"applied_at", optional_time_json(n.applied_at)}};
}

}  // namespace gpurent::scheduler
