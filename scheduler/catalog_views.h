// The catalog's views of capacity: which rental shapes are on sale and whether they fit now
// (GET /v1/offers), and how many rentals of one shape could start on each coming day (GET
// /v1/availability). Read-only: the candidates come from the replica's copy of what the
// booking's loader reads (capacity_index.h), and placement answers the same question it
// answers for a booking.
#pragma once

#include "core/clock.h"
#include "core/db_pool.h"
#include "core/money.h"
#include "inventory/burn_in_store.h"
#include "inventory/catalog_store.h"
#include "inventory/price_store.h"
#include "scheduler/capacity_index.h"
#include "scheduler/placement.h"

#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace gpurent::scheduler {

struct OfferQuery {
  std::optional<std::string> gpu_model;
  std::optional<int> gpu_count;
  // Absent: each shape with the interconnect it needs (shape_link_need below).
  std::optional<LinkNeed> link_need;
  std::optional<Timestamp> start;  // from when to look; now when absent or past
  // A date instead of `start`: from its midnight at each offer's site, as a booking by date.
  std::optional<std::string> start_date;
  int days = 1;
};

// What an offer of `gpu_count` GPUs on nodes built as `interconnect` asks of its GPUs when the
// query does not say: NVLink where such a node has it for that many (an NVSwitch board, a
// bridged pair), any for one GPU and on PCIe boxes or larger sets of bridged pairs, whose
// multi-GPU shapes could otherwise never be dated.
LinkNeed shape_link_need(const std::string& interconnect, int gpu_count);

// One shape on sale at one site, as the nodes there are built.
struct Offer {
  std::string gpu_model;
  int gpu_count = 0;
  std::string interconnect;             // the nodes' declared shape: nvswitch | nvlink-pairs | pcie
  LinkNeed link_need = LinkNeed::kAny;  // what the dates below assumed of the GPUs' links
  int vram_total_gb = 0;
  Money price_per_day{0, "XXX"};
  bool available_now = false;
  std::optional<Timestamp> earliest_start;  // within the horizon
  // The first date on the site's calendar ("YYYY-MM-DD") whose midnight is still ahead and
  // from which a booking of `days` fits: what a booking by date (which means the site's
  // midnight) can ask for. None within the horizon: absent.
  std::optional<std::string> earliest_date;
  std::string site;
  // The model's measured performance (its nodes' latest burn-ins); absent before any.
  std::optional<inventory::ModelMeasurement> measured;
};

struct DayAvailability {
  std::string date;  // YYYY-MM-DD in the site's time zone
  int available = 0;
  // The site's today with its midnight gone: `available` counts rentals starting now.
  bool from_now = false;
};

class CatalogViews {
 public:
  CatalogViews(const Clock& clock, inventory::CatalogStore& catalog, inventory::PriceStore& prices,
               CapacityIndex& capacity, std::chrono::seconds cleaning_window, int horizon_days = 90)
      : clock_(clock),
        catalog_(catalog),
        prices_(prices),
        capacity_(capacity),
        cleaning_(cleaning_window),
        horizon_days_(horizon_days) {}

  // Every priced shape matching the query, per site and node shape that can hold it, with
  // whether a rental of `days` fits now and else its earliest start within 30 days.
  std::vector<Offer> offers(Tx& tx, const OfferQuery& query);

  // For each of `days` dates from `from` (YYYY-MM-DD): how many rentals of the shape, one
  // day long, could start at that date's midnight at their node's site: as many as placing
  // them one after another would place (counted per node, since nodes share no GPUs). At
  // most `cap` a day per site.
  std::vector<DayAvailability> availability(Tx& tx, const std::string& gpu_model, int gpu_count,
                                            LinkNeed need, const std::string& from, int days,
                                            int cap = 1000);

  // A burn-in was recorded (announced on gpurent_burn_ins, migration 0023): the next offers
  // read the models' measured figures again.
  void measurements_changed();

 private:
  // The models' measured performance, kept until a burn-in is announced, and at most a
  // minute (a replica whose listener was down heard nothing meanwhile).
  std::map<std::string, inventory::ModelMeasurement> measured(Tx& tx);

  const Clock& clock_;
  inventory::CatalogStore& catalog_;
  inventory::PriceStore& prices_;
  CapacityIndex& capacity_;
  std::chrono::seconds cleaning_;
  int horizon_days_;  // how far ahead the offers look for a start (the booking horizon)
  inventory::BurnInStore burn_ins_;
  std::mutex measured_mutex_;
  std::optional<Timestamp> measured_at_;
  std::map<std::string, inventory::ModelMeasurement> measured_;
};

}  // namespace gpurent::scheduler
