// The commands besides serving: `gpurentd migrate` and `gpurentd admin create`.
#include "api/app.h"

#include "api/database.h"
#include "api/handlers/auth_handlers.h"
#include "core/clock.h"
#include "core/crypto.h"
#include "core/db_pool.h"
#include "core/error.h"
#include "identity/identity_store.h"
#include "identity/password.h"

#include <cstdio>
#include <iostream>

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

}  // namespace gpurent
