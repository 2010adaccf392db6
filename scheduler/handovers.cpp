// Handovers of running rentals: one row each, opened when it begins and closed with its end.
#include "scheduler/handovers.h"

#include "core/id.h"
#include "core/sql.h"

#include <array>

namespace gpurent::scheduler {
namespace {

constexpr std::array<std::string_view, 4> kCauseNames{"fault", "maintenance", "reboot", "power"};

#define HANDOVER_COLUMNS                                                               \
  "id, rental_id, cause, reason, from_node_id, to_node_id, attempt_base, " SQL_MICROS( \
      "started_at") ", " SQL_MICROS("ended_at") ", outcome, credited_minor"
constexpr Statement kHandoverInsert = {
    "handover_insert",
    "INSERT INTO rental_handovers (id, rental_id, cause, reason, from_node_id, to_node_id,"
    " attempt_base, started_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8::timestamptz)"};
constexpr Statement kHandoverCurrent = {"handover_current",
                                        "SELECT " HANDOVER_COLUMNS
                                        " FROM rental_handovers WHERE rental_id = $1"
                                        " AND ended_at IS NULL"};
constexpr Statement kHandoverClose = {
    "handover_close",
    "UPDATE rental_handovers SET ended_at = $2::timestamptz, outcome = $3"
    " WHERE id = $1 AND ended_at IS NULL"};
constexpr Statement kHandoverCredited = {
    "handover_credited", "UPDATE rental_handovers SET credited_minor = $2 WHERE id = $1"};
constexpr Statement kHandoverOfRental = {"handover_of_rental",
                                         "SELECT " HANDOVER_COLUMNS
                                         " FROM rental_handovers WHERE rental_id = $1"
                                         " ORDER BY started_at, id"};
#undef HANDOVER_COLUMNS

Handover handover_of(const pqxx::row& row) {
  return {.id = row[0].as<std::string>(),
          .rental_id = row[1].as<std::string>(),
          .cause = parse_handover_cause(row[2].as<std::string>()).value_or(HandoverCause::kFault),
          .reason = row[3].as<std::string>(),
          .from_node_id = row[4].as<std::string>(),
          .to_node_id = row[5].as<std::string>(),
          .attempt_base = row[6].as<int>(),
          .started_at = read_timestamp(row[7]),
          .ended_at =
              row[8].is_null() ? std::nullopt : std::optional<Timestamp>(read_timestamp(row[8])),
          .outcome = optional_field<std::string>(row[9]),
          .credited_minor = optional_field<long long>(row[10])};
}

}  // namespace

std::string_view to_string(HandoverCause cause) {
  return kCauseNames[static_cast<std::size_t>(cause)];
}

std::optional<HandoverCause> parse_handover_cause(std::string_view text) {
  for (std::size_t i = 0; i < kCauseNames.size(); ++i) {
    if (kCauseNames[i] == text) return static_cast<HandoverCause>(i);
  }
  return std::nullopt;
}

Handover HandoverStore::open(Tx& tx, const std::string& rental_id, HandoverCause cause,
                             const std::string& reason, const std::string& from_node,
                             const std::string& to_node, int attempt_base, Timestamp now) {
  Handover h{.id = new_id(id_prefix::kHandover),
             .rental_id = rental_id,
             .cause = cause,
             .reason = reason.substr(0, 1000),
             .from_node_id = from_node,
             .to_node_id = to_node,
             .attempt_base = attempt_base,
             .started_at = now};
  tx.exec(kHandoverInsert, h.id, h.rental_id, std::string(to_string(cause)), h.reason,
          h.from_node_id, h.to_node_id, h.attempt_base, sql_timestamp(now));
  return h;
}

std::optional<Handover> HandoverStore::current(Tx& tx, const std::string& rental_id) {
  auto rows = tx.exec(kHandoverCurrent, rental_id);
  if (rows.empty()) return std::nullopt;
  return handover_of(rows[0]);
}

void HandoverStore::close(Tx& tx, const std::string& id, Timestamp now,
                          const std::string& outcome) {
  tx.exec(kHandoverClose, id, sql_timestamp(now), outcome);
}

void HandoverStore::set_credited(Tx& tx, const std::string& id, long long credited_minor) {
  tx.exec(kHandoverCredited, id, credited_minor);
}

std::vector<Handover> HandoverStore::of_rental(Tx& tx, const std::string& rental_id) {
  std::vector<Handover> out;
  for (const auto& row : tx.exec(kHandoverOfRental, rental_id)) out.push_back(handover_of(row));
  return out;
}

nlohmann::json handover_json(const Handover& h) {
  return {{"id", h.id},
          {"cause", std::string(to_string(h.cause))},
          {"reason", h.reason},
          {"from_node_id", h.from_node_id},
          {"to_node_id", h.to_node_id},
          {"started_at", format_rfc3339(h.started_at)},
          {"ended_at", h.ended_at ? nlohmann::json(format_rfc3339(*h.ended_at)) : nullptr},
          {"outcome", h.outcome ? nlohmann::json(*h.outcome) : nullptr},
          {"credited_minor", h.credited_minor ? nlohmann::json(*h.credited_minor) : nullptr}};
}

}  // namespace gpurent::scheduler
