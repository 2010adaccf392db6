// The commands besides serving: `gpurentd migrate`, `gpurentd admin create` and
// `gpurentd keys backup|restore`.
#include "api/app.h"

#include "api/database.h"
#include "api/handlers/auth_handlers.h"
#include "core/clock.h"
#include "core/crypto.h"
#include "core/db_pool.h"
#include "core/error.h"
#include "core/key_backup.h"
#include "identity/identity_store.h"
#include "identity/password.h"

#include <sys/stat.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>

namespace gpurent {

int run_migrate(const Config& config) {
  Database db;
  open_database(config, db);
  migrate(db.url);
  return 0;
}

int run_admin_create(const Config& config, const std::string& email_arg, bool password_from_stdin) {
  std::string email = http::validated_email(email_arg);
  std::string password;
  bool generated = false;
  if (password_from_stdin) {
    std::getline(std::cin, password);
    if (!password.empty() && password.back() == '\r') password.pop_back();
    if (auto why = identity::password_policy_violation(password); !why.empty()) {
      throw ConfigError("password " + why);
    }
  } else {
    // 18 random bytes as hex: 144 bits, shown once and never stored.
    auto raw = crypto::random_bytes(18);
    password = crypto::to_hex(raw.data(), raw.size());
    generated = true;
  }
  Database db;
  open_database(config, db, EmbeddedUse::kShareWithRunningServer);
  migrate(db.url);
  PgPool pool({.url = db.url, .size = 1});
  SystemClock clock;
  identity::IdentityStore store(clock);
  std::string hash = identity::hash_password(password);
  auto user = pool.transact("identity_create_admin", [&](Tx& tx) {
    return store.create_platform_admin(tx, email, hash, {});
  });
  std::printf("created platform admin %s (%s)\n", user.email.c_str(), user.id.c_str());
  if (generated)
    std::printf("password: %s\n(shown once; it is stored only as a hash)\n", password.c_str());
  return 0;
}

int run_keys(const Config& config, const KeysCommand& command) {
  std::string passphrase;
  std::getline(std::cin, passphrase);
  if (!passphrase.empty() && passphrase.back() == '\r') passphrase.pop_back();
  if (!command.restore) {
    auto files = keys::collect(config.agent_pki_dir, config.ssh_ca_dir);
    std::string text = keys::seal(files, passphrase);
    // Written whole under a temporary name, 0600, then renamed: a backup is complete or absent.
    std::string temp = command.file + ".writing";
    {
      std::ofstream out(temp, std::ios::binary | std::ios::trunc);
      ::chmod(temp.c_str(), 0600);
      out << text;
      if (!out.flush()) throw keys::KeyBackupError("cannot write " + temp);
    }
    if (std::rename(temp.c_str(), command.file.c_str()) != 0) {
      throw keys::KeyBackupError("cannot write " + command.file);
    }
    std::printf("backed up %zu key files of %s and %s to %s\n", files.size(),
                config.agent_pki_dir.c_str(), config.ssh_ca_dir.c_str(), command.file.c_str());
    return 0;
  }
  std::ifstream in(command.file, std::ios::binary);
  if (!in) throw keys::KeyBackupError("cannot read " + command.file);
  std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  auto files = keys::open(text, passphrase);
  int written = keys::restore(files, config.agent_pki_dir, config.ssh_ca_dir, command.replace);
  std::printf("restored %d of %zu key files into %s and %s\n", written, files.size(),
              config.agent_pki_dir.c_str(), config.ssh_ca_dir.c_str());
  return 0;
}

}  // namespace gpurent
