// Notices to tenants (issue "Operations that respect the tenant"): one path for what the
// platform tells a rental's org ahead of, or as, something happens to it — a maintenance
// window moved it to another node, a window or a fault is coming. Each is a row of
// rental_notices written in the transaction of what caused it, and announced to the hooks
// (the rental.notice webhook) in that same transaction.
#pragma once

#include "core/clock.h"
#include "core/db_pool.h"

#include <nlohmann/json.hpp>

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace gpurent::scheduler {

struct RentalNotice {
  std::string id;  // "ntc_…"
  std::string rental_id, org_id;
  std::string kind;  // moved | maintenance | fault
  std::string message;
  Timestamp effective_at;
  std::optional<std::string> maintenance_id;
  Timestamp created_at;
  std::optional<Timestamp> ends_at;  // when what it announces is over (a window's end)
  // A maintenance notice the tenant answers: from other_node, shift, cancel; by respond_by
  // (the window's start), after which the lifecycle applies the default.
  std::vector<std::string> choices;
  std::optional<Timestamp> respond_by;
  std::optional<std::string> choice;
  std::optional<Timestamp> chosen_at;
  std::optional<Timestamp> applied_at;
};

// What a notice may carry beyond its text.
struct NoticeExtras {
  std::optional<Timestamp> ends_at;
  std::vector<std::string> choices;
  std::optional<Timestamp> respond_by;
};

class NoticeStore {
 public:
  explicit NoticeStore(const Clock& clock) : clock_(clock) {}

  using CreatedHook = std::function<void(Tx&, const RentalNotice&)>;
  void on_created(CreatedHook hook) { on_created_.push_back(std::move(hook)); }

  RentalNotice add(Tx& tx, const std::string& rental_id, const std::string& org_id,
                   const std::string& kind, const std::string& message, Timestamp effective_at,
                   const std::optional<std::string>& maintenance_id = std::nullopt,
                   const NoticeExtras& extras = {});

  // The org's notice of the rental, locked; nullopt for another org's or an unknown one.
  std::optional<RentalNotice> lock(Tx& tx, const std::string& org_id, const std::string& rental_id,
                                   const std::string& notice_id);
  // Records the tenant's answer, applied at once (`choice` one of the notice's choices).
  void record_choice(Tx& tx, const std::string& notice_id, const std::string& choice,
                     Timestamp now);
  // Maintenance notices unanswered by their respond_by, up to `now`, oldest first, locked
  // (rows another transaction holds skipped).
  std::vector<RentalNotice> due_unanswered(Tx& tx, Timestamp now, int limit);
  // Whether any is due: one indexed read, so an idle fleet's runs open no transaction.
  bool any_due_unanswered(Tx& tx, Timestamp now);
  void mark_applied(Tx& tx, const std::string& notice_id, Timestamp now);
  // The window's notices still unanswered, locked.
  std::vector<RentalNotice> unanswered_of_window(Tx& tx, const std::string& maintenance_id);
  // The rental left the node its maintenance notices were about (a swap): those still
  // unanswered are settled, so no default is applied to it at the window's start.
  void settle_unanswered(Tx& tx, const std::string& rental_id, Timestamp now);

  // The org's notices, newest first, at most `limit`; of one rental when `rental_id` is set
  // (nothing for another org's rental: tenants cannot tell them apart).
  std::vector<RentalNotice> list(Tx& tx, const std::string& org_id,
                                 const std::optional<std::string>& rental_id, int limit);

 private:
  const Clock& clock_;
  std::vector<CreatedHook> on_created_;
};

// {id, rental_id, kind, message, effective_at, ends_at, maintenance_id, created_at, choices,
//  respond_by, choice, chosen_at, applied_at}
nlohmann::json notice_json(const RentalNotice& n);

}  // namespace gpurent::scheduler
