// Booking: checks, placement, and allocation under savepoints until one choice holds.
#include "scheduler/booking.h"

#include "core/error.h"
#include "core/sql.h"
#include "inventory/image_compat.h"

#include <algorithm>
#include <charconv>
#include <map>

namespace gpurent::scheduler {
namespace {

using std::chrono::hours;

// Midnight of a date in the time zone of each node's site, for the nodes of one model.
// PostgreSQL's time zone database decides, so a date in a daylight-saving change is right.
constexpr Statement kSiteMidnights = {
    "booking_site_midnights",
    "SELECT n.id, " SQL_MICROS("(($2::date)::timestamp AT TIME ZONE s.timezone)")
    " FROM nodes n JOIN sites s ON s.id = n.site_id WHERE n.gpu_model = $1"};

constexpr Statement kUtcMidnight = {
    "booking_utc_midnight", "SELECT " SQL_MICROS("(($1::date)::timestamp AT TIME ZONE 'UTC')")};

constexpr int kMaxDays = 365;
constexpr int kMaxGpus = 64;
// A start this little in the past is taken as now: a client's clock, or the request's own
// time on the wire, is not worth a refusal.
constexpr auto kStartTolerance = std::chrono::minutes(5);

Timestamp plus_days(Timestamp t, int days) {
  return t + hours(24) * days;
}

// YYYY-MM-DD, a real calendar date (PostgreSQL checks the day of the month again).
bool is_date(std::string_view s) {
  if (s.size() != 10 || s[4] != '-' || s[7] != '-') return false;
  for (std::size_t i : {0u, 1u, 2u, 3u, 5u, 6u, 8u, 9u}) {
    if (s[i] < '0' || s[i] > '9') return false;
  }
  int month = (s[5] - '0') * 10 + (s[6] - '0');
  int day = (s[8] - '0') * 10 + (s[9] - '0');
  return month >= 1 && month <= 12 && day >= 1 && day <= 31;
}

// The stricter of two optional limits.
std::optional<int> stricter(std::optional<int> a, std::optional<int> b) {
  if (!a) return b;
  if (!b) return a;
  return std::min(*a, *b);
}

// One start instant and the candidates that would start then (one group per site time zone
// for a date, one group otherwise).
struct StartGroup {
  Timestamp start;
  std::vector<NodeCandidate> candidates;
};

}  // namespace

struct Booking::Checked {
  inventory::GpuModelRecord model;
  Money price_per_day{0, "XXX"};
  long long price_id = 0;
  Timestamp now;
  // The start instants the request can mean, each with its nodes' ids (for a date: per
  // site), earliest first; for now or an instant, one entry and no ids (every node).
  std::vector<std::pair<Timestamp, std::vector<std::string>>> starts;
  std::string name;
};

Booking::Checked Booking::check(Tx& tx, const BookingRequest& r) {
  Checked c;
  c.now = clock_.now();
  if (r.gpu_count < 1 || r.gpu_count > kMaxGpus) {
    throw Error::invalid_field("gpu_count", "must be 1 to 64");
  }
  if (r.days < 1 || r.days > kMaxDays) throw Error::invalid_field("days", "must be 1 to 365");
  if (auto limit = stricter(r.org_limits.max_days, r.token_limits.max_days);
      limit && r.days > *limit) {
    throw Error(ErrorCode::kQuotaExceeded,
                "A rental may last at most " + std::to_string(*limit) + " days here.",
                {{"limit", "max_days"}, {"max_days", *limit}, {"requested", r.days}});
  }
  auto model = catalog_.gpu_model(tx, r.gpu_model);
  if (!model) throw Error::invalid_field("gpu_model", "is not a GPU model of the catalog");
  c.model = *model;
  auto image = catalog_.image(tx, r.image_id);
  if (!image || image->status != "active") {
    throw Error::invalid_field("image_id", "is not an active image of the catalog");
  }
  if (auto verdict = inventory::image_runs_on(*image, *model); !verdict) {
    throw Error(ErrorCode::kIncompatibleImage,
                "The image " + image->name + " does not run on " + model->name + ".",
                {{"reason", verdict.reason}});
  }
  auto price = prices_.price_at(tx, r.gpu_model, r.gpu_count, c.now);
  if (!price) {
    throw Error::invalid_field("gpu_count", "is not offered for this GPU model: it has no price");
  }
  c.price_per_day = Money(price->amount_minor, price->currency);
  c.price_id = price->id;
  if (auto limit = stricter(r.org_limits.max_concurrent_gpus, r.token_limits.max_concurrent_gpus)) {
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
  auto latest_start = c.now + options_.horizon;
  if (std::holds_alternative<StartNow>(r.start)) {
    c.starts.push_back({c.now, {}});
  } else if (const auto* at = std::get_if<Timestamp>(&r.start)) {
    if (*at < c.now - kStartTolerance) throw Error::invalid_field("start", "is in the past");
    if (*at > latest_start) {
      throw Error::invalid_field("start", "is further ahead than bookings are taken");
    }
    c.starts.push_back({std::max(*at, c.now), {}});
  } else {
    const auto& date = std::get<StartDate>(r.start).date;
    if (!is_date(date))
      throw Error::invalid_field("start", "must be now, an RFC 3339 time or a date");
    std::map<Timestamp, std::vector<std::string>> by_start;
    pqxx::result rows;
    try {
      rows = tx.exec(kSiteMidnights, r.gpu_model, date);
    } catch (const pqxx::data_exception&) {
      throw Error::invalid_field("start", "is not a calendar date");
    }
    for (const auto& row : rows) {
      by_start[read_timestamp(row[1])].push_back(row[0].as<std::string>());
    }
    for (auto& [start, nodes] : by_start) {
      // A midnight that has passed at the node's site is refused rather than moved: the
      // customer asked for that day and would pay for hours already gone.
      if (start < c.now - kStartTolerance || start > latest_start) continue;
      c.starts.emplace_back(start, std::move(nodes));
    }
    if (c.starts.empty()) {
      if (!by_start.empty()) {
        throw Error::invalid_field("start", "is in the past or too far ahead at every site");
      }
      // No node of the model anywhere: the date still names a period, in UTC, for a
      // request that waits.
      auto utc = tx.exec(kUtcMidnight, date);
      Timestamp start = read_timestamp(utc[0][0]);
      if (start < c.now - kStartTolerance) throw Error::invalid_field("start", "is in the past");
      c.starts.push_back({start, {}});
    }
  }
  c.name = r.name.empty() ? std::to_string(r.gpu_count) + "x " + r.gpu_model : r.name;
  return c;
}

namespace {

// The candidates of each start group, loaded once over the window every group spans.
std::vector<StartGroup> load_groups(
    Tx& tx, CandidateStore& store, const std::string& model,
    const std::vector<std::pair<Timestamp, std::vector<std::string>>>& starts,
    Timestamp window_end) {
  Period window{starts.front().first, window_end};
  for (const auto& s : starts) window.start = std::min(window.start, s.first);
  auto all = store.load(tx, model, window);
  std::vector<StartGroup> groups;
  for (const auto& [start, ids] : starts) {
    StartGroup g{start, {}};
    for (const auto& c : all) {
      if (ids.empty() || std::find(ids.begin(), ids.end(), c.node_id) != ids.end()) {
        g.candidates.push_back(c);
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
    for (auto& p : place(req, g.candidates, {.max_choices = max_choices})) {
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
  NewRental rental{.org_id = r.org_id,
                   .created_by = r.actor.user_id.value_or(""),
                   .created_by_token = r.actor.token_id,
                   .name = c.name,
                   .state = RentalState::kScheduled,
                   .gpu_model = r.gpu_model,
                   .gpu_count = r.gpu_count,
                   .link_need = r.link_need,
                   .days = r.days,
                   .image_id = r.image_id,
                   .ssh_key_ids = r.ssh_key_ids,
                   .price_per_day = c.price_per_day,
                   .price_id = c.price_id,
                   .wait_for_capacity = r.wait_for_capacity};
  Timestamp latest = c.starts.back().first;
  Timestamp window_end = plus_days(latest, r.days) + options_.cleaning_window;
  // Each round loads the candidates afresh, so it sees what concurrent bookings committed
  // while the last one tried its choices. Every choice refused for an overlap is a booking
  // someone else made, so the rounds end: when the choices run out (the fleet is full) or
  // after max_attempts refusals.
  int attempts = 0;
  while (attempts < options_.max_attempts) {
    auto groups = load_groups(tx, candidates_, r.gpu_model, c.starts, window_end);
    auto choices = choices_for(groups, r.gpu_model, r.gpu_count, need, r.days,
                               options_.cleaning_window, options_.max_attempts - attempts);
    if (choices.empty()) break;
    for (const auto& choice : choices) {
      ++attempts;
      rental.node_id = choice.placement.node_id;
      rental.gpu_indices = choice.placement.gpu_indices;
      rental.period = choice.period;
      auto attempt = tx.attempt("booking_choice", [&](Tx& sub) {
        RentalRecord record = rentals_.create(sub, rental);
        rentals_.allocate(sub, record.id, choice.placement.node_id, choice.placement.gpu_indices,
                          choice.occupies);
        return record;
      });
      if (attempt) return attempt.value();
      // Only a booking taken meanwhile is worth the next choice; anything else is a bug or
      // a changed fleet and ends the booking.
      if (attempt.failure() != DbFailure::kExclusionViolation) throw attempt.violation();
    }
  }
  if (r.wait_for_capacity) {
    rental.state = RentalState::kPending;
    rental.node_id.reset();
    rental.gpu_indices.clear();
    rental.period = Period{c.starts.front().first, plus_days(c.starts.front().first, r.days)};
    rental.pending_expires_at = c.now + options_.pending_for;
    rental.reason = "waiting for capacity";
    return rentals_.create(tx, rental);
  }
  throw InsufficientCapacity(no_capacity(tx, r, c));
}

NoCapacity Booking::no_capacity(Tx& tx, const BookingRequest& r, const Checked& c) {
  NoCapacity out;
  LinkNeed need = r.gpu_count > 1 ? r.link_need : LinkNeed::kAny;
  // One load over the whole horizon; every later start is tried in memory, a day apart.
  Timestamp window_end =
      plus_days(c.starts.back().first + options_.horizon, r.days) + options_.cleaning_window;
  auto groups = load_groups(tx, candidates_, r.gpu_model, c.starts, window_end);
  int horizon_days = static_cast<int>(options_.horizon / hours(24));
  for (int day = 1; day <= horizon_days && !out.earliest_start; ++day) {
    auto shifted = groups;
    for (auto& g : shifted) g.start = plus_days(g.start, day);
    auto choices =
        choices_for(shifted, r.gpu_model, r.gpu_count, need, r.days, options_.cleaning_window, 1);
    if (!choices.empty()) out.earliest_start = choices.front().period.start;
  }
  // Other sizes of the same model that fit at the requested start and are on sale.
  for (int count : {1, 2, 4, 8}) {
    if (count == r.gpu_count) continue;
    if (!prices_.price_at(tx, r.gpu_model, count, c.now)) continue;
    auto choices = choices_for(groups, r.gpu_model, count, count > 1 ? r.link_need : LinkNeed::kAny,
                               r.days, options_.cleaning_window, 1);
    if (!choices.empty()) out.alternatives.push_back({count, choices.front().period.start});
  }
  return out;
}

bool Booking::place_pending(Tx& tx, const RentalRecord& r) {
  LinkNeed need = r.gpu_count > 1 ? r.link_need : LinkNeed::kAny;
  Timestamp start = std::max(r.period.start, clock_.now());
  std::vector<std::pair<Timestamp, std::vector<std::string>>> starts{{start, {}}};
  Timestamp window_end = plus_days(start, r.days) + options_.cleaning_window;
  // The same bounded rounds as book(): a choice refused for an overlap is a booking made
  // meanwhile, so the next round loads the candidates afresh.
  int attempts = 0;
  while (attempts < options_.max_attempts) {
    auto groups = load_groups(tx, candidates_, r.gpu_model, starts, window_end);
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

Quote Booking::quote(Tx& tx, const BookingRequest& r) {
  Checked c = check(tx, r);
  LinkNeed need = r.gpu_count > 1 ? r.link_need : LinkNeed::kAny;
  Quote q;
  q.price_per_day = c.price_per_day;
  q.total = c.price_per_day.times(r.days);
  q.period = Period{c.starts.front().first, plus_days(c.starts.front().first, r.days)};
  Timestamp window_end = plus_days(c.starts.back().first, r.days) + options_.cleaning_window;
  auto groups = load_groups(tx, candidates_, r.gpu_model, c.starts, window_end);
  auto choices =
      choices_for(groups, r.gpu_model, r.gpu_count, need, r.days, options_.cleaning_window, 1);
  if (!choices.empty()) {
    q.available = true;
    q.preview = choices.front().placement;
    q.period = choices.front().period;
    q.earliest_start = choices.front().period.start;
  } else {
    q.earliest_start = no_capacity(tx, r, c).earliest_start;
  }
  return q;
}

}  // namespace gpurent::scheduler
