// The migrations compiled into this binary, in order.
#pragma once

#include "core/embedded_file.h"
#include "core/migrator.h"

#include <vector>

namespace gpurent {

// The raw .sql files of migrations/ (generated at build time).
std::vector<EmbeddedFile> embedded_migration_files();

// The same, parsed and ordered for the Migrator.
const std::vector<Migration>& embedded_migrations();

}  // namespace gpurent
