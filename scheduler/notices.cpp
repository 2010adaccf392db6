// Notices: written with their cause, listed per org or per rental.
#include "scheduler/notices.h"

#include "core/id.h"
#include "core/sql.h"

namespace gpurent::scheduler {
namespace {

constexpr Statement kNoticeInsert = {
    "notice_insert",
    "INSERT INTO rental_notices (id, rental_id, org_id, kind, message, effective_at,"
    " maintenance_id, created_at) VALUES ($1, $2, $3, $4, $5, $6::timestamptz, $7,"
    " $8::timestamptz)"};
constexpr Statement kNoticeList = {
    "notice_list",
    "SELECT id, rental_id, org_id, kind, message, " SQL_MICROS("effective_at") ", maintenance_id, "
    SQL_MICROS("created_at") " FROM rental_notices WHERE org_id = $1"
    " AND ($2::text IS NULL OR rental_id = $2) ORDER BY created_at DESC, id DESC LIMIT $3"};

}  // namespace

RentalNotice NoticeStore::add(Tx& tx, const std::string& rental_id, const std::string& org_id,
                              const std::string& kind, const std::string& message,
                              Timestamp effective_at,
                              const std::optional<std::string>& maintenance_id) {
  RentalNotice n{.id = new_id(id_prefix::kNotice),
                 .rental_id = rental_id,
                 .org_id = org_id,
                 .kind = kind,
                 .message = message.substr(0, 1000),
                 .effective_at = effective_at,
                 .maintenance_id = maintenance_id,
                 .created_at = clock_.now()};
  tx.exec(kNoticeInsert, n.id, n.rental_id, n.org_id, n.kind, n.message,
          sql_timestamp(n.effective_at), n.maintenance_id, sql_timestamp(n.created_at));
  for (const auto& hook : on_created_) hook(tx, n);
  return n;
}

std::vector<RentalNotice> NoticeStore::list(Tx& tx, const std::string& org_id,
                                            const std::optional<std::string>& rental_id,
                                            int limit) {
  std::vector<RentalNotice> out;
  for (const auto& row : tx.exec(kNoticeList, org_id, rental_id, limit)) {
    out.push_back({.id = row[0].as<std::string>(),
                   .rental_id = row[1].as<std::string>(),
                   .org_id = row[2].as<std::string>(),
                   .kind = row[3].as<std::string>(),
                   .message = row[4].as<std::string>(),
                   .effective_at = read_timestamp(row[5]),
                   .maintenance_id = optional_field<std::string>(row[6]),
                   .created_at = read_timestamp(row[7])});
  }
  return out;
}

nlohmann::json notice_json(const RentalNotice& n) {
  return {{"id", n.id},
          {"rental_id", n.rental_id},
          {"kind", n.kind},
          {"message", n.message},
          {"effective_at", format_rfc3339(n.effective_at)},
          {"maintenance_id", n.maintenance_id ? nlohmann::json(*n.maintenance_id) : nullptr},
          {"created_at", format_rfc3339(n.created_at)}};
}

}  // namespace gpurent::scheduler
