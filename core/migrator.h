// Applies numbered, forward-only SQL migrations exactly once, safely from many replicas.
#pragma once

#include "core/embedded_file.h"

#include <string>
#include <vector>

namespace gpurent {

struct Migration {
  int version;       // from the file name: 0007_add_rentals.sql → 7
  std::string name;  // the file name
  std::string sql;
  std::string checksum;  // SHA-256 of sql
};

struct MigrationStatus {
  int applied = 0;  // migrations already recorded before this run
  int pending = 0;  // migrations this run applied (or would apply, for a check)
};

// Builds the ordered list from files named NNNN_description.sql. Throws std::runtime_error
// on a badly named file or two files with one number.
std::vector<Migration> migrations_from_files(const std::vector<EmbeddedFile>& files);

class Migrator {
 public:
  Migrator(std::string database_url, std::vector<Migration> migrations);

  // Takes a PostgreSQL advisory lock (so replicas starting together wait for each other),
  // verifies the applied migrations' checksums, then applies the pending ones in order,
  // each in its own transaction together with its record. Throws MigrationError when an
  // applied file changed, an applied migration is unknown to this binary, or a new file
  // is numbered below one that is already applied.
  MigrationStatus migrate();

  // The same checks without applying anything; `pending` counts what migrate() would do.
  MigrationStatus check();

 private:
  MigrationStatus run(bool apply);

  std::string url_;
  std::vector<Migration> migrations_;
};

class MigrationError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace gpurent
