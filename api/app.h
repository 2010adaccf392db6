// gpurentd's lifecycle: database (embedded or external), migrations, routes, HTTP server.
#pragma once

#include "core/config.h"

#include <string>

namespace gpurent {

// Runs the server until SIGINT/SIGTERM; returns the process exit code.
int run_server(const Config& config);

// Creates a platform admin (`gpurentd admin create --email E [--password-stdin]`): the
// password comes from the first line of stdin or is generated and printed once.
int run_admin_create(const Config& config, const std::string& email, bool password_from_stdin);

// Applies pending migrations and exits; returns the process exit code.
int run_migrate(const Config& config);

// `gpurentd keys backup --out FILE` / `keys restore --in FILE [--replace]`: the CAs' keys of
// agent_pki_dir and ssh_ca_dir (core/key_backup.h), under the passphrase on stdin's first
// line. Throws keys::KeyBackupError for what the operator must fix.
struct KeysCommand {
  bool restore = false;
  std::string file;
  bool replace = false;
};
int run_keys(const Config& config, const KeysCommand& command);

}  // namespace gpurent
