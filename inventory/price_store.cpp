// PriceStore: named, parameterised statements over prices (rows are closed, never changed).
#include "inventory/price_store.h"

#include "core/error.h"
#include "core/sql.h"

#include <map>
#include <set>

namespace gpurent::inventory {
namespace {

#define PRICE_COLUMNS "id, gpu_model, gpu_count, amount_minor, currency, " SQL_MICROS("valid_from")

constexpr Statement kCurrent = {"price_current", "SELECT " PRICE_COLUMNS
                                                 " FROM prices WHERE valid_until IS NULL"
                                                 " ORDER BY gpu_model, gpu_count"};
// Serialises concurrent replacements (each reads the list it replaces) without blocking
// readers of the current list.
constexpr Statement kLock = {"price_lock", "LOCK TABLE prices IN SHARE ROW EXCLUSIVE MODE"};
constexpr Statement kPriceModels = {"price_models", "SELECT name FROM gpu_models"};
constexpr Statement kClose = {"price_close", "UPDATE prices SET valid_until = $2 WHERE id = $1"};
constexpr Statement kInsertPrice = {
    "price_insert",
    "INSERT INTO prices (gpu_model, gpu_count, amount_minor, currency, valid_from, set_by)"
    " VALUES ($1, $2, $3, $4, $5, $6)"};
constexpr Statement kAt = {"price_at",
                           "SELECT " PRICE_COLUMNS
                           " FROM prices WHERE gpu_model = $1 AND gpu_count = $2"
                           " AND valid_from <= $3 AND (valid_until IS NULL OR valid_until > $3)"
                           " ORDER BY valid_from DESC LIMIT 1"};

// One row when nothing is open, its price columns null, so that the last change still comes.
constexpr Statement kOpen = {
    "price_open",
    "SELECT " SQL_MICROS("(SELECT max(greatest(valid_from, valid_until)) FROM prices)") ","
    " p.id, p.gpu_model, p.gpu_count, p.amount_minor, p.currency, " SQL_MICROS("p.valid_from")
    " FROM (SELECT 1) one LEFT JOIN prices p ON p.valid_until IS NULL"};

PriceRecord price_from(const pqxx::row& row) {
  return {row[0].as<long long>(), row[1].as<std::string>(), row[2].as<int>(),
          row[3].as<long long>(), row[4].as<std::string>(), read_timestamp(row[5])};
}

std::string entry_field(std::size_t i, const char* field) {
  return "items[" + std::to_string(i) + "]." + field;
}

nlohmann::json price_json(const std::string& model, int count, long long amount) {
  return {{"gpu_model", model}, {"gpu_count", count}, {"amount_minor", amount}};
}

}  // namespace

std::vector<PriceRecord> PriceStore::current(Tx& tx) {
  std::vector<PriceRecord> out;
  for (const auto& row : tx.exec(kCurrent)) out.push_back(price_from(row));
  return out;
}

std::vector<PriceRecord> PriceStore::replace(Tx& tx, const std::vector<PriceEntry>& entries,
                                             const Actor& actor) {
  std::set<std::pair<std::string, int>> seen;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const auto& e = entries[i];
    if (e.gpu_count < 1 || e.gpu_count > 64) {
      throw Error::invalid_field(entry_field(i, "gpu_count"), "must be from 1 to 64");
    }
    if (e.price_per_day.currency() != currency_) {
      throw Error::invalid_field(entry_field(i, "price_per_day.currency"),
                                 "must be " + currency_ + ", the platform's currency");
    }
    if (e.price_per_day.amount_minor() <= 0) {
      throw Error::invalid_field(entry_field(i, "price_per_day.amount_minor"),
                                 "must be greater than zero");
    }
    if (!seen.insert({e.gpu_model, e.gpu_count}).second) {
      throw Error::invalid_field(entry_field(i, "gpu_model"),
                                 "repeats a GPU model and count listed before");
    }
  }
  tx.exec(kLock);
  std::set<std::string> models;
  for (const auto& row : tx.exec(kPriceModels)) models.insert(row[0].as<std::string>());
  for (std::size_t i = 0; i < entries.size(); ++i) {
    if (!models.count(entries[i].gpu_model)) {
      throw Error::invalid_field(entry_field(i, "gpu_model"), "is not a GPU model in the catalog");
    }
  }
  std::map<std::pair<std::string, int>, PriceRecord> before;
  for (const auto& row : tx.exec(kCurrent)) {
    auto r = price_from(row);
    before.emplace(std::make_pair(r.gpu_model, r.gpu_count), r);
  }
  auto at = clock_.now();
  auto now = sql_timestamp(at);
  nlohmann::json set = nlohmann::json::array(), removed = nlohmann::json::array();
  for (const auto& e : entries) {
    auto it = before.find({e.gpu_model, e.gpu_count});
    if (it != before.end()) {
      bool same = it->second.amount_minor == e.price_per_day.amount_minor() &&
                  it->second.currency == e.price_per_day.currency();
      auto old = it->second;
      before.erase(it);
      if (same) continue;
      tx.exec(kClose, old.id, now);
    }
    tx.exec(kInsertPrice, e.gpu_model, e.gpu_count, e.price_per_day.amount_minor(),
            e.price_per_day.currency(), now, actor.user_id);
    set.push_back(price_json(e.gpu_model, e.gpu_count, e.price_per_day.amount_minor()));
  }
  for (const auto& [shape, old] : before) {
    tx.exec(kClose, old.id, now);
    removed.push_back(price_json(old.gpu_model, old.gpu_count, old.amount_minor));
  }
  if (!set.empty() || !removed.empty()) {
    write_audit(tx, at, actor,
                {.org_id = std::nullopt,
                 .action = "prices.set",
                 .target = "prices",
                 .details = {{"currency", currency_}, {"set", set}, {"removed", removed}}});
  }
  std::vector<PriceRecord> out;
  for (const auto& row : tx.exec(kCurrent)) out.push_back(price_from(row));
  return out;
}

OpenPrices PriceStore::open(Tx& tx) {
  OpenPrices out;
  for (const auto& row : tx.exec(kOpen)) {
    if (!row[0].is_null()) out.last_change = read_timestamp(row[0]);
    if (row[1].is_null()) continue;
    out.rows.push_back({row[1].as<long long>(), row[2].as<std::string>(), row[3].as<int>(),
                        row[4].as<long long>(), row[5].as<std::string>(), read_timestamp(row[6])});
  }
  return out;
}

std::optional<PriceRecord> OpenPrices::at(const std::string& gpu_model, int gpu_count,
                                          Timestamp at) const {
  // As kAt orders them: the latest row already in force.
  const PriceRecord* best = nullptr;
  for (const auto& r : rows) {
    if (r.gpu_model != gpu_model || r.gpu_count != gpu_count || r.valid_from > at) continue;
    if (!best || r.valid_from > best->valid_from) best = &r;
  }
  return best ? std::optional<PriceRecord>(*best) : std::nullopt;
}

std::optional<PriceRecord> PriceStore::price_at(Tx& tx, const std::string& gpu_model, int gpu_count,
                                                Timestamp at) {
  auto rows = tx.exec(kAt, gpu_model, gpu_count, sql_timestamp(at));
  return rows.empty() ? std::nullopt : std::optional<PriceRecord>(price_from(rows[0]));
}

}  // namespace gpurent::inventory
