// Opening the database a command uses.
#include "api/database.h"

#include "core/log.h"
#include "core/migrator.h"
#include "migrations/embedded_migrations.h"

namespace gpurent {

void open_database(const Config& config, Database& db, EmbeddedUse use) {
  if (!config.database_url.empty()) {
    db.url = config.database_url;
    return;
  }
  EmbeddedPostgresOptions options{.data_dir = config.data_dir};
  if (use == EmbeddedUse::kShareWithRunningServer) {
    // The serving gpurentd owns its cluster: reach it through its socket, taking no lock
    // and starting or stopping nothing.
    if (auto url = EmbeddedPostgres::running_server_url(options)) {
      db.url = *url;
      log::info("using the embedded PostgreSQL of the gpurentd serving from {}", config.data_dir);
      return;
    }
  }
  db.embedded.emplace(options);
  db.embedded->start();
  db.url = db.embedded->url();
  log::info("embedded PostgreSQL ready in {}", db.embedded->data_dir());
}

int expected_schema_version() {
  const auto& all = embedded_migrations();
  return all.empty() ? 0 : all.back().version;
}

void migrate(const std::string& url) {
  auto status = Migrator(url, embedded_migrations()).migrate();
  log::info("migrations: {} already applied, {} applied now", status.applied, status.pending);
}

}  // namespace gpurent
