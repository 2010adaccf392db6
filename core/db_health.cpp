// Readiness query and the test-mode connection holder.
#include "core/db_health.h"

namespace gpurent {
namespace {

// Two statements: a query naming a missing table fails at planning, even in a dead branch.
constexpr Statement kHasMigrationsTable = {"has_migrations_table",
                                           "SELECT to_regclass('schema_migrations') IS NOT NULL"};
constexpr Statement kSchemaVersion = {"schema_version",
                                      "SELECT coalesce(max(version), 0) FROM schema_migrations"};

constexpr Statement kSleep = {"test_sleep", "SELECT pg_sleep($1::double precision / 1000)"};

}  // namespace

DbHealth check_database(PgPool& pool) {
  DbHealth health;
  try {
    health.schema_version = pool.read("readiness", [](Tx& tx) {
      if (!tx.exec(kHasMigrationsTable)[0][0].as<bool>()) return 0;
      return tx.exec(kSchemaVersion)[0][0].as<int>();
    });
    health.reachable = true;
  } catch (const std::exception& e) {
    health.error = e.what();
  }
  return health;
}

void hold_database_connection(PgPool& pool, std::chrono::milliseconds duration) {
  pool.read("test_sleep",
            [&](Tx& tx) { tx.exec(kSleep, static_cast<long long>(duration.count())); });
}

}  // namespace gpurent
