// Booking: checks, placement, and allocation under savepoints until one choice holds.
#include "scheduler/booking.h"

#include "core/error.h"
#include "core/limits.h"
#include "core/sql.h"
#include "core/time.h"
#include "inventory/image_compat.h"
#include "scheduler/lifecycle_rules.h"
#include "scheduler/site_midnight.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <string_view>

namespace gpurent::scheduler {
namespace {

using std::chrono::hours;

// Midnight of a date in the time zone of each site that has a node of one model: a row per
// site, not per node, so that the statement's cost does not grow with the fleet.
constexpr Statement kSiteMidnights = {
    "booking_site_midnights",
    "SELECT s.id, "
    SQL_MICROS(GPURENT_SQL_SITE_MIDNIGHT("$2::date", "s.timezone"))
    " FROM sites s WHERE EXISTS (SELECT 1 FROM nodes n"
    " WHERE n.site_id = s.id AND n.gpu_model = $1)"};

constexpr Statement kUtcMidnight = {
    "booking_utc_midnight", "SELECT " SQL_MICROS(GPURENT_SQL_SITE_MIDNIGHT("$1::date", "'UTC'"))};

// A start this little in the past is taken as now: a client's clock, or the request's own
// time on the wire, is not worth a refusal.
constexpr auto kStartTolerance = std::chrono::minutes(5);

Timestamp plus_days(Timestamp t, int days) {
  return t + hours(24) * days;
}

// One start instant and the candidates that would start then (one group per site time zone
// for a date, one group otherwise). The candidates point into `all`, the list they were
// chosen from, which the group keeps alive.
struct StartGroup {
  Timestamp start;
  std::vector<const NodeCandidate*> candidates;
  CapacityIndex::Candidates all;
};

}  // namespace

// One GPU model the request may take: its price for the GPU count, and the start instants
// the request means on its nodes, each with the ids of the sites where it is that instant (for
// a date: its midnight there), earliest first; for now or an instant, one entry and no ids
// (every node).
struct Booking::Option {
  inventory::GpuModelRecord model;
  Money price_per_day{0, "XXX"};  // discounted for the request's days
  Money list_price_per_day{0, "XXX"};
  int discount_percent = 0;
  long long price_id = 0;
  std::vector<std::pair<Timestamp, std::vector<std::string>>> starts;
};

struct Booking::Checked {
  Timestamp now;
  Guardrails org;  // the org's limits as they stand in this transaction
  inventory::ImageRecord image;
  std::vector<Option> options;  // in the order a booking tries them; never empty
};

namespace {

// The start instants a request's start means on the nodes of one model.
std::vector<std::pair<Timestamp, std::vector<std::string>>> starts_for(Tx& tx,
                                                                       const std::string& model,
                                                                       const Start& requested,
                                                                       Timestamp now,
                                                                       Timestamp latest_start) {
  // The allowed range in the refusal's details: a CI that plans ahead reads it there.
  auto too_far_ahead = [&](std::string_view reason) {
    return Error(ErrorCode::kInvalidRequest, "Field 'start' " + std::string(reason) + ".",
                 {{"field", "start"},
                  {"reason", reason},
                  {"earliest_start", format_rfc3339(now)},
                  {"latest_start", format_rfc3339(latest_start)},
                  {"booking_horizon_days", (latest_start - now) / hours(24)}});
  };
  std::vector<std::pair<Timestamp, std::vector<std::string>>> starts;
  if (std::holds_alternative<StartNow>(requested)) {
    starts.push_back({now, {}});
    return starts;
  }
  if (const auto* at = std::get_if<Timestamp>(&requested)) {
    if (*at < now - kStartTolerance) throw Error::invalid_field("start", "is in the past");
    if (*at > latest_start) throw too_far_ahead("is further ahead than bookings are taken");
    starts.push_back({std::max(*at, now), {}});
    return starts;
  }
  const auto& date = std::get<StartDate>(requested).date;
  if (!parse_civil_date(date))
    throw Error::invalid_field("start", "must be now, an RFC 3339 time or a date");
  std::map<Timestamp, std::vector<std::string>> by_start;
  pqxx::result rows;
  try {
    rows = tx.exec(kSiteMidnights, model, date);
  } catch (const pqxx::data_exception&) {
    throw Error::invalid_field("start", "is not a calendar date");
  }
  for (const auto& row : rows) {
    by_start[read_timestamp(row[1])].push_back(row[0].as<std::string>());
  }
  for (auto& [start, nodes] : by_start) {
    // A midnight that has passed at the node's site is refused rather than moved: the
    // customer asked for that day and would pay for hours already gone.
    if (start < now - kStartTolerance || start > latest_start) continue;
    starts.emplace_back(start, std::move(nodes));
  }
  if (starts.empty()) {
    if (!by_start.empty()) {
      throw too_far_ahead("is in the past or too far ahead at every site");
    }
    // No node of the model anywhere: the date still names a period, in UTC, for a request
    // that waits.
    auto utc = tx.exec(kUtcMidnight, date);
    Timestamp start = read_timestamp(utc[0][0]);
    if (start < now - kStartTolerance) throw Error::invalid_field("start", "is in the past");
    starts.push_back({start, {}});
  }
  return starts;
}

}  // namespace

std::optional<Booking::Option> Booking::option_for(Tx& tx, const inventory::GpuModelRecord& model,
                                                   const BookingRequest& r, Timestamp now) {
  auto price = catalog_.price_at(tx, model.name, r.gpu_count, now);
  if (!price) return std::nullopt;
  billing::DailyPrice daily{price->amount_minor, 0, price->amount_minor};
  if (charges_) daily = charges_->daily_price(price->amount_minor, r.days);
  return Option{.model = model,
                .price_per_day = Money(daily.price_minor, price->currency),
                .list_price_per_day = Money(price->amount_minor, price->currency),
                .discount_percent = daily.discount_percent,
                .price_id = price->id,
                .starts = starts_for(tx, model.name, r.start, now, now + options_.horizon)};
}

std::vector<Booking::Option> Booking::options_for(Tx& tx, const BookingRequest& r,
                                                  const inventory::ImageRecord& image,
                                                  Timestamp now) {
  if (!r.gpu_model.empty()) {
    auto model = catalog_.gpu_model(tx, r.gpu_model);
    if (!model) throw Error::invalid_field("gpu_model", "is not a GPU model of the catalog");
    if (auto verdict = inventory::image_runs_on(image, *model); !verdict) {
      throw Error(ErrorCode::kIncompatibleImage,
                  "The image " + image.name + " does not run on " + model->name + ".",
                  {{"reason", verdict.reason}});
    }
    auto option = option_for(tx, *model, r, now);
    if (!option) {
      throw Error::invalid_field("gpu_count", "is not offered for this GPU model: it has no price");
    }
    return {std::move(*option)};
  }
  // Constraints: each stage's refusal names what ruled the last models out.
  std::vector<inventory::GpuModelRecord> meeting;
  for (auto& m : catalog_.gpu_models(tx)) {
    if (meets(m, r.constraints)) meeting.push_back(std::move(m));
  }
  if (meeting.empty()) {
    throw Error::invalid_field("constraints", "no GPU model of the catalog meets them");
  }
  std::erase_if(meeting, [&](const auto& m) { return !inventory::image_runs_on(image, m); });
  if (meeting.empty()) {
    throw Error(ErrorCode::kIncompatibleImage,
                "The image " + image.name +
                    " runs on none of the GPU models that meet the "
                    "constraints.",
                {{"reason", "driver or CUDA version"}});
  }
  std::vector<PricedModel> priced;
  for (auto& m : meeting) {
    if (auto price = catalog_.price_at(tx, m.name, r.gpu_count, now)) {
      priced.push_back({std::move(m), price->amount_minor});
    }
  }
  if (priced.empty()) {
    throw Error::invalid_field("gpu_count",
                               "is not offered for any GPU model that meets the constraints");
  }
  std::vector<Option> options;
  for (const auto& p : models_meeting(r.constraints, std::move(priced))) {
    if (auto option = option_for(tx, p.model, r, now)) options.push_back(std::move(*option));
  }
  return options;
}

Booking::Checked Booking::check(Tx& tx, const BookingRequest& r) {
  Checked c;
  c.now = clock_.now();
  if (r.gpu_count < 1 || r.gpu_count > limits::kMaxRentalGpus) {
    throw Error::out_of_range("gpu_count", 1, limits::kMaxRentalGpus);
  }
  if (r.days < limits::kMinRentalDays || r.days > limits::kMaxRentalDays) {
    throw Error::out_of_range("days", limits::kMinRentalDays, limits::kMaxRentalDays);
  }
  c.org = orgs_.guardrails_of(tx, r.org_id);
  if (auto limit = stricter(c.org.max_days, r.token_limits.max_days); limit && r.days > *limit) {
    throw Error(ErrorCode::kQuotaExceeded,
                "A rental may last at most " + std::to_string(*limit) + " days here.",
                {{"limit", "max_days"}, {"max_days", *limit}, {"requested", r.days}});
  }
  auto image = catalog_.image(tx, r.image_id);
  if (!image || image->status != "active") {
    throw Error::invalid_field("image_id", "is not an active image of the catalog");
  }
  c.image = *image;
  c.options = options_for(tx, r, c.image, c.now);
  if (auto limit = stricter(c.org.max_concurrent_gpus, r.token_limits.max_concurrent_gpus)) {
    int held = rentals_.active_gpu_count(tx, r.org_id);
    if (held + r.gpu_count > *limit) {
      throw Error(ErrorCode::kQuotaExceeded,
                  "This would hold " + std::to_string(held + r.gpu_count) +
                      " GPUs at once; the limit here is " + std::to_string(*limit) + ".",
                  {{"limit", "max_concurrent_gpus"},
                   {"max_concurrent_gpus", *limit},
                   {"in_use", held},
                   {"requested", r.gpu_count}});
    }
  }
  return c;
}

namespace {

// The candidates of each start group, from one list read over the window every group spans.
Period window_of(const std::vector<std::pair<Timestamp, std::vector<std::string>>>& starts,
                 Timestamp window_end) {
  Period window{starts.front().first, window_end};
  for (const auto& s : starts) window.start = std::min(window.start, s.first);
  return window;
}

std::vector<StartGroup> group_by_start(
    const CapacityIndex::Candidates& all,
    const std::vector<std::pair<Timestamp, std::vector<std::string>>>& starts) {
  std::vector<StartGroup> groups;
  for (const auto& [start, sites] : starts) {
    StartGroup g{start, {}, all};
    g.candidates.reserve(all->size());
    for (const auto& c : *all) {
      if (sites.empty() || std::find(sites.begin(), sites.end(), c->site_id) != sites.end()) {
        g.candidates.push_back(c.get());
      }
    }
    groups.push_back(std::move(g));
  }
  return groups;
}

struct Choice {
  Placement placement;
  Period period;    // the rental's own
  Period occupies;  // with the cleaning window
};

// Every group's choices, earliest start first, each group in placement's order.
std::vector<Choice> choices_for(const std::vector<StartGroup>& groups, const std::string& model,
                                int count, LinkNeed need, int days, std::chrono::seconds cleaning,
                                int max_choices) {
  std::vector<Choice> out;
  for (const auto& g : groups) {
    Period period{g.start, plus_days(g.start, days)};
    Period occupies{period.start, period.end + cleaning};
    PlacementRequest req{
        .gpu_model = model, .gpu_count = count, .link_need = need, .occupies = occupies};
    for (auto& p : place_held(req, g.candidates, {.max_choices = max_choices})) {
      out.push_back({std::move(p), period, occupies});
      if (static_cast<int>(out.size()) == max_choices) return out;
    }
  }
  return out;
}

}  // namespace

RentalRecord Booking::book(Tx& tx, const BookingRequest& r) {
  Checked c = check(tx, r);
  LinkNeed need = r.gpu_count > 1 ? r.link_need : LinkNeed::kAny;
  auto rental_of = [&](const Option& option, RentalState state) {
    return NewRental{
        .org_id = r.org_id,
        .created_by = r.actor.user_id.value_or(""),
        .created_by_token = r.actor.token_id,
        .name = r.name.empty() ? std::to_string(r.gpu_count) + "x " + option.model.name : r.name,
        .state = state,
        .gpu_model = option.model.name,
        .gpu_count = r.gpu_count,
        .link_need = r.link_need,
        .days = r.days,
        .image_id = r.image_id,
        .ssh_key_ids = r.ssh_key_ids,
        .price_per_day = option.price_per_day,
        .price_id = option.price_id,
        .wait_for_capacity = r.wait_for_capacity};
  };
  // Each round reads the candidates afresh (the copy reloads the nodes announced or refused
  // since), so it sees what concurrent bookings committed while the last one tried its
  // choices, and what the bookings in flight here chose. Every choice refused for an overlap
  // is a booking someone else made, so the rounds end: when every model's choices run out
  // (the fleet is full) or after max_attempts refusals in all.
  int attempts = 0;
  for (const auto& option : c.options) {
    NewRental rental = rental_of(option, RentalState::kScheduled);
    Timestamp window_end = plus_days(option.starts.back().first, r.days) + options_.cleaning_window;
    while (attempts < options_.max_attempts) {
      auto groups =
          group_by_start(candidates_of(tx, option.model.name, window_of(option.starts, window_end)),
                         option.starts);
      auto now = InFlightClaims::Clock::now();
      std::vector<std::shared_ptr<const NodeCandidate>> claimed;
      for (auto& g : groups) {
        for (auto& copy : claims_.apply(g.candidates, now)) claimed.push_back(std::move(copy));
      }
      auto choices = choices_for(groups, option.model.name, r.gpu_count, need, r.days,
                                 options_.cleaning_window, options_.max_attempts - attempts);
      if (choices.empty()) break;
      for (const auto& choice : choices) {
        ++attempts;
        rental.node_id = choice.placement.node_id;
        rental.gpu_indices = choice.placement.gpu_indices;
        rental.period = choice.period;
        // Kept until the transaction ends, however it ends: committed, the allocation is in
        // the copy by then (the booking announces its node first); rolled back, the GPUs are
        // free. Given up at once when refused.
        auto claim = claims_.claim(choice.placement, choice.occupies, now).id;
        tx.at_end([this, claim] { claims_.release(claim); });
        auto attempt = tx.attempt("booking_choice", [&](Tx& sub) {
          return rentals_.create_placed(sub, rental, choice.occupies);
        });
        if (attempt && attempt.value()) {
          hold_for(tx, *attempt.value(), r, c.org);
          return *attempt.value();
        }
        claims_.release(claim);
        // A node that left service or a GPU that failed since the copy saw it, or a booking
        // taken meanwhile: the copy missed it (its announcement is on its way) and the next
        // round reloads the node. Anything else is a bug or a changed fleet and ends the
        // booking.
        if (!attempt && attempt.failure() != DbFailure::kExclusionViolation) {
          throw attempt.violation();
        }
        capacity_.node_changed(choice.placement.node_id);
      }
    }
  }
  if (r.wait_for_capacity) {
    // It waits for one model: the one that could start soonest as the calendar stands, the
    // first tried when none can within the horizon.
    const Option* waits_for = &c.options.front();
    if (c.options.size() > 1) {
      std::optional<Timestamp> soonest;
      for (const auto& option : c.options) {
        auto e = earliest_start(tx, option, r.gpu_count, need, r.days, 1);
        if (e && (!soonest || *e < *soonest)) soonest = e, waits_for = &option;
      }
    }
    NewRental rental = rental_of(*waits_for, RentalState::kPending);
    Timestamp start = waits_for->starts.front().first;
    rental.period = Period{start, plus_days(start, r.days)};
    rental.pending_expires_at = c.now + options_.pending_for;
    rental.reason = "waiting for capacity";
    // A waiting request holds its money too: when capacity appears it is placed without
    // asking the customer again, so the money must be there.
    RentalRecord record = rentals_.create(tx, rental);
    hold_for(tx, record, r, c.org);
    return record;
  }
  throw InsufficientCapacity(no_capacity(tx, r, c));
}

std::optional<Timestamp> Booking::earliest_start(Tx& tx, const Option& option, int gpu_count,
                                                 LinkNeed need, int days, int first_day) {
  // One load over the whole horizon; every later start is tried in memory, a day apart.
  Timestamp window_end =
      plus_days(option.starts.back().first + options_.horizon, days) + options_.cleaning_window;
  auto groups = group_by_start(
      candidates_of(tx, option.model.name, window_of(option.starts, window_end)), option.starts);
  int horizon_days = static_cast<int>(options_.horizon / hours(24));
  for (int day = first_day; day <= horizon_days; ++day) {
    auto shifted = groups;
    for (auto& g : shifted) g.start = plus_days(g.start, day);
    auto choices =
        choices_for(shifted, option.model.name, gpu_count, need, days, options_.cleaning_window, 1);
    if (!choices.empty()) return choices.front().period.start;
  }
  return std::nullopt;
}

NoCapacity Booking::no_capacity(Tx& tx, const BookingRequest& r, const Checked& c) {
  NoCapacity out;
  LinkNeed need = r.gpu_count > 1 ? r.link_need : LinkNeed::kAny;
  auto add = [&](Alternative a) {
    if (out.alternatives.size() < kMaxAlternatives) out.alternatives.push_back(std::move(a));
  };
  // The requested shape later: the soonest start of any model the request may take.
  std::string soonest_model;
  for (const auto& option : c.options) {
    auto e = earliest_start(tx, option, r.gpu_count, need, r.days, 1);
    if (e && (!out.earliest_start || *e < *out.earliest_start)) {
      out.earliest_start = e;
      soonest_model = option.model.name;
    }
  }
  if (out.earliest_start) add({soonest_model, r.gpu_count, *out.earliest_start});
  // Other sizes of the same models that fit at the requested start and are on sale.
  auto fits_now = [&](const Option& option, int count) -> std::optional<Timestamp> {
    Timestamp window_end = plus_days(option.starts.back().first, r.days) + options_.cleaning_window;
    auto groups = group_by_start(
        candidates_of(tx, option.model.name, window_of(option.starts, window_end)), option.starts);
    auto choices =
        choices_for(groups, option.model.name, count, count > 1 ? r.link_need : LinkNeed::kAny,
                    r.days, options_.cleaning_window, 1);
    if (choices.empty()) return std::nullopt;
    return choices.front().period.start;
  };
  for (const auto& option : c.options) {
    for (int count : {1, 2, 4, 8}) {
      if (count == r.gpu_count) continue;
      if (!catalog_.price_at(tx, option.model.name, count, c.now)) continue;
      if (auto start = fits_now(option, count)) add({option.model.name, count, *start});
    }
  }
  // Other models with the requested count, for a request that named its model (a request
  // by constraints has tried every model it accepts): those the image runs on, on sale, that
  // fit at the requested start.
  if (!r.gpu_model.empty()) {
    for (const auto& model : catalog_.gpu_models(tx)) {
      if (model.name == r.gpu_model || !inventory::image_runs_on(c.image, model)) continue;
      std::optional<Option> option;
      try {
        option = option_for(tx, model, r, c.now);
      } catch (const Error&) {
        continue;  // the requested date is past at every site of that model
      }
      if (!option) continue;
      if (auto start = fits_now(*option, r.gpu_count)) add({model.name, r.gpu_count, *start});
    }
  }
  return out;
}

CapacityIndex::Candidates Booking::candidates_of(Tx& tx, const std::string& model,
                                                 const Period& window, bool from_copy) {
  if (from_copy) return capacity_.candidates(tx, model, window);
  candidates_.keep_statistics(tx);
  auto loaded = candidates_.load(tx, model, window);
  std::vector<CapacityIndex::Node> nodes;
  nodes.reserve(loaded.size());
  for (auto& c : loaded) nodes.push_back(std::make_shared<const NodeCandidate>(std::move(c)));
  return std::make_shared<const CandidateList>(std::move(nodes));
}

void Booking::hold_for(Tx& tx, const RentalRecord& rental, const BookingRequest& r,
                       const Guardrails& org) {
  if (!charges_) return;
  charges_->hold(tx,
                 {.rental_id = rental.id,
                  .org_id = rental.org_id,
                  .token_id = r.actor.token_id,
                  .actor_user_id = r.actor.user_id,
                  .description = rental.name,
                  .day_price_minor = rental.price_per_day.amount_minor(),
                  .days = rental.days},
                 {.org_monthly_minor = org.spend_limit_minor,
                  .token_monthly_minor = r.token_limits.spend_limit_minor});
}

bool Booking::within_limits(Tx& tx, const RentalRecord& r) {
  auto limit = orgs_.guardrails_of(tx, r.org_id).max_concurrent_gpus;
  return !limit || rentals_.active_gpu_count(tx, r.org_id) + r.gpu_count <= *limit;
}

namespace {
bool excluded(const std::vector<std::string>& nodes, const NodeCandidate* c) {
  return std::find(nodes.begin(), nodes.end(), c->node_id) != nodes.end();
}
}  // namespace

bool Booking::place_pending(Tx& tx, const RentalRecord& r,
                            const std::vector<std::string>& exclude_nodes) {
  LinkNeed need = r.gpu_count > 1 ? r.link_need : LinkNeed::kAny;
  Timestamp start = std::max(r.period.start, clock_.now());
  std::vector<std::pair<Timestamp, std::vector<std::string>>> starts{{start, {}}};
  Timestamp window_end = plus_days(start, r.days) + options_.cleaning_window;
  // The same bounded rounds as book(): a choice refused for an overlap is a booking made
  // meanwhile, so the next round loads the candidates afresh.
  int attempts = 0;
  while (attempts < options_.max_attempts) {
    auto groups = group_by_start(
        candidates_of(tx, r.gpu_model, window_of(starts, window_end), /*from_copy=*/false), starts);
    for (auto& g : groups) {
      std::erase_if(g.candidates,
                    [&](const NodeCandidate* c) { return excluded(exclude_nodes, c); });
    }
    auto choices = choices_for(groups, r.gpu_model, r.gpu_count, need, r.days,
                               options_.cleaning_window, options_.max_attempts - attempts);
    if (choices.empty()) return false;
    for (const auto& choice : choices) {
      ++attempts;
      auto attempt = tx.attempt("pending_choice", [&](Tx& sub) {
        rentals_.allocate(sub, r.id, choice.placement.node_id, choice.placement.gpu_indices,
                          choice.occupies);
        rentals_.set_placement(sub, r.id, choice.placement.node_id, choice.placement.gpu_indices,
                               choice.period);
        return true;
      });
      if (attempt) return true;
      if (attempt.failure() != DbFailure::kExclusionViolation) throw attempt.violation();
    }
  }
  return false;
}

bool Booking::place_rest(Tx& tx, const RentalRecord& r, Timestamp from,
                         const std::vector<std::string>& exclude_nodes) {
  LinkNeed need = r.gpu_count > 1 ? r.link_need : LinkNeed::kAny;
  Period occupies{from, r.period.end + options_.cleaning_window};
  PlacementRequest req{
      .gpu_model = r.gpu_model, .gpu_count = r.gpu_count, .link_need = need, .occupies = occupies};
  int attempts = 0;
  while (attempts < options_.max_attempts) {
    auto all = candidates_of(tx, r.gpu_model, occupies, /*from_copy=*/false);
    std::vector<const NodeCandidate*> candidates;
    candidates.reserve(all->size());
    for (const auto& c : *all) {
      if (!excluded(exclude_nodes, c.get())) candidates.push_back(c.get());
    }
    auto choices = place_held(req, candidates, {.max_choices = options_.max_attempts - attempts});
    if (choices.empty()) return false;
    for (const auto& choice : choices) {
      ++attempts;
      auto attempt = tx.attempt("rest_choice", [&](Tx& sub) {
        rentals_.allocate(sub, r.id, choice.node_id, choice.gpu_indices, occupies);
        rentals_.set_placement(sub, r.id, choice.node_id, choice.gpu_indices);
        return true;
      });
      if (attempt) return true;
      if (attempt.failure() != DbFailure::kExclusionViolation) throw attempt.violation();
    }
  }
  return false;
}

Quote Booking::quote(Tx& tx, const BookingRequest& r, NoCapacity* when_unavailable) {
  Checked c = check(tx, r);
  LinkNeed need = r.gpu_count > 1 ? r.link_need : LinkNeed::kAny;
  Quote q;
  auto priced_as = [&](const Option& option) {
    q.gpu_model = option.model.name;
    q.price_per_day = option.price_per_day;
    q.list_price_per_day = option.list_price_per_day;
    q.discount_percent = option.discount_percent;
    q.total = option.price_per_day.times(r.days);
  };
  for (const auto& option : c.options) {
    Timestamp window_end = plus_days(option.starts.back().first, r.days) + options_.cleaning_window;
    auto groups = group_by_start(
        candidates_of(tx, option.model.name, window_of(option.starts, window_end)), option.starts);
    auto choices = choices_for(groups, option.model.name, r.gpu_count, need, r.days,
                               options_.cleaning_window, 1);
    if (choices.empty()) continue;
    priced_as(option);
    q.available = true;
    q.preview = choices.front().placement;
    q.period = choices.front().period;
    q.earliest_start = choices.front().period.start;
    return q;
  }
  const Option& first = c.options.front();
  priced_as(first);
  q.period = Period{first.starts.front().first, plus_days(first.starts.front().first, r.days)};
  NoCapacity none = no_capacity(tx, r, c);
  q.earliest_start = none.earliest_start;
  if (when_unavailable) *when_unavailable = std::move(none);
  return q;
}

RentalRecord Booking::extend(Tx& tx, const RentalRecord& r, int more_days,
                             const Guardrails& token_limits,
                             const std::optional<std::string>& actor_user_id) {
  if (!allows(r.state, RentalAction::kExtend)) {
    throw Error(ErrorCode::kInvalidState,
                "A rental that is " + std::string(to_string(r.state)) + " cannot be extended.",
                {{"state", to_string(r.state)}});
  }
  int days = r.days + more_days;
  if (days > limits::kMaxRentalDays) {
    throw Error(ErrorCode::kInvalidRequest,
                "Field 'days' would make it longer than " + std::to_string(limits::kMaxRentalDays) +
                    " days.",
                {{"field", "days"},
                 {"reason", "would make the rental longer than the maximum"},
                 {"minimum", 1},
                 {"maximum", limits::kMaxRentalDays - r.days}});
  }
  Guardrails org = orgs_.guardrails_of(tx, r.org_id);
  if (auto max_days = stricter(org.max_days, token_limits.max_days); max_days && days > *max_days) {
    throw Error(ErrorCode::kQuotaExceeded,
                "A rental may last at most " + std::to_string(*max_days) + " days here.",
                {{"limit", "max_days"}, {"max_days", *max_days}, {"requested", days}});
  }
  // The same GPUs must be free after the current end: another booking of them is an
  // exclusion violation, which only rolls back the savepoint.
  auto attempt = tx.attempt("rental_extend", [&](Tx& sub) {
    return rentals_.extend_allocations(sub, r.id, plus_days(r.period.start, days), days,
                                       options_.cleaning_window);
  });
  if (!attempt) {
    if (attempt.failure() != DbFailure::kExclusionViolation) throw attempt.violation();
    throw InsufficientCapacity(
        {}, "The rental's GPUs are booked after it; it cannot be extended by that much.");
  }
  if (charges_) {
    charges_->extend(tx, r.id, more_days,
                     {.org_monthly_minor = org.spend_limit_minor,
                      .token_monthly_minor = token_limits.spend_limit_minor},
                     actor_user_id);
  }
  return *rentals_.get_any(tx, r.id);
}

WaitlistStanding Booking::standing(Tx& tx, const RentalRecord& rental) {
  WaitlistStanding out;
  if (rental.state != RentalState::kPending) return out;
  out.position = waitlist_position(round_robin_by_org(rentals_.waiting(tx)), rental);
  auto model = catalog_.gpu_model(tx, rental.gpu_model);
  if (!model) return out;
  Option option{.model = *model, .starts = {{std::max(rental.period.start, clock_.now()), {}}}};
  out.estimated_start =
      earliest_start(tx, option, rental.gpu_count,
                     rental.gpu_count > 1 ? rental.link_need : LinkNeed::kAny, rental.days, 0);
  return out;
}

}  // namespace gpurent::scheduler
