// The price list: a price per day for each rental shape (GPU model, GPU count).
#pragma once

#include "core/audit.h"
#include "core/clock.h"
#include "core/db_pool.h"
#include "core/money.h"
#include "inventory/records.h"

#include <optional>
#include <string>
#include <vector>

namespace gpurent::inventory {

// The rows of the price list left open (valid_until unset), and the latest instant at which
// any row opened or closed: from then until the next change, the open rows are the whole
// answer of price_at(). A snapshot that CatalogCopy keeps.
struct OpenPrices {
  std::vector<PriceRecord> rows;
  std::optional<Timestamp> last_change;  // none when no price was ever set

  // Whether at() answers for `at` as PriceStore::price_at would.
  bool covers(Timestamp at) const { return !last_change || at >= *last_change; }
  // The open row of the shape in force at `at` (which covers() must hold for).
  std::optional<PriceRecord> at(const std::string& gpu_model, int gpu_count, Timestamp at) const;
};

struct PriceEntry {
  std::string gpu_model;
  int gpu_count = 0;
  Money price_per_day;
};

class PriceStore {
 public:
  // `currency` is the deployment's: every price is in it.
  PriceStore(const Clock& clock, std::string currency)
      : clock_(clock), currency_(std::move(currency)) {}

  const std::string& currency() const { return currency_; }

  // The prices in force now, by model and count.
  std::vector<PriceRecord> current(Tx& tx);

  // Makes `entries` the whole price list. A shape whose price changes gets a new row and its
  // old row is closed; an unchanged shape keeps its row; a shape left out is no longer
  // priced. Rentals keep the row they were priced with, so a change applies to new rentals
  // only. Unknown models, counts outside 1..64, duplicates, another currency or a
  // non-positive amount are invalid_request naming the entry (`items[3].gpu_model`). One
  // audit row. Concurrent replacements queue on a table lock held until the caller's
  // transaction ends; readers of the list are not blocked.
  std::vector<PriceRecord> replace(Tx& tx, const std::vector<PriceEntry>& entries,
                                   const Actor& actor);

  // The open rows and the last change, in one statement.
  OpenPrices open(Tx& tx);

  // The price row that was in force for a shape at `at`, if any.
  std::optional<PriceRecord> price_at(Tx& tx, const std::string& gpu_model, int gpu_count,
                                      Timestamp at);

 private:
  const Clock& clock_;
  std::string currency_;
};

}  // namespace gpurent::inventory
