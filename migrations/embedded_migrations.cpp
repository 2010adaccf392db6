// Parses the embedded migration files once.
#include "migrations/embedded_migrations.h"

namespace gpurent {

const std::vector<Migration>& embedded_migrations() {
  static const std::vector<Migration> kMigrations =
      migrations_from_files(embedded_migration_files());
  return kMigrations;
}

}  // namespace gpurent
