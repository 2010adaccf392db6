// Offers and availability from the candidates and placement.
#include "scheduler/catalog_views.h"

#include "core/error.h"
#include "core/limits.h"
#include "core/sql.h"
#include "core/time.h"
#include "scheduler/candidate_prefetch.h"
#include "scheduler/site_midnight.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <tuple>
#include <unordered_map>

namespace gpurent::scheduler {
namespace {

using std::chrono::hours;

// Midnight of each of $2 days from date $1 at every site.
constexpr Statement kCalendarSiteMidnights = {
    "catalog_views_site_midnights",
    "SELECT s.id, to_char(d, 'YYYY-MM-DD'), "
    SQL_MICROS(GPURENT_SQL_SITE_MIDNIGHT("d", "s.timezone"))
    " FROM sites s, generate_series($1::date, $1::date + ($2 - 1), interval '1 day') d"
    " ORDER BY s.id, d"};

bool fits(const std::vector<const NodeCandidate*>& nodes, const std::string& model, int count,
          LinkNeed need, const Period& occupies) {
  return fits_any({.gpu_model = model, .gpu_count = count, .link_need = need, .occupies = occupies},
                  nodes);
}

// The calendar below counts, per node, how many rentals placement would put there one after
// another, rather than running placement over the whole fleet once per rental: nodes do not
// share GPUs, so a node's count depends on its own free GPUs and links alone, and the order in
// which placement visits the nodes changes which rental lands where but not how many fit. At
// 10,000 nodes that is one pass over the fleet per day instead of up to `cap` of them.
using Mask = std::uint64_t;

Mask bit(int i) {
  return Mask{1} << i;
}

// Days (by position in the calendar) as bits; the calendar is at most 90 days long.
struct DaySet {
  std::array<std::uint64_t, 2> words{};

  void add_range(std::size_t from, std::size_t to) {
    for (std::size_t d = from; d < to; ++d) words[d / 64] |= std::uint64_t{1} << (d % 64);
  }
  bool has(std::size_t d) const { return (words[d / 64] >> (d % 64) & 1) != 0; }
};
static_assert(2 * 64 >= 90, "a DaySet holds the longest calendar");

// One node's GPUs as placement sees them on each day of a site's calendar: the GPU index and
// the days on which it is not free (unhealthy, or a busy period overlapping that day's
// rental). Indices placement would never use (outside the link matrix) block their bit, as
// in placement's free_gpus().
struct GpuDays {
  int index;
  bool usable;  // healthy and inside the matrix
  DaySet busy;
};

// The free GPUs of a node on day `d`: the same mask placement's free_gpus() computes.
Mask free_on(const std::vector<GpuDays>& gpus, std::size_t d) {
  Mask listed = 0, blocked = 0;
  for (const auto& g : gpus) {
    if (g.usable && !g.busy.has(d)) {
      listed |= bit(g.index);
    } else if (g.index >= 0 && g.index < topology::kMaxGpus) {
      blocked |= bit(g.index);
    }
  }
  return listed & ~blocked;
}

// Rentals of `count` GPUs that one node takes when placement places them one after another,
// each on the chooser's best set among the GPUs still free: what the calendar's repeated
// place() calls would have put on this node.
int rentals_fitting(const topology::Matrix& links, Mask free, int count, LinkNeed need) {
  int placed = 0;
  std::vector<int> list;
  for (;;) {
    list.clear();
    for (Mask m = free; m != 0; m &= m - 1) list.push_back(std::countr_zero(m));
    auto set = choose_gpu_set(links, list, count, need);
    if (!set) return placed;
    for (int i : *set) free &= ~bit(i);
    ++placed;
  }
}

// Node link matrices are per-node copies, but a fleet has a handful of distinct ones: the
// count for a (matrix, free GPUs) pair is computed once per calendar.
class FitCounter {
 public:
  FitCounter(int count, LinkNeed need) : count_(count), need_(need) {}

  // An id shared by equal matrices.
  std::size_t intern(const topology::Matrix& links) {
    std::size_t h = std::hash<int>{}(links.gpus);
    for (const auto& row : links.links) {
      for (const auto& kind : row) h = h * 1'000'003 ^ std::hash<std::string>{}(kind);
    }
    auto& same_hash = by_hash_[h];
    for (std::size_t id : same_hash) {
      if (shapes_[id].links == links) return id;
    }
    shapes_.push_back({links, {}, {}});
    if (links.gpus >= 0 && links.gpus <= kDenseGpus) {
      shapes_.back().dense.assign(std::size_t{1} << links.gpus, -1);
    }
    same_hash.push_back(shapes_.size() - 1);
    return shapes_.size() - 1;
  }

  int fitting(std::size_t shape, Mask free) {
    auto& s = shapes_[shape];
    if (!s.dense.empty() && free < s.dense.size()) {
      auto& slot = s.dense[free];
      if (slot < 0) slot = rentals_fitting(s.links, free, count_, need_);
      return slot;
    }
    auto [it, inserted] = s.sparse.try_emplace(free, 0);
    if (inserted) it->second = rentals_fitting(s.links, free, count_, need_);
    return it->second;
  }

 private:
  static constexpr int kDenseGpus = 16;  // a table of 2^16 entries per matrix at most
  struct Shape {
    topology::Matrix links;
    std::vector<int> dense;  // by free mask; -1 not computed yet
    std::unordered_map<Mask, int> sparse;
  };
  int count_;
  LinkNeed need_;
  std::vector<Shape> shapes_;
  std::unordered_map<std::size_t, std::vector<std::size_t>> by_hash_;
};

}  // namespace

LinkNeed shape_link_need(const std::string& interconnect, int gpu_count) {
  if (gpu_count <= 1) return LinkNeed::kAny;
  if (interconnect == "nvswitch") return LinkNeed::kNvlink;
  if (interconnect == "nvlink-pairs" && gpu_count == 2) return LinkNeed::kNvlink;
  return LinkNeed::kAny;
}

std::vector<Offer> CatalogViews::offers(Tx& tx, const OfferQuery& q) {
  if (q.days < limits::kMinRentalDays || q.days > limits::kMaxRentalDays) {
    throw Error::out_of_range("days", limits::kMinRentalDays, limits::kMaxRentalDays);
  }
  const Timestamp now = std::max(clock_.now(), q.start.value_or(Timestamp::min()));
  // A date: its midnight at each site, each site's offers looking from there.
  std::map<std::string, Timestamp> date_starts;
  Timestamp window_start = now;
  if (q.start_date) {
    if (!parse_civil_date(*q.start_date)) {
      throw Error::invalid_field("start", "must be now, an RFC 3339 time or a date");
    }
    // The calendar's statement for that one day: site, date, midnight.
    for (const auto& row : tx.exec(kCalendarSiteMidnights, *q.start_date, 1)) {
      Timestamp m = std::max(read_timestamp(row[2]), now);
      date_starts[row[0].as<std::string>()] = m;
      window_start = std::min(window_start, m);
    }
  }
  Timestamp window_end = now;
  for (const auto& [site, start] : date_starts) window_end = std::max(window_end, start);
  std::vector<Offer> out;
  // Each site's midnights over the horizon, from the UTC day before now's (a site east of UTC
  // may be a day ahead), read once: the dates a booking by date can name.
  std::map<std::string, std::vector<std::pair<std::string, Timestamp>>> midnights;
  std::string utc_yesterday = format_rfc3339(now - hours(24)).substr(0, 10);
  for (const auto& row : tx.exec(kCalendarSiteMidnights, utc_yesterday, horizon_days_ + 2)) {
    midnights[row[0].as<std::string>()].emplace_back(row[1].as<std::string>(),
                                                     read_timestamp(row[2]));
  }
  std::map<std::string, CapacityIndex::Candidates> loaded;
  for (const auto& price : prices_.current(tx)) {
    if (q.gpu_model && price.gpu_model != *q.gpu_model) continue;
    if (q.gpu_count && price.gpu_count != *q.gpu_count) continue;
    auto model = catalog_.gpu_model(tx, price.gpu_model);
    if (!model) continue;
    auto it = loaded.find(price.gpu_model);
    if (it == loaded.end()) {
      // One read per model over the whole horizon; every start is tried in memory.
      Period window{window_start, window_end + hours(24) * (horizon_days_ + q.days) + cleaning_};
      it = loaded.emplace(price.gpu_model, capacity_.candidates(tx, price.gpu_model, window)).first;
    }
    const auto& candidates = *it->second;
    // One offer per site and node shape that has a node big enough for the shape.
    std::map<std::pair<std::string, std::string>, std::vector<const NodeCandidate*>> groups;
    for (const auto& c : candidates) {
      if (static_cast<int>(c->gpus.size()) < price.gpu_count) continue;
      groups[{c->site_name, c->interconnect}].push_back(c.get());
    }
    for (const auto& [key, nodes] : groups) {
      LinkNeed need = price.gpu_count <= 1
                          ? LinkNeed::kAny
                          : q.link_need.value_or(shape_link_need(key.second, price.gpu_count));
      auto at_site = date_starts.find(nodes.front()->site_id);
      const Timestamp from = at_site != date_starts.end() ? at_site->second : now;
      Offer o{.gpu_model = price.gpu_model,
              .gpu_count = price.gpu_count,
              .interconnect = key.second,
              .vram_total_gb = model->vram_gb * price.gpu_count,
              .price_per_day = Money(price.amount_minor, price.currency),
              .site = key.first};
      o.link_need = need;
      for (int day = 0; day <= horizon_days_ && !o.earliest_start; ++day) {
        Timestamp start = from + hours(24) * day;
        Period occupies{start, start + hours(24) * q.days + cleaning_};
        if (fits(nodes, price.gpu_model, price.gpu_count, need, occupies)) {
          o.earliest_start = start;
          o.available_now = day == 0;
        }
      }
      // The same search by the site's dates, as the availability calendar counts them (a
      // midnight already past cannot be booked).
      for (const auto& [date, midnight] : midnights[nodes.front()->site_id]) {
        if (midnight + std::chrono::minutes(5) < from ||
            midnight > now + hours(24) * horizon_days_) {
          continue;
        }
        Period occupies{midnight, midnight + hours(24) * q.days + cleaning_};
        if (fits(nodes, price.gpu_model, price.gpu_count, need, occupies)) {
          o.earliest_date = date;
          break;
        }
      }
      out.push_back(std::move(o));
    }
  }
  if (!out.empty()) {
    auto figures = measured(tx);
    for (auto& o : out) {
      if (auto it = figures.find(o.gpu_model); it != figures.end()) o.measured = it->second;
    }
  }
  return out;
}

void CatalogViews::measurements_changed() {
  std::lock_guard lock(measured_mutex_);
  measured_at_.reset();
}

std::map<std::string, inventory::ModelMeasurement> CatalogViews::measured(Tx& tx) {
  constexpr auto kFresh = std::chrono::minutes(1);
  std::lock_guard lock(measured_mutex_);
  const Timestamp now = clock_.now();
  if (!measured_at_ || now - *measured_at_ >= kFresh || now < *measured_at_) {
    measured_ = burn_ins_.measured_by_model(tx);
    measured_at_ = now;
  }
  return measured_;
}

std::vector<DayAvailability> CatalogViews::availability(Tx& tx, const std::string& gpu_model,
                                                        int gpu_count, LinkNeed need,
                                                        const std::string& from, int days,
                                                        int cap) {
  if (gpu_count < 1 || gpu_count > 64) throw Error::invalid_field("gpu_count", "must be 1 to 64");
  if (days < 1 || days > 90) throw Error::invalid_field("days", "must be 1 to 90");
  if (!parse_civil_date(from)) throw Error::invalid_field("from", "must be a date (YYYY-MM-DD)");
  if (!catalog_.gpu_model(tx, gpu_model)) {
    throw Error::invalid_field("gpu_model", "is not a GPU model of the catalog");
  }
  if (gpu_count == 1) need = LinkNeed::kAny;
  // site → [(date, midnight)], and node → site.
  std::map<std::string, std::vector<std::pair<std::string, Timestamp>>> midnights;
  pqxx::result rows;
  try {
    rows = tx.exec(kCalendarSiteMidnights, from, days);
  } catch (const pqxx::data_exception&) {
    throw Error::invalid_field("from", "is not a calendar date");
  }
  Timestamp first = Timestamp::max(), last = Timestamp::min();
  for (const auto& row : rows) {
    Timestamp m = read_timestamp(row[2]);
    midnights[row[0].as<std::string>()].emplace_back(row[1].as<std::string>(), m);
    first = std::min(first, m);
    last = std::max(last, m);
  }
  std::vector<DayAvailability> out;
  std::map<std::string, int> by_date;
  std::set<std::string> from_now;  // dates some site counted from now
  if (!midnights.empty()) {
    const Timestamp now = clock_.now();
    auto all = capacity_.candidates(tx, gpu_model,
                                    Period{first, std::max(last, now) + hours(24) + cleaning_});
    std::map<std::string, std::vector<const NodeCandidate*>> by_site;
    for (const auto& c : *all) by_site[c->site_id].push_back(c.get());
    FitCounter counter(gpu_count, need);
    for (const auto& [site, nodes] : by_site) {
      const auto& dates = midnights[site];
      // Day d's rental occupies [midnight_d, ends[d]); midnights ascend, and so do the ends.
      std::vector<Timestamp> starts, ends;
      for (const auto& [date, midnight] : dates) {
        // Today at the site, its midnight gone: what can still start today starts now (a
        // booking for now), so the calendar agrees with the offers' available_now. Starts
        // still ascend: now comes before the next midnight.
        Timestamp start =
            midnight + std::chrono::minutes(5) < now && now < midnight + hours(24) ? now : midnight;
        starts.push_back(start);
        ends.push_back(start + hours(24) + cleaning_);
      }
      std::vector<long long> fitting(dates.size(), 0);
      std::vector<GpuDays> gpus;
      // Nodes are loaded ahead as placement loads them (candidate_prefetch.h): the pass is
      // bound by memory, and the node records themselves are blocks of their own here.
      for (std::size_t i = 0; i < nodes.size(); ++i) {
        if (i + 2 * kListsAhead < nodes.size()) __builtin_prefetch(nodes[i + 2 * kListsAhead]);
        if (i + kListsAhead < nodes.size()) {
          const auto& ahead = *nodes[i + kListsAhead];
          prefetch_gpu_list(ahead);
          prefetch_bytes(ahead.links.links.data(),
                         ahead.links.links.size() * sizeof(ahead.links.links[0]));
        }
        if (i + kBlocksAhead < nodes.size()) {
          prefetch_gpu_blocks(*nodes[i + kBlocksAhead], ~std::uint64_t{0}, true);
        }
        const auto* node = nodes[i];
        if (node->gpu_model != gpu_model || gpu_count > topology::kMaxGpus) continue;
        gpus.clear();
        for (const auto& g : node->gpus) {
          GpuDays days{g.index,
                       g.healthy && g.index >= 0 && g.index < node->links.gpus &&
                           g.index < topology::kMaxGpus,
                       {}};
          for (const auto& p : g.busy) {
            // The days whose rental overlaps p: those starting before p ends and ending
            // after p starts.
            auto from = std::upper_bound(ends.begin(), ends.end(), p.start) - ends.begin();
            auto to = std::lower_bound(starts.begin(), starts.end(), p.end) - starts.begin();
            if (from < to) days.busy.add_range(from, to);
          }
          gpus.push_back(days);
        }
        const std::size_t shape = counter.intern(node->links);
        for (std::size_t d = 0; d < dates.size(); ++d) {
          fitting[d] += counter.fitting(shape, free_on(gpus, d));
        }
      }
      for (std::size_t d = 0; d < dates.size(); ++d) {
        const auto& [date, midnight] = dates[d];
        // A day already over at the site offers nothing there.
        if (midnight + hours(24) <= now) {
          by_date.emplace(date, 0);
          continue;
        }
        if (starts[d] != midnight) from_now.insert(date);
        by_date[date] += static_cast<int>(std::clamp<long long>(fitting[d], 0, std::max(cap, 0)));
      }
    }
  }
  // Every requested date, in order, even where no site has a node of the model.
  for (const auto& [site, dates] : midnights) {
    for (const auto& [date, midnight] : dates) by_date.emplace(date, 0);
    break;
  }
  for (const auto& [date, n] : by_date) out.push_back({date, n, from_now.contains(date)});
  return out;
}

}  // namespace gpurent::scheduler
