// The demo admin, customer and fleet.
#include "api/demo_seed.h"

#include "core/crypto.h"
#include "core/log.h"
#include "core/money.h"
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

// A generated password: 24 hex digits.
std::string new_password() {
  auto raw = crypto::random_bytes(12);
  return crypto::to_hex(raw.data(), raw.size());
}

// What `file` keeps ("" when it is gone).
std::string kept_password(const std::string& file) {
  std::string password;
  std::ifstream(file) >> password;
  return password;
}

// Owner-only (0600) before the password goes in.
void keep_password(const std::string& file, const std::string& password) {
  namespace fs = std::filesystem;
  fs::create_directories(fs::path(file).parent_path());
  { std::ofstream(file, std::ios::trunc); }
  fs::permissions(file, fs::perms::owner_read | fs::perms::owner_write);
  std::ofstream(file, std::ios::trunc) << password << "\n";
}

// The demo customer, made once: a user in its own org, with a demo balance as a top-up the
// admin gave. Its password, or "" when the user exists and its password file is gone.
std::string seed_demo_customer(const Config& config, PgPool& pool, identity::IdentityStore& store,
                               billing::TopUps& top_ups, const std::string& admin_id,
                               const std::string& secret_file) {
  auto exists = pool.read("identity_find_login", [&](Tx& tx) {
    return store.find_login(tx, kDemoCustomerEmail).has_value();
  });
  if (exists) return kept_password(secret_file);
  std::string password = new_password();
  std::string hash = identity::hash_password(password);
  pool.transact("demo_customer_seed", [&](Tx& tx) {
    auto [user, org] = store.create_user_with_org(tx, kDemoCustomerEmail, hash, kDemoCustomerOrg,
                                                  {.request_id = "demo-seed"});
    top_ups.credit(tx, org.id, Money(kDemoBalanceMinor, config.currency),
                   billing::CreditKind::kTopUp, "Demo balance", admin_id);
    return user.id;
  });
  keep_password(secret_file, password);
  log::info("seeded the demo customer {} in org \"{}\" with a demo balance", kDemoCustomerEmail,
            kDemoCustomerOrg);
  return password;
}

}  // namespace

// The admin's and the customer's generated passwords are kept beside the data folder (mode
// 0600) so every start can print the logins.
void seed_demo(const Config& config, PgPool& pool, identity::IdentityStore& store,
               const inventory::DemoFleetStores& fleet, billing::TopUps& top_ups) {
  constexpr const char* kEmail = "admin@gpurent.local";
  std::filesystem::path dir = std::filesystem::path(config.data_dir).parent_path();
  std::string secret_file = (dir / "demo-admin-password").string();
  std::string customer_file = (dir / "demo-customer-password").string();
  std::string password = kept_password(secret_file);
  auto find_admin = [&] {
    return pool.read("identity_find_login", [&](Tx& tx) { return store.find_login(tx, kEmail); });
  };
  if (!find_admin()) {
    password = new_password();
    std::string hash = identity::hash_password(password);
    pool.transact("identity_create_admin",
                  [&](Tx& tx) { return store.create_platform_admin(tx, kEmail, hash, {}); });
    keep_password(secret_file, password);
  }
  auto admin = find_admin();
  if (admin && inventory::seed_demo_fleet(
                   pool, fleet, {.user_id = admin->first.id, .request_id = "demo-seed"})) {
    log::info("seeded the demo fleet: one site, eight nodes, five images, a price list");
  }
  std::string customer_password;
  if (admin) {
    write_demo_agents(config, pool, fleet, {.user_id = admin->first.id, .request_id = "demo-seed"});
    customer_password =
        seed_demo_customer(config, pool, store, top_ups, admin->first.id, customer_file);
  }
  if (password.empty()) {
    log::warn("demo admin {} exists but its password file {} is gone", kEmail, secret_file);
  }
  if (customer_password.empty()) {
    log::warn("demo customer {} exists but its password file {} is gone", kDemoCustomerEmail,
              customer_file);
  }
  std::printf("\n");
  if (!password.empty()) {
    std::printf("  demo admin login: %s  password: %s\n", kEmail, password.c_str());
  }
  if (!customer_password.empty()) {
    std::printf("  demo customer login: %s  password: %s\n", kDemoCustomerEmail,
                customer_password.c_str());
  }
  std::printf("\n");
  std::fflush(stdout);
}

}  // namespace gpurent
