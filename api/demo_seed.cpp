// The demo admin and fleet.
#include "api/demo_seed.h"

#include "core/crypto.h"
#include "core/log.h"
#include "identity/password.h"

#include <cstdio>
#include <filesystem>
#include <fstream>

namespace gpurent {

// The admin's generated password is kept beside the data folder (mode 0600) so every
// start can print the login.
void seed_demo(const Config& config, PgPool& pool, identity::IdentityStore& store,
               const inventory::DemoFleetStores& fleet) {
  constexpr const char* kEmail = "admin@gpurent.local";
  std::string secret_file =
      (std::filesystem::path(config.data_dir).parent_path() / "demo-admin-password").string();
  std::string password;
  std::ifstream(secret_file) >> password;
  auto find_admin = [&] {
    return pool.read("identity_find_login", [&](Tx& tx) { return store.find_login(tx, kEmail); });
  };
  if (!find_admin()) {
    auto raw = crypto::random_bytes(12);
    password = crypto::to_hex(raw.data(), raw.size());
    std::string hash = identity::hash_password(password);
    pool.transact("identity_create_admin",
                  [&](Tx& tx) { return store.create_platform_admin(tx, kEmail, hash, {}); });
    std::filesystem::create_directories(std::filesystem::path(secret_file).parent_path());
    std::ofstream(secret_file) << password << "\n";
    std::filesystem::permissions(
        secret_file, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  }
  if (auto admin = find_admin();
      admin && inventory::seed_demo_fleet(
                   pool, fleet, {.user_id = admin->first.id, .request_id = "demo-seed"})) {
    log::info("seeded the demo fleet: one site, eight nodes, five images, a price list");
  }
  if (password.empty()) {
    log::warn("demo admin {} exists but its password file {} is gone", kEmail, secret_file);
    return;
  }
  std::printf("\n  demo admin login: %s  password: %s\n\n", kEmail, password.c_str());
  std::fflush(stdout);
}

}  // namespace gpurent
