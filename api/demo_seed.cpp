// The demo admin and fleet.
#include "api/demo_seed.h"

#include "core/crypto.h"
#include "core/log.h"
#include "identity/password.h"

#include <cstdio>
#include <filesystem>
#include <fstream>

namespace gpurent {

namespace {

// `demo-agents` beside the data folder (mode 0600), one line per demo node:
// `node_id token gpus interconnect nvlink_kind|-`, for scripts/run-demo, which enrols a
// simulated gpurent-agent with the token where it has no certificate yet and runs it.
void write_demo_agents(const Config& config, PgPool& pool, const inventory::DemoFleetStores& fleet,
                       const Actor& actor) {
  namespace fs = std::filesystem;
  fs::path file = fs::path(config.data_dir).parent_path() / "demo-agents";
  std::string text;
  for (const auto& seat : inventory::demo_agent_seats(pool, fleet, actor)) {
    text += seat.node_id + " " + seat.token + " " + std::to_string(seat.gpu_count) + " " +
            seat.interconnect + " " + (seat.nvlink_kind.empty() ? "-" : seat.nvlink_kind) + "\n";
  }
  fs::create_directories(file.parent_path());
  // Owner-only before the tokens go in.
  { std::ofstream(file, std::ios::trunc); }
  fs::permissions(file, fs::perms::owner_read | fs::perms::owner_write);
  std::ofstream(file, std::ios::trunc) << text;
}

}  // namespace

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
  if (auto admin = find_admin()) {
    write_demo_agents(config, pool, fleet, {.user_id = admin->first.id, .request_id = "demo-seed"});
  }
  if (password.empty()) {
    log::warn("demo admin {} exists but its password file {} is gone", kEmail, secret_file);
    return;
  }
  std::printf("\n  demo admin login: %s  password: %s\n\n", kEmail, password.c_str());
  std::fflush(stdout);
}

}  // namespace gpurent
