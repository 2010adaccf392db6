// Upgrading from the last release (migrations/RELEASES): its fixture, a database that
// release's own gpurentd made and used (tests/fixtures/upgrade/README.md), is loaded into a
// fresh database and migrated by HEAD's migrator. Every row of every table is still there
// with every value it had, the schema is the one a fresh HEAD database has, the ledger passes
// its invariants, and HEAD's gpurentd answers what the release answered about the rentals and
// money that no lifecycle run can change any more, and takes a new booking.
#include "core/embedded_postgres.h"
#include "core/migrator.h"
#include "core/subprocess.h"
#include "migrations/embedded_migrations.h"
#include "tests/chaos/invariants.h"
#include "tests/support/http_client.h"
#include "tests/support/paths.h"
#include "tests/support/pg_harness.h"
#include "tests/support/server_process.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <pqxx/pqxx>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace gpurent::testing::upgrade_e2e {

using nlohmann::json;

struct Release {
  std::string version, commit, last_migration, fixture;
};

// The newest line of migrations/RELEASES.
Release last_release() {
  std::ifstream in(source_dir() + "/migrations/RELEASES");
  Release last;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    Release r;
    if (fields >> r.version >> r.commit >> r.last_migration >> r.fixture) last = r;
  }
  return last;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// What a table holds, over the columns it had before the upgrade.
struct TableRows {
  std::vector<std::string> columns;
  long long rows = 0;
  std::string digest;  // md5 of every row as text over `columns`, in order
};

// Every base table of the public schema: its columns now, or those of `before`'s tables.
// The migrator's own table gains a row per migration applied: only the release's rows
// (versions up to `release_version`) are its to keep.
std::map<std::string, TableRows> snapshot(const std::string& url,
                                          const std::map<std::string, TableRows>* before,
                                          int release_version) {
  pqxx::connection c(url);
  pqxx::read_transaction tx(c);
  std::map<std::string, TableRows> out;
  if (before) {
    for (const auto& [table, t] : *before) out[table].columns = t.columns;
  } else {
    for (const auto& row :
         tx.exec("SELECT c.table_name, c.column_name FROM information_schema.columns c"
                 " JOIN information_schema.tables t USING (table_schema, table_name)"
                 " WHERE c.table_schema = 'public' AND t.table_type = 'BASE TABLE'"
                 " ORDER BY c.table_name, c.ordinal_position")) {
      out[row[0].as<std::string>()].columns.push_back(row[1].as<std::string>());
    }
  }
  for (auto& [table, t] : out) {
    std::string columns;
    for (const auto& column : t.columns) {
      columns += (columns.empty() ? "" : ", ") + tx.quote_name(column);
    }
    // Identifiers from the catalog, quoted: there is no parameter for a column list.
    std::string rows =
        table == "schema_migrations" ? " WHERE version <= " + std::to_string(release_version) : "";
    auto r = tx.exec(
        "SELECT count(*), md5(coalesce(string_agg(r::text, E'\\n' ORDER BY"
        " r::text), '')) FROM (SELECT " +
        columns + " FROM " + tx.quote_name(table) + rows + ") r");
    t.rows = r[0][0].as<long long>();
    t.digest = r[0][1].as<std::string>();
  }
  return out;
}

// `pg_dump --schema-only` of the database, without its \\restrict guard (a random key per
// dump).
std::string dump_schema(const std::string& url) {
  auto r = run_subprocess({EmbeddedPostgresOptions{}.bin_dir + "/pg_dump", "--schema-only",
                           "--no-owner", "--no-privileges", url});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  std::string out;
  std::istringstream in(r.output);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("\\restrict ", 0) != 0 && line.rfind("\\unrestrict ", 0) != 0) {
      out += line + "\n";
    }
  }
  return out;
}

// The schema as it reads after one trip through pg_dump and back: PostgreSQL prints an
// expression it parsed from a dump more flatly than the one it parsed from the migration
// (`(a OR b) OR c` comes back as `a OR b OR c`), and the fixture made that trip; the same
// trip for both sides leaves only real differences.
std::string schema_of(const std::string& url) {
  std::string dir = make_temp_dir("gpurent-upgrade-schema");
  std::ofstream(dir + "/schema.sql") << dump_schema(url);
  TestDatabase scratch(TestDatabase::Kind::kEmpty);
  auto loaded =
      run_subprocess({EmbeddedPostgresOptions{}.bin_dir + "/psql", "-X", "-q", "-v",
                      "ON_ERROR_STOP=1", "--dbname=" + scratch.url(), "-f", dir + "/schema.sql"});
  std::filesystem::remove_all(dir);
  EXPECT_EQ(loaded.exit_code, 0) << loaded.output;
  return dump_schema(scratch.url());
}

// The first lines where two texts part, with a few lines of context; empty when they agree.
std::string first_difference(const std::string& a, const std::string& b) {
  auto lines = [](const std::string& text) {
    std::vector<std::string> out;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) out.push_back(line);
    return out;
  };
  auto la = lines(a), lb = lines(b);
  std::size_t i = 0;
  while (i < la.size() && i < lb.size() && la[i] == lb[i]) ++i;
  if (i == la.size() && i == lb.size()) return "";
  std::string out = "line " + std::to_string(i + 1) + ":\n";
  for (std::size_t k = i; k < i + 4; ++k) {
    out += "  upgraded: " + (k < la.size() ? la[k] : "<end>") + "\n";
    out += "  fresh:    " + (k < lb.size() ? lb[k] : "<end>") + "\n";
  }
  return out;
}

// Whether `now` says all that `then` said: every member of an object with an equal value,
// arrays of the same length element by element. `now` may say more: a newer release adds
// fields, never takes them away.
void expect_says(const json& then, const json& now, const std::string& where) {
  if (then.is_object()) {
    ASSERT_TRUE(now.is_object()) << where << ": " << now.dump();
    for (const auto& [key, value] : then.items()) {
      if (!now.contains(key)) {
        ADD_FAILURE() << where << "." << key << " is gone";
        continue;
      }
      expect_says(value, now[key], where + "." + key);
    }
  } else if (then.is_array()) {
    ASSERT_TRUE(now.is_array()) << where << ": " << now.dump();
    ASSERT_EQ(now.size(), then.size()) << where << ": " << now.dump();
    for (std::size_t i = 0; i < then.size(); ++i) {
      expect_says(then[i], now[i], where + "[" + std::to_string(i) + "]");
    }
  } else {
    EXPECT_EQ(now, then) << where;
  }
}

struct Session {
  std::string cookie, csrf;
  std::map<std::string, std::string> headers() const {
    return {{"Cookie", cookie}, {"X-CSRF-Token", csrf}};
  }
};

Session login(int port, const std::string& email, const std::string& password) {
  auto r = http_request(port, "POST", "/v1/auth/login",
                        json{{"email", email}, {"password", password}}.dump(),
                        {{"Content-Type", "application/json"}});
  EXPECT_EQ(r.status, 200) << email << ": " << r.body;
  if (r.status != 200) return {};
  std::string cookie = r.header("set-cookie");
  return {cookie.substr(0, cookie.find(';')), r.json().value("csrf_token", "")};
}

TEST(UpgradeE2E, TheLastReleasesDatabaseMigratesToHeadWithNothingLostAndIsServed) {
  const Release release = last_release();
  ASSERT_FALSE(release.fixture.empty()) << "migrations/RELEASES names no release";
  const std::string fixture = source_dir() + "/" + release.fixture;
  const json expected = json::parse(
      read_file(fixture.substr(0, fixture.size() - std::string(".sql").size()) + ".expected.json"));
  const int release_version = std::stoi(release.last_migration.substr(0, 4));
  const auto head = embedded_migrations();

  // ---- The release's database, as it was ----
  TestDatabase db(TestDatabase::Kind::kEmpty);
  auto loaded = run_subprocess({EmbeddedPostgresOptions{}.bin_dir + "/psql", "-X", "-q", "-v",
                                "ON_ERROR_STOP=1", "--dbname=" + db.url(), "-f", fixture});
  ASSERT_EQ(loaded.exit_code, 0) << loaded.output;
  {
    pqxx::connection c(db.url());
    pqxx::read_transaction tx(c);
    ASSERT_EQ(tx.exec("SELECT max(version) FROM schema_migrations")[0][0].as<int>(),
              release_version)
        << "the fixture is not a database of release " << release.version;
  }
  const auto before = snapshot(db.url(), nullptr, release_version);
  // The fixture carries what it is meant to: a fleet, people, money, every rental state.
  for (const char* table : {"orgs", "users", "nodes", "rentals", "allocations", "ledger_entries",
                            "billing_holds", "billing_charges", "invoices", "invoice_lines",
                            "agent_tasks", "webhook_deliveries", "health_events"}) {
    ASSERT_TRUE(before.contains(table)) << table;
    EXPECT_GT(before.at(table).rows, 0) << table << " is empty in the fixture";
  }

  // ---- HEAD's migrator, as gpurentd runs it at start ----
  MigrationStatus status = Migrator(db.url(), head).migrate();
  EXPECT_EQ(status.applied, release_version);
  EXPECT_EQ(status.pending, static_cast<int>(head.size()) - release_version);
  {
    pqxx::connection c(db.url());
    pqxx::read_transaction tx(c);
    EXPECT_EQ(tx.exec("SELECT count(*) FROM schema_migrations")[0][0].as<std::size_t>(),
              head.size());
  }

  // Every row of every table, with every value, over the columns the release had. A migration
  // that is meant to change rows (a backfill) says here which, and the test checks them.
  const auto after = snapshot(db.url(), &before, release_version);
  for (const auto& [table, t] : before) {
    EXPECT_EQ(after.at(table).rows, t.rows) << table;
    EXPECT_EQ(after.at(table).digest, t.digest) << table << ": a row changed or went";
  }
  // The upgraded schema is the one HEAD makes from nothing.
  {
    TestDatabase fresh;
    EXPECT_EQ(first_difference(schema_of(db.url()), schema_of(fresh.url())), "");
  }
  // Money and rentals, spot by spot.
  {
    pqxx::connection c(db.url());
    pqxx::read_transaction tx(c);
    for (const auto& [state, id] : expected["rentals"].items()) {
      auto r = tx.exec_params("SELECT state FROM rentals WHERE id = $1", id.get<std::string>());
      ASSERT_EQ(r.size(), 1u) << id;
      EXPECT_EQ(r[0][0].as<std::string>(), state) << id;
    }
    const json& balance = expected["answers"]["second /v1/billing/balance"];
    auto account =
        tx.exec_params("SELECT available_minor, held_minor FROM billing_accounts WHERE org_id = $1",
                       expected["orgs"]["second"].get<std::string>());
    ASSERT_EQ(account.size(), 1u);
    EXPECT_EQ(account[0][0].as<long long>(), balance["available"]["amount_minor"].get<long long>());
    EXPECT_EQ(account[0][1].as<long long>(), balance["held"]["amount_minor"].get<long long>());
  }
  std::string violations;
  for (const auto& v : chaos::check_database(db.url())) violations += v.invariant + ": " + v.detail;
  EXPECT_EQ(violations, "");

  // ---- HEAD's gpurentd serves it ----
  ServerProcess server({.database_url = db.url(),
                        .flags = {"--rate_limit_per_credential=0", "--rate_limit_per_ip=0"}});
  EXPECT_NE(server.logs().find("already applied, 0 applied now"), std::string::npos)
      << "nothing left to migrate";
  std::map<std::string, Session> sessions;
  for (const auto& role : {"customer", "second"}) {
    std::string email =
        role == std::string("customer") ? "demo@gpurent.local" : "ops@second.example";
    sessions[role] = login(server.port(), email, expected["passwords"][email]);
  }
  // What the release answered about rentals in final states and the second org's money.
  for (const auto& [request, then] : expected["answers"].items()) {
    std::string role = request.substr(0, request.find(' '));
    std::string path = request.substr(request.find(' ') + 1);
    auto r = http_request(server.port(), "GET", path, "", sessions[role].headers());
    ASSERT_EQ(r.status, 200) << request << ": " << r.body;
    expect_says(then, r.json(), request);
  }
  // The release's API tokens still work.
  auto by_token = http_request(
      server.port(), "GET", "/v1/rentals?limit=100", "",
      {{"Authorization", "Bearer " + expected["tokens"]["second"].get<std::string>()}});
  ASSERT_EQ(by_token.status, 200) << by_token.body;
  expect_says(expected["answers"]["second /v1/rentals?limit=100"], by_token.json(), "token");

  // New work goes on top: a booking, with its hold, on the upgraded schema.
  auto images =
      http_request(server.port(), "GET", "/v1/images", "", sessions["customer"].headers());
  std::string image;
  const json listed = images.json();
  for (const auto& i : listed["items"]) {
    if (i["name"] == "ubuntu22.04-cuda12.4-pytorch2.5") image = i["id"];
  }
  ASSERT_FALSE(image.empty()) << images.body;
  auto headers = sessions["customer"].headers();
  headers["Content-Type"] = "application/json";
  auto booked = http_request(server.port(), "POST", "/v1/rentals",
                             json{{"gpu_model", "H100-SXM5-80GB"},
                                  {"gpu_count", 1},
                                  {"start", "now"},
                                  {"days", 1},
                                  {"image_id", image}}
                                 .dump(),
                             headers);
  EXPECT_EQ(booked.status, 201) << booked.body;
  violations.clear();
  for (const auto& v : chaos::check_database(db.url())) violations += v.invariant + ": " + v.detail;
  EXPECT_EQ(violations, "");

  // When the next release's first replica migrates, this one stays ready: the rule keeps it
  // working on the newer schema. (Here the next release's migration is only its record.)
  {
    pqxx::connection c(db.url());
    pqxx::work tx(c);
    tx.exec_params("INSERT INTO schema_migrations (version, name, checksum) VALUES ($1, $2, $3)",
                   head.back().version + 1, "next_release.sql", "none");
    tx.commit();
  }
  auto ready = http_request(server.port(), "GET", "/readyz");
  EXPECT_EQ(ready.status, 200) << ready.body;
}

}  // namespace gpurent::testing::upgrade_e2e
