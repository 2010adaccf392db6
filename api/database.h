// Which PostgreSQL a command uses: DATABASE_URL when set, otherwise the embedded cluster in
// the data folder.
#pragma once

#include "core/config.h"
#include "core/embedded_postgres.h"

#include <optional>
#include <string>

namespace gpurent {

// Holds the embedded cluster when no DATABASE_URL is given.
struct Database {
  std::optional<EmbeddedPostgres> embedded;
  std::string url;
};

// Whether a command may use the embedded cluster of a gpurentd already serving from the
// same data folder, rather than refusing because that gpurentd holds the folder.
enum class EmbeddedUse { kOwn, kShareWithRunningServer };

void open_database(const Config& config, Database& db, EmbeddedUse use = EmbeddedUse::kOwn);

// The newest migration this build carries.
int expected_schema_version();

// Applies pending migrations and logs what it did.
void migrate(const std::string& url);

}  // namespace gpurent
