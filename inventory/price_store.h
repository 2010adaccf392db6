// The price list: a price per day for each rental shape (GPU model, GPU count).
#pragma once

#include "core/clock.h"
#include "core/db_pool.h"
#include "core/money.h"
#include "inventory/admin_audit.h"
#include "inventory/records.h"

#include <optional>
#include <string>
#include <vector>

namespace gpurent::inventory {

struct PriceEntry {
  std::string gpu_model;
  int gpu_count = 0;
  Money price_per_day;
};

class PriceStore {
 public:
  // `currency` is the deployment's: every price is in it.
  PriceStore(PgPool& pool, const Clock& clock, std::string currency)
      : pool_(pool), clock_(clock), currency_(std::move(currency)) {}

  const std::string& currency() const { return currency_; }

  // The prices in force now, by model and count.
  std::vector<PriceRecord> current();

  // Makes `entries` the whole price list. A shape whose price changes gets a new row and its
  // old row is closed; an unchanged shape keeps its row; a shape left out is no longer
  // priced. Rentals keep the row they were priced with, so a change applies to new rentals
  // only. Unknown models, counts outside 1..64, duplicates, another currency or a
  // non-positive amount are 400 naming the entry (`items[3].gpu_model`). One audit row.
  std::vector<PriceRecord> replace(const std::vector<PriceEntry>& entries, const AdminActor& actor,
                                   const AuditContext& ctx);

  // The price row that was in force for a shape at `at`, if any.
  std::optional<PriceRecord> price_at(const std::string& gpu_model, int gpu_count, Timestamp at);

 private:
  PgPool& pool_;
  const Clock& clock_;
  std::string currency_;
};

}  // namespace gpurent::inventory
