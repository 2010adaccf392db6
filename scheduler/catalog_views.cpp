// Offers and availability from the candidates and placement.
#include "scheduler/catalog_views.h"

#include "core/error.h"
#include "core/sql.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

namespace gpurent::scheduler {
namespace {

using std::chrono::hours;

// Each bookable node's declared shape and site, for one model.
constexpr Statement kNodeFacts = {
    "catalog_views_node_facts",
    "SELECT n.id, n.interconnect, s.name, s.id FROM nodes n JOIN sites s ON s.id = n.site_id"
    " WHERE n.gpu_model = $1 AND n.state = 'available' AND n.health = 'ok'"};
// Midnight of each of $2 days from date $1 at every site.
constexpr Statement kSiteMidnights = {
    "catalog_views_site_midnights",
    "SELECT s.id, to_char(d, 'YYYY-MM-DD'), " SQL_MICROS("(d::timestamp AT TIME ZONE s.timezone)")
    " FROM sites s, generate_series($1::date, $1::date + ($2 - 1), interval '1 day') d"
    " ORDER BY s.id, d"};

constexpr int kHorizonDays = 30;

struct Fact {
  std::string interconnect;
  std::string site_name;
  std::string site_id;
};

std::map<std::string, Fact> node_facts(Tx& tx, const std::string& model) {
  std::map<std::string, Fact> out;
  for (const auto& row : tx.exec(kNodeFacts, model)) {
    out[row[0].as<std::string>()] = {row[1].as<std::string>(), row[2].as<std::string>(),
                                     row[3].as<std::string>()};
  }
  return out;
}

bool fits(const std::vector<NodeCandidate>& nodes, const std::string& model, int count,
          LinkNeed need, const Period& occupies) {
  PlacementRequest req{
      .gpu_model = model, .gpu_count = count, .link_need = need, .occupies = occupies};
  return !place(req, nodes, {.max_choices = 1}).empty();
}

bool is_date(std::string_view s) {
  if (s.size() != 10 || s[4] != '-' || s[7] != '-') return false;
  for (std::size_t i : {0u, 1u, 2u, 3u, 5u, 6u, 8u, 9u}) {
    if (s[i] < '0' || s[i] > '9') return false;
  }
  return true;
}

}  // namespace

std::vector<Offer> CatalogViews::offers(Tx& tx, const OfferQuery& q) {
  if (q.days < 1 || q.days > 365) throw Error::invalid_field("days", "must be 1 to 365");
  Timestamp now = std::max(clock_.now(), q.start.value_or(Timestamp::min()));
  std::vector<Offer> out;
  std::map<std::string, std::pair<std::map<std::string, Fact>, std::vector<NodeCandidate>>> loaded;
  for (const auto& price : prices_.current(tx)) {
    if (q.gpu_model && price.gpu_model != *q.gpu_model) continue;
    if (q.gpu_count && price.gpu_count != *q.gpu_count) continue;
    auto model = catalog_.gpu_model(tx, price.gpu_model);
    if (!model) continue;
    auto it = loaded.find(price.gpu_model);
    if (it == loaded.end()) {
      // One load per model over the whole horizon; every start is tried in memory.
      Period window{now, now + hours(24) * (kHorizonDays + q.days) + cleaning_};
      it = loaded
               .emplace(price.gpu_model,
                        std::make_pair(node_facts(tx, price.gpu_model),
                                       candidates_.load(tx, price.gpu_model, window)))
               .first;
    }
    const auto& [facts, candidates] = it->second;
    LinkNeed need = price.gpu_count > 1 ? q.link_need : LinkNeed::kAny;
    // One offer per site and node shape that has a node big enough for the shape.
    std::map<std::pair<std::string, std::string>, std::vector<NodeCandidate>> groups;
    for (const auto& c : candidates) {
      auto f = facts.find(c.node_id);
      if (f == facts.end() || static_cast<int>(c.gpus.size()) < price.gpu_count) continue;
      groups[{f->second.site_name, f->second.interconnect}].push_back(c);
    }
    for (const auto& [key, nodes] : groups) {
      Offer o{.gpu_model = price.gpu_model,
              .gpu_count = price.gpu_count,
              .interconnect = key.second,
              .vram_total_gb = model->vram_gb * price.gpu_count,
              .price_per_day = Money(price.amount_minor, price.currency),
              .site = key.first};
      for (int day = 0; day <= kHorizonDays && !o.earliest_start; ++day) {
        Timestamp start = now + hours(24) * day;
        Period occupies{start, start + hours(24) * q.days + cleaning_};
        if (fits(nodes, price.gpu_model, price.gpu_count, need, occupies)) {
          o.earliest_start = start;
          o.available_now = day == 0;
        }
      }
      out.push_back(std::move(o));
    }
  }
  return out;
}

std::vector<DayAvailability> CatalogViews::availability(Tx& tx, const std::string& gpu_model,
                                                        int gpu_count, LinkNeed need,
                                                        const std::string& from, int days,
                                                        int cap) {
  if (gpu_count < 1 || gpu_count > 64) throw Error::invalid_field("gpu_count", "must be 1 to 64");
  if (days < 1 || days > 90) throw Error::invalid_field("days", "must be 1 to 90");
  if (!is_date(from)) throw Error::invalid_field("from", "must be a date (YYYY-MM-DD)");
  if (!catalog_.gpu_model(tx, gpu_model)) {
    throw Error::invalid_field("gpu_model", "is not a GPU model of the catalog");
  }
  if (gpu_count == 1) need = LinkNeed::kAny;
  // site → [(date, midnight)], and node → site.
  std::map<std::string, std::vector<std::pair<std::string, Timestamp>>> midnights;
  pqxx::result rows;
  try {
    rows = tx.exec(kSiteMidnights, from, days);
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
  if (!midnights.empty()) {
    auto facts = node_facts(tx, gpu_model);
    auto all = candidates_.load(tx, gpu_model, Period{first, last + hours(24) + cleaning_});
    std::map<std::string, std::vector<NodeCandidate>> by_site;
    for (const auto& c : all) {
      if (auto f = facts.find(c.node_id); f != facts.end()) {
        by_site[f->second.site_id].push_back(c);
      }
    }
    for (const auto& [site, nodes] : by_site) {
      for (const auto& [date, midnight] : midnights[site]) {
        // A midnight already past at the site cannot be booked (the booking refuses a date
        // whose start has gone), so that day offers nothing there.
        if (midnight + std::chrono::minutes(5) < clock_.now()) {
          by_date.emplace(date, 0);
          continue;
        }
        // Rentals that start the same day share nothing: place one after another on a copy
        // of the calendar, each taking its GPUs from the copy.
        auto calendar = nodes;
        Period occupies{midnight, midnight + hours(24) + cleaning_};
        PlacementRequest req{.gpu_model = gpu_model,
                             .gpu_count = gpu_count,
                             .link_need = need,
                             .occupies = occupies};
        int placed = 0;
        while (placed < cap) {
          auto choice = place(req, calendar, {.max_choices = 1});
          if (choice.empty()) break;
          for (auto& c : calendar) {
            if (c.node_id != choice.front().node_id) continue;
            for (auto& g : c.gpus) {
              for (int i : choice.front().gpu_indices) {
                if (g.index == i) g.busy.push_back(occupies);
              }
            }
          }
          ++placed;
        }
        by_date[date] += placed;
      }
    }
  }
  // Every requested date, in order, even where no site has a node of the model.
  for (const auto& [site, dates] : midnights) {
    for (const auto& [date, midnight] : dates) by_date.emplace(date, 0);
    break;
  }
  for (const auto& [date, n] : by_date) out.push_back({date, n});
  return out;
}

}  // namespace gpurent::scheduler
