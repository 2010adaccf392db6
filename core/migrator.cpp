// Migrator: advisory-locked, checksummed, one transaction per migration.
#include "core/migrator.h"

#include "core/crypto.h"
#include "core/log.h"

#include <pqxx/pqxx>

#include <algorithm>
#include <map>

namespace gpurent {
namespace {

// Any fixed 64-bit number; every replica must use the same one.
constexpr long long kMigrationLockKey = 0x67707572656e74;  // "gpurent"

constexpr const char* kCreateTable =
    "CREATE TABLE IF NOT EXISTS schema_migrations ("
    " version integer PRIMARY KEY,"
    " name text NOT NULL,"
    " checksum text NOT NULL,"
    " applied_at timestamptz NOT NULL DEFAULT now())";

struct Applied {
  std::string name;
  std::string checksum;
};

}  // namespace

std::vector<Migration> migrations_from_files(const std::vector<EmbeddedFile>& files) {
  std::vector<Migration> out;
  for (const auto& f : files) {
    std::size_t digits = 0;
    while (digits < f.name.size() && std::isdigit(static_cast<unsigned char>(f.name[digits]))) {
      ++digits;
    }
    bool ok = digits >= 1 && digits <= 6 && f.name.size() > digits + 5 && f.name[digits] == '_' &&
              f.name.ends_with(".sql");
    if (!ok) throw MigrationError("migration file " + f.name + " is not named NNNN_name.sql");
    out.push_back(
        {std::stoi(f.name.substr(0, digits)), f.name, f.content, crypto::sha256_hex(f.content)});
  }
  std::sort(out.begin(), out.end(),
            [](const Migration& a, const Migration& b) { return a.version < b.version; });
  for (std::size_t i = 1; i < out.size(); ++i) {
    if (out[i].version == out[i - 1].version) {
      throw MigrationError("migrations " + out[i - 1].name + " and " + out[i].name +
                           " have the same number");
    }
  }
  return out;
}

Migrator::Migrator(std::string database_url, std::vector<Migration> migrations)
    : url_(std::move(database_url)), migrations_(std::move(migrations)) {}

MigrationStatus Migrator::migrate() {
  return run(true);
}
MigrationStatus Migrator::check() {
  return run(false);
}

MigrationStatus Migrator::run(bool apply) {
  pqxx::connection conn(url_);
  {
    // A session-level lock: released when this connection closes, even if we crash.
    pqxx::nontransaction tx(conn, "migration_lock");
    if (apply) {
      tx.exec_params("SELECT pg_advisory_lock($1)", kMigrationLockKey);
      tx.exec(kCreateTable);
    }
  }

  std::map<int, Applied> applied;
  bool has_table = true;
  if (!apply) {
    pqxx::read_transaction tx(conn, "migration_table");
    has_table = !tx.exec("SELECT to_regclass('schema_migrations')")[0][0].is_null();
  }
  if (has_table) {
    pqxx::read_transaction tx(conn, "migration_list");
    for (const auto& row : tx.exec("SELECT version, name, checksum FROM schema_migrations")) {
      applied[row[0].as<int>()] = {row[1].as<std::string>(), row[2].as<std::string>()};
    }
  }

  std::map<int, const Migration*> known;
  for (const auto& m : migrations_) known[m.version] = &m;
  for (const auto& [version, a] : applied) {
    auto it = known.find(version);
    if (it == known.end()) {
      throw MigrationError("the database has migration " + a.name +
                           " applied, which this build does not have; is it older than the "
                           "database?");
    }
    if (it->second->checksum != a.checksum) {
      throw MigrationError("migration " + it->second->name +
                           " was changed after it was applied (recorded checksum " +
                           a.checksum.substr(0, 12) + ", file " +
                           it->second->checksum.substr(0, 12) +
                           "); add a new migration instead of editing an applied one");
    }
  }
  int highest = applied.empty() ? 0 : applied.rbegin()->first;

  MigrationStatus status;
  status.applied = static_cast<int>(applied.size());
  for (const auto& m : migrations_) {
    if (applied.count(m.version)) continue;
    if (m.version < highest) {
      throw MigrationError("migration " + m.name + " is numbered below " + applied[highest].name +
                           ", which is already applied; give it a higher number");
    }
    ++status.pending;
    if (!apply) continue;
    log::info("applying migration {}", m.name);
    pqxx::work tx(conn, "migration_apply");
    try {
      tx.exec(m.sql);
    } catch (const pqxx::sql_error& e) {
      // Name the file: the database's message alone does not say which migration failed.
      throw MigrationError("migration " + m.name + " failed: " + e.what());
    }
    tx.exec_params("INSERT INTO schema_migrations (version, name, checksum) VALUES ($1, $2, $3)",
                   m.version, m.name, m.checksum);
    tx.commit();
  }
  return status;
}

}  // namespace gpurent
