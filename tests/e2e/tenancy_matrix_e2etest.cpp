// One table of every tenant-owned route, checked across tenants, roles, token scopes, revoked
// and expired tokens, and session credentials: a new route is one more row in endpoint_cases().
#include "core/clock.h"
#include "core/id.h"
#include "core/subprocess.h"
#include "tests/support/contract_check.h"
#include "tests/support/funding.h"
#include "tests/support/http_client.h"
#include "tests/support/pg_harness.h"
#include "tests/support/server_process.h"

#include <gtest/gtest.h>

#include <pqxx/pqxx>

#include <cstdio>
#include <fstream>
#include <functional>
#include <optional>
#include <set>

namespace gpurent::testing::tenancy_matrix_e2e {

using Headers = std::map<std::string, std::string>;
using Json = nlohmann::json;

const std::vector<std::string> kRoles = {"owner", "admin", "member", "billing", "viewer"};
const std::vector<std::string> kAllScopes = {"rentals:read",   "rentals:write", "billing:read",
                                             "ssh-keys:write", "members:write", "tokens:write"};
// What GET /v1/me reports for a session of each role (api/auth.cpp scopes_for_role).
const std::map<std::string, std::vector<std::string>> kRoleScopes = {
    {"owner", kAllScopes},
    {"admin", kAllScopes},
    {"member", {"rentals:read", "rentals:write", "ssh-keys:write", "tokens:write"}},
    {"billing", {"rentals:read", "billing:read"}},
    {"viewer", {"rentals:read"}},
};
const std::set<std::string> kEveryRole(kRoles.begin(), kRoles.end());

// Someone acting for one org: a browser session (cookie and CSRF token) or an API token.
struct Actor {
  std::string label;
  std::string email;
  std::string user_id;
  std::string org_id;
  std::string cookie;  // "gpurent_session=…"
  std::string csrf;
  std::string token;  // "gpr_…"
  std::string token_id;

  Headers credentials() const {
    if (!token.empty()) return {{"Authorization", "Bearer " + token}};
    return {{"Cookie", cookie}, {"X-CSRF-Token", csrf}};
  }
};

// One request of a row, ready to send: its body (none for GET and DELETE) and the id that
// fills the path's "{…}".
struct Prepared {
  std::optional<Json> body;
  std::string id;
  std::string query;  // appended to the target: "?timeout_s=0"
  std::string id2;    // fills a second "{…}" (a rental's notice)
};

class TenancyMatrixE2E;

struct EndpointCase {
  std::string method;
  std::string path;  // the route's pattern; "{…}" is filled with Prepared::id
  // A fresh valid request acting on the org that `owner` (an owner's session) acts for.
  std::function<Prepared(TenancyMatrixE2E&, const Actor& owner)> prepare;
  std::optional<std::string> scope;  // the scope the route requires, if any
  std::set<std::string> roles;       // the roles whose sessions may call it
  int success;                       // the status when allowed
  // The request names one object of the org (in its path or body): another org using it gets
  // 404. Otherwise the route acts on the caller's own org (a list, a create).
  bool names_object;
  // Only a panel session may call it: an API token gets 403 (a token cannot switch orgs).
  bool sessions_only = false;
  // A GET without an object lists what the org owns (checked for leaks of another org's
  // ids and for changes); false for the catalog's capacity views, which list none.
  bool lists_org_objects = true;

  std::string target(const Prepared& p) const {
    auto open = path.find('{');
    if (open == std::string::npos) return path + p.query;
    std::string out = path.substr(0, open) + p.id + path.substr(path.find('}', open) + 1);
    if (auto second = out.find('{'); second != std::string::npos) {
      out = out.substr(0, second) + p.id2 + out.substr(out.find('}', second) + 1);
    }
    return out + p.query;
  }
  std::string cell(const std::string& who) const { return method + " " + path + " as " + who; }
};

const std::vector<EndpointCase>& endpoint_cases();

class TenancyMatrixE2E : public ::testing::Test {
 public:
  struct BareUser {
    std::string id;
    std::string email;
  };

  HttpResult send(const std::string& method, const std::string& path,
                  const std::optional<Json>& body, Headers headers) {
    std::string text;
    if (body) {
      text = body->dump();
      headers.emplace("Content-Type", "application/json");
    }
    if (!contract_) {
      contract_ = std::make_unique<ContractCheck>(
          http_request(server_->port(), "GET", "/v1/openapi.json").json());
    }
    HttpResult r = http_request(server_->port(), method, path, text, headers);
    // Every cell's answer, refusal or success, is one the document describes.
    for (const auto& problem :
         contract_->response(method, path, r.status, r.header("content-type"), r.body)) {
      ADD_FAILURE() << "the response disagrees with /v1/openapi.json: " << problem;
    }
    return r;
  }
  HttpResult run(const EndpointCase& c, const Prepared& p, const Headers& credentials) {
    return send(c.method, c.target(p), p.body, credentials);
  }

  std::string fresh_email(const std::string& what) {
    return what + "-" + std::to_string(++counter_) + "@example.com";
  }

  Actor login(const std::string& email) {
    auto r = send("POST", "/v1/auth/login", Json{{"email", email}, {"password", kPassword}}, {});
    EXPECT_EQ(r.status, 200) << email << ": " << r.body;
    std::string set_cookie = r.header("set-cookie");
    Actor a;
    a.label = email;
    a.email = email;
    a.cookie = set_cookie.substr(0, set_cookie.find(';'));
    a.csrf = r.json().value("csrf_token", "");
    a.user_id = r.json()["user"].value("id", "");
    a.org_id = r.json().value("current_org_id", "");
    return a;
  }
  // A new user with an org of their own, signed in as its owner.
  Actor signup(const std::string& org_name) {
    std::string email = fresh_email("owner");
    auto r = send("POST", "/v1/auth/signup",
                  Json{{"email", email}, {"password", kPassword}, {"org_name", org_name}}, {});
    EXPECT_EQ(r.status, 201) << r.body;
    Actor a = login(email);
    EXPECT_EQ(a.org_id, r.json()["org"]["id"]);
    a.label = org_name + " owner session";
    // Money to book with: the matrix is about who may call what, not about paying.
    if (!conn_) conn_ = std::make_unique<pqxx::connection>(db_.url());
    fund_org(*conn_, a.org_id, kAmpleFunds);
    return a;
  }
  // A new user added by `owner` to the owner's org with `role`, signed in and acting for it.
  Actor member_of(const Actor& owner, const std::string& role) {
    std::string email = fresh_email(role);
    auto s = send("POST", "/v1/auth/signup",
                  Json{{"email", email}, {"password", kPassword}, {"org_name", "Own org"}}, {});
    EXPECT_EQ(s.status, 201) << s.body;
    auto added =
        send("POST", "/v1/members", Json{{"email", email}, {"role", role}}, owner.credentials());
    EXPECT_EQ(added.status, 201) << added.body;
    Actor a = login(email);
    auto sw = send("POST", "/v1/session/org", Json{{"org_id", owner.org_id}}, a.credentials());
    EXPECT_EQ(sw.status, 200) << sw.body;
    EXPECT_EQ(sw.json()["role"], role);
    a.org_id = owner.org_id;
    a.label = role + " session";
    return a;
  }
  // An API token made by `creator` (a session) for its org.
  Actor token_of(const Actor& creator, const std::vector<std::string>& scopes,
                 std::optional<int> expires_in_days = std::nullopt) {
    Json body = {{"name", "matrix"}, {"scopes", scopes}};
    if (expires_in_days) body["expires_in_days"] = *expires_in_days;
    auto r = send("POST", "/v1/api-tokens", body, creator.credentials());
    EXPECT_EQ(r.status, 201) << r.body;
    Actor a;
    a.user_id = creator.user_id;
    a.org_id = creator.org_id;
    a.token = r.json().value("token", "");
    a.token_id = r.json().value("id", "");
    a.label = "token [" + Json(scopes).dump() + "]";
    return a;
  }

  // One connection for the test's own reads and writes (autocommit).
  pqxx::nontransaction tx() {
    if (!conn_) conn_ = std::make_unique<pqxx::connection>(db_.url());
    return pqxx::nontransaction(*conn_);
  }
  // A user row written directly (no scrypt, no API), a member of nothing: cheap targets.
  BareUser bare_user() {
    BareUser u{new_id(id_prefix::kUser), fresh_email("bare")};
    tx().exec_params(
        "INSERT INTO users (id, email, password_hash, created_at)"
        " VALUES ($1, $2, 'not a hash', now())",
        u.id, u.email);
    return u;
  }
  BareUser bare_member(const std::string& org_id, const std::string& role) {
    BareUser u = bare_user();
    tx().exec_params(
        "INSERT INTO memberships (org_id, user_id, role, created_at) VALUES ($1, $2, $3, now())",
        org_id, u.id, role);
    return u;
  }
  // A new ed25519 public key from the real ssh-keygen.
  std::string fresh_public_key() {
    if (key_dir_.empty()) key_dir_ = make_temp_dir("gpurent-matrix-keys");
    std::string path = key_dir_ + "/k" + std::to_string(++counter_);
    auto r =
        run_subprocess({"ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "matrix", "-f", path});
    EXPECT_EQ(r.exit_code, 0) << r.output;
    std::ifstream in(path + ".pub");
    std::string text;
    std::getline(in, text);
    return text;
  }
  std::string new_key_id(const Actor& owner) {
    auto r =
        send("POST", "/v1/ssh-keys",
             Json{{"name", "target key"}, {"public_key", fresh_public_key()}}, owner.credentials());
    EXPECT_EQ(r.status, 201) << r.body;
    return r.json().value("id", "");
  }
  std::string new_token_id(const Actor& owner) {
    return token_of(owner, {"rentals:read"}).token_id;
  }
  std::string new_webhook_id(const Actor& owner) {
    auto r = send("POST", "/v1/webhooks",
                  Json{{"url", "https://hooks.example.com/in"}, {"events", {"rental.active"}}},
                  owner.credentials());
    EXPECT_EQ(r.status, 201) << r.body;
    return r.json().value("id", "");
  }

  // Two 8-GPU nodes, an image and a price, written once as an operator and the nodes' agents
  // would have (the admin routes are tested elsewhere).
  const std::string& fleet_image() {
    if (!image_id_.empty()) return image_id_;
    auto t = tx();
    std::string site = new_id(id_prefix::kSite);
    t.exec_params(
        "INSERT INTO sites (id, name, region, timezone, created_at)"
        " VALUES ($1, 'Matrix DC', 'test', 'UTC', now())",
        site);
    for (int n = 0; n < 2; ++n) {
      std::string node = new_id(id_prefix::kNode);
      t.exec_params(
          "INSERT INTO nodes (id, site_id, hostname, gpu_model, gpu_count, interconnect,"
          " state, state_changed_at, health, topology_source, created_at)"
          " VALUES ($1, $2, $3, 'H100-SXM5-80GB', 8, 'nvswitch', 'available', now(),"
          " 'ok', 'declared', now())",
          node, site, "matrix-" + std::to_string(n));
      t.exec_params(
          "INSERT INTO gpus (node_id, idx, health) SELECT $1, i, 'ok'"
          " FROM generate_series(0, 7) i",
          node);
    }
    image_id_ = new_id(id_prefix::kImage);
    t.exec_params(
        "INSERT INTO images (id, name, os, driver_version, cuda_version, status,"
        " created_at) VALUES ($1, 'matrix', 'Ubuntu 22.04', '550.54.15', '12.4',"
        " 'active', now())",
        image_id_);
    t.exec(
        "INSERT INTO prices (gpu_model, gpu_count, amount_minor, currency, valid_from)"
        " VALUES ('H100-SXM5-80GB', 1, 100000, 'RUB', now() - interval '1 day')");
    return image_id_;
  }
  // A one-GPU booking a day long; each starts three days after the one before (room for an
  // extension by a day), from two days ahead (a cell may have moved the server's test clock
  // a day on), 9 slots a GPU within the booking horizon, so the fleet never runs out however
  // many cells book.
  Json rental_body() {
    auto start =
        std::chrono::time_point_cast<std::chrono::microseconds>(std::chrono::system_clock::now()) +
        std::chrono::hours(48 + 72 * (rentals_++ % 9));
    return Json{{"gpu_model", "H100-SXM5-80GB"},
                {"gpu_count", 1},
                {"start", format_rfc3339(start)},
                {"days", 1},
                {"image_id", fleet_image()}};
  }
  // A draft invoice of the org, written as billing writes one (a month of its own each). The
  // months are in the future, so the server's invoice job never issues one mid-test (which
  // would change the listing the test compares before and after).
  std::string new_invoice_id(const Actor& owner) {
    std::string id = new_id(id_prefix::kInvoice);
    tx().exec_params(
        "INSERT INTO invoices (id, org_id, period_start, period_end, status, currency,"
        " subtotal_minor, tax_minor, total_minor, vat_basis_points, created_at)"
        " SELECT $1, $2, m, (m + interval '1 month')::date, 'draft', 'RUB', 0, 0, 0, 2000, now()"
        " FROM (SELECT (date '2100-01-01' + make_interval(months => $3))::date AS m) x",
        id, owner.org_id, ++invoices_made_);
    return id;
  }

  std::string new_rental_id(const Actor& owner) {
    auto r = send("POST", "/v1/rentals", rental_body(), owner.credentials());
    EXPECT_EQ(r.status, 201) << r.body;
    return r.json().value("id", "");
  }

  // A new rental of the org with a notice that asks for no answer (as a fault's), written
  // as the lifecycle writes them: {rental id, notice id}.
  std::pair<std::string, std::string> new_notice(const Actor& owner) {
    std::string rental = new_rental_id(owner);
    std::string notice = "ntc_" + rental.substr(4);
    tx().exec_params(
        "INSERT INTO rental_notices (id, rental_id, org_id, kind, message, effective_at,"
        " created_at) SELECT $1, id, org_id, 'fault', 'a test notice', now(), now()"
        " FROM rentals WHERE id = $2",
        notice, rental);
    return {rental, notice};
  }

  // Everything an org owns, read from the database, with the columns a request could change
  // (not last_used_at or last_seen_at, which reads stamp).
  std::string org_rows(const std::string& org_id) {
    auto t = tx();
    std::string out;
    auto add = [&](const std::string& label, const std::string& sql) {
      auto r = t.exec_params(sql, org_id);
      out += label + ": " + (r[0][0].is_null() ? "" : r[0][0].as<std::string>()) + "\n";
    };
    add("org", "SELECT string_agg(name, '') FROM orgs WHERE id = $1");
    add("memberships",
        "SELECT string_agg(user_id || ' ' || role, ', ' ORDER BY user_id) FROM memberships"
        " WHERE org_id = $1");
    add("ssh_keys",
        "SELECT string_agg(id || ' ' || name || ' ' || fingerprint, ', ' ORDER BY id)"
        " FROM ssh_keys WHERE org_id = $1");
    add("api_tokens",
        "SELECT string_agg(id || ' ' || name || ' ' || array_to_string(scopes, ',') || ' '"
        " || coalesce(expires_at::text, 'no expiry') || ' ' || coalesce(revoked_at::text, 'live'),"
        " ', ' ORDER BY id) FROM api_tokens WHERE org_id = $1");
    add("webhooks",
        "SELECT string_agg(id || ' ' || url || ' ' || coalesce(disabled_at::text, 'live') || ' '"
        " || (SELECT count(*) FROM webhook_deliveries d WHERE d.webhook_id = w.id), ', '"
        " ORDER BY id) FROM webhooks w WHERE org_id = $1");
    add("rentals",
        "SELECT string_agg(id || ' ' || state || ' ' || coalesce(checkpoint_command, '-'), ', '"
        " ORDER BY id) FROM rentals WHERE org_id = $1");
    add("notice answers",
        "SELECT string_agg(id || ' ' || coalesce(choice, '-'), ', ' ORDER BY id)"
        " FROM rental_notices WHERE org_id = $1");
    add("sessions acting for it",
        "SELECT string_agg(id_hash, ', ' ORDER BY id_hash) FROM sessions"
        " WHERE current_org_id = $1");
    return out;
  }
  // Every id the org owns: members, keys, tokens, and the org itself.
  std::vector<std::string> org_ids(const std::string& org_id) {
    auto t = tx();
    std::vector<std::string> ids = {org_id};
    for (const char* sql : {"SELECT user_id FROM memberships WHERE org_id = $1",
                            "SELECT id FROM ssh_keys WHERE org_id = $1",
                            "SELECT id FROM api_tokens WHERE org_id = $1"}) {
      for (const auto& row : t.exec_params(sql, org_id)) ids.push_back(row[0].as<std::string>());
    }
    return ids;
  }
  // The org as its owner sees it through every list route of the table.
  std::string org_listings(const Actor& owner) {
    std::string out;
    for (const auto& c : endpoint_cases()) {
      if (c.method != "GET" || c.names_object || !c.lists_org_objects) continue;
      auto r = send("GET", c.path, std::nullopt, owner.credentials());
      out += c.path + " " + std::to_string(r.status) + " " + r.body + "\n";
    }
    return out;
  }

  // Checks status and, for errors, the error code; says which cell failed. A row whose
  // allowed answer is itself an error (a reboot of a rental that is not running) names no
  // code: its status, unlike another org's 404, shows the request got past the checks.
  static void expect(const HttpResult& r, int status, const std::string& code,
                     const std::string& cell) {
    EXPECT_EQ(r.status, status) << cell << " → " << r.body.substr(0, 300);
    if (status >= 400 && r.status == status && !code.empty()) {
      auto body = Json::parse(r.body, nullptr, false);
      EXPECT_EQ(body.is_discarded() ? Json() : body["error"]["code"], code)
          << cell << " → " << r.body.substr(0, 300);
    }
  }

  static constexpr const char* kPassword = "a good passphrase";

 protected:
  void SetUp() override {
    // Hundreds of requests from one address in a few seconds: rate limits are not under test.
    server_ = std::make_unique<ServerProcess>(
        ServerOptions{.database_url = db_.url(),
                      .flags = {"--rate_limit_per_ip=0", "--rate_limit_per_credential=0"}});
  }

  void TearDown() override { conn_.reset(); }
  static void report_cells(const char* what, int cells) {
    std::printf("[ cells    ] %s: %d\n", what, cells);
  }

  TestDatabase db_;
  std::unique_ptr<ServerProcess> server_;
  std::unique_ptr<ContractCheck> contract_;
  std::unique_ptr<pqxx::connection> conn_;
  std::string key_dir_;
  int counter_ = 0;
  int invoices_made_ = 0;
  std::string image_id_;
  int rentals_ = 0;
};

// The table. Roles come from the handlers (api/handlers/*.cpp) and scopes_for_role
// (api/auth.cpp): members:write is owner and admin; ssh-keys:write and tokens:write are
// owner, admin and member; reads need no scope, except the audit log. Targets are fresh
// "member"-role users, so the owner rules (only owners manage owners, the last owner stays)
// never decide a cell.
const std::vector<EndpointCase>& endpoint_cases() {
  using T = TenancyMatrixE2E;
  static const std::vector<EndpointCase> cases = {
      {"GET", "/v1/members", [](T&, const Actor&) { return Prepared{}; }, std::nullopt, kEveryRole,
       200, false},
      {"POST",
       "/v1/members",
       [](T& t, const Actor&) {
         return Prepared{Json{{"email", t.bare_user().email}, {"role", "viewer"}}, ""};
       },
       "members:write",
       {"owner", "admin"},
       201,
       false},
      {"PATCH",
       "/v1/members/{user_id}",
       [](T& t, const Actor& o) {
         return Prepared{Json{{"role", "billing"}}, t.bare_member(o.org_id, "member").id};
       },
       "members:write",
       {"owner", "admin"},
       200,
       true},
      {"DELETE",
       "/v1/members/{user_id}",
       [](T& t, const Actor& o) {
         return Prepared{std::nullopt, t.bare_member(o.org_id, "member").id};
       },
       "members:write",
       {"owner", "admin"},
       204,
       true},
      {"GET", "/v1/ssh-keys", [](T&, const Actor&) { return Prepared{}; }, std::nullopt, kEveryRole,
       200, false},
      {"POST",
       "/v1/ssh-keys",
       [](T& t, const Actor&) {
         return Prepared{Json{{"name", "matrix key"}, {"public_key", t.fresh_public_key()}}, ""};
       },
       "ssh-keys:write",
       {"owner", "admin", "member"},
       201,
       false},
      {"GET", "/v1/ssh-keys/{id}",
       [](T& t, const Actor& o) {
         return Prepared{std::nullopt, t.new_key_id(o)};
       },
       std::nullopt, kEveryRole, 200, true},
      {"DELETE",
       "/v1/ssh-keys/{id}",
       [](T& t, const Actor& o) {
         return Prepared{std::nullopt, t.new_key_id(o)};
       },
       "ssh-keys:write",
       {"owner", "admin", "member"},
       204,
       true},
      {"GET", "/v1/api-tokens", [](T&, const Actor&) { return Prepared{}; }, std::nullopt,
       kEveryRole, 200, false},
      // tokens:write is the one scope every caller allowed here holds, so it may be granted.
      {"POST",
       "/v1/api-tokens",
       [](T&, const Actor&) {
         return Prepared{Json{{"name", "matrix token"}, {"scopes", {"tokens:write"}}}, ""};
       },
       "tokens:write",
       {"owner", "admin", "member"},
       201,
       false},
      // Any tokens:write holder may revoke any of the org's tokens, the owner's included.
      {"DELETE",
       "/v1/api-tokens/{id}",
       [](T& t, const Actor& o) {
         return Prepared{std::nullopt, t.new_token_id(o)};
       },
       "tokens:write",
       {"owner", "admin", "member"},
       204,
       true},
      {"GET", "/v1/me", [](T&, const Actor&) { return Prepared{}; }, std::nullopt, kEveryRole, 200,
       false},
      // The person's own organisations: another org's ids never appear.
      {"GET", "/v1/me/orgs", [](T&, const Actor&) { return Prepared{}; }, std::nullopt, kEveryRole,
       200, false, /*sessions_only=*/true},
      // Money: the roles that see the org's billing (owners, admins and billing).
      {"GET",
       "/v1/billing/balance",
       [](T&, const Actor&) { return Prepared{}; },
       "billing:read",
       {"owner", "admin", "billing"},
       200,
       false},
      {"GET",
       "/v1/billing/transactions",
       [](T&, const Actor&) { return Prepared{}; },
       "billing:read",
       {"owner", "admin", "billing"},
       200,
       false},
      {"GET",
       "/v1/invoices",
       [](T&, const Actor&) { return Prepared{}; },
       "billing:read",
       {"owner", "admin", "billing"},
       200,
       false},
      {"GET",
       "/v1/invoices/{id}",
       [](T& t, const Actor& o) {
         return Prepared{std::nullopt, t.new_invoice_id(o)};
       },
       "billing:read",
       {"owner", "admin", "billing"},
       200,
       true},
      // Owners and admins by role; a token also needs members:write.
      {"GET",
       "/v1/audit",
       [](T&, const Actor&) { return Prepared{}; },
       "members:write",
       {"owner", "admin"},
       200,
       false},
      // Webhooks send the org's events wherever they point: owners and admins only.
      {"GET",
       "/v1/webhooks",
       [](T&, const Actor&) { return Prepared{}; },
       "members:write",
       {"owner", "admin"},
       200,
       false},
      {"POST",
       "/v1/webhooks",
       [](T&, const Actor&) {
         return Prepared{
             Json{{"url", "https://hooks.example.com/in"}, {"events", {"rental.active"}}}, ""};
       },
       "members:write",
       {"owner", "admin"},
       201,
       false},
      {"GET",
       "/v1/webhooks/{id}",
       [](T& t, const Actor& o) {
         return Prepared{std::nullopt, t.new_webhook_id(o)};
       },
       "members:write",
       {"owner", "admin"},
       200,
       true},
      {"DELETE",
       "/v1/webhooks/{id}",
       [](T& t, const Actor& o) {
         return Prepared{std::nullopt, t.new_webhook_id(o)};
       },
       "members:write",
       {"owner", "admin"},
       204,
       true},
      {"GET",
       "/v1/webhooks/{id}/deliveries",
       [](T& t, const Actor& o) {
         return Prepared{std::nullopt, t.new_webhook_id(o)};
       },
       "members:write",
       {"owner", "admin"},
       200,
       true},
      {"POST",
       "/v1/webhooks/{id}/test",
       [](T& t, const Actor& o) {
         return Prepared{Json::object(), t.new_webhook_id(o)};
       },
       "members:write",
       {"owner", "admin"},
       202,
       true},
      {"POST", "/v1/session/org",
       [](T&, const Actor& o) {
         return Prepared{Json{{"org_id", o.org_id}}, ""};
       },
       std::nullopt, kEveryRole, 200, true, /*sessions_only=*/true},
      // Rentals: reading needs rentals:read (every role has it), booking and ending need
      // rentals:write (owner, admin, member).
      {"GET", "/v1/rentals", [](T&, const Actor&) { return Prepared{}; }, "rentals:read",
       kEveryRole, 200, false},
      {"POST",
       "/v1/rentals",
       [](T& t, const Actor&) {
         return Prepared{t.rental_body(), ""};
       },
       "rentals:write",
       {"owner", "admin", "member"},
       201,
       false},
      {"POST", "/v1/quotes",
       [](T& t, const Actor&) {
         return Prepared{t.rental_body(), ""};
       },
       "rentals:read", kEveryRole, 200, false},
      {"GET", "/v1/rentals/{id}",
       [](T& t, const Actor& o) {
         return Prepared{std::nullopt, t.new_rental_id(o)};
       },
       "rentals:read", kEveryRole, 200, true},
      {"GET", "/v1/rentals/{id}/events",
       [](T& t, const Actor& o) {
         return Prepared{std::nullopt, t.new_rental_id(o)};
       },
       "rentals:read", kEveryRole, 200, true},
      // A scheduled rental's report has no handover yet, but it is its org's to read.
      {"GET", "/v1/rentals/{id}/report",
       [](T& t, const Actor& o) {
         return Prepared{std::nullopt, t.new_rental_id(o)};
       },
       "rentals:read", kEveryRole, 200, true},
      // Before its start a rental has no telemetry: an empty answer, never another's.
      {"GET", "/v1/rentals/{id}/telemetry",
       [](T& t, const Actor& o) {
         return Prepared{std::nullopt, t.new_rental_id(o)};
       },
       "rentals:read", kEveryRole, 200, true},
      // A rental nothing has happened to has no notices: an empty list, never another's.
      {"GET", "/v1/rentals/{id}/notices",
       [](T& t, const Actor& o) {
         return Prepared{std::nullopt, t.new_rental_id(o)};
       },
       "rentals:read", kEveryRole, 200, true},
      {"GET", "/v1/notices", [](T&, const Actor&) { return Prepared{}; }, "rentals:read",
       kEveryRole, 200, false},
      // A notice that asks for no answer: the org's own is invalid_request, another org's 404.
      {"POST",
       "/v1/rentals/{id}/notices/{notice_id}/choice",
       [](T& t, const Actor& o) {
         auto [rental, notice] = t.new_notice(o);
         return Prepared{Json{{"choice", "cancel"}}, rental, "", notice};
       },
       "rentals:write",
       {"owner", "admin", "member"},
       400,
       true},
      // A scheduled rental cannot reboot: invalid_state once the access checks passed.
      {"POST",
       "/v1/rentals/{id}/reboot",
       [](T& t, const Actor& o) {
         return Prepared{Json::object(), t.new_rental_id(o)};
       },
       "rentals:write",
       {"owner", "admin", "member"},
       409,
       true},
      {"GET", "/v1/rentals/{id}/handovers",
       [](T& t, const Actor& o) {
         return Prepared{std::nullopt, t.new_rental_id(o)};
       },
       "rentals:read", kEveryRole, 200, true},
      {"GET", "/v1/rentals/{id}/checkpoint",
       [](T& t, const Actor& o) {
         return Prepared{std::nullopt, t.new_rental_id(o)};
       },
       "rentals:read", kEveryRole, 200, true},
      {"PUT",
       "/v1/rentals/{id}/checkpoint",
       [](T& t, const Actor& o) {
         return Prepared{Json{{"command", "sync"}, {"timeout_s", 60}}, t.new_rental_id(o)};
       },
       "rentals:write",
       {"owner", "admin", "member"},
       200,
       true},
      {"DELETE",
       "/v1/rentals/{id}/checkpoint",
       [](T& t, const Actor& o) {
         return Prepared{std::nullopt, t.new_rental_id(o)};
       },
       "rentals:write",
       {"owner", "admin", "member"},
       200,
       true},
      // A scheduled rental has nothing running to examine: one skipped check, at once.
      {"POST",
       "/v1/rentals/{id}/doctor",
       [](T& t, const Actor& o) {
         return Prepared{Json::object(), t.new_rental_id(o)};
       },
       "rentals:write",
       {"owner", "admin", "member"},
       200,
       true},
      {"POST",
       "/v1/rentals/{id}/extend",
       [](T& t, const Actor& o) {
         return Prepared{Json{{"days", 1}}, t.new_rental_id(o)};
       },
       "rentals:write",
       {"owner", "admin", "member"},
       200,
       true},
      // Access to the rental's node is a write: the roles that may book it.
      {"POST",
       "/v1/rentals/{id}/ssh-certificate",
       [](T& t, const Actor& o) {
         return Prepared{Json{{"public_key",
                               "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5"
                               "C9okWi0dh2l9GKJl dev@laptop"}},
                         t.new_rental_id(o)};
       },
       "rentals:write",
       {"owner", "admin", "member"},
       200,
       true},
      // timeout_s=0: the rental is scheduled, not active, so it answers at once as it is.
      {"GET", "/v1/rentals/{id}/wait",
       [](T& t, const Actor& o) {
         return Prepared{std::nullopt, t.new_rental_id(o), "?timeout_s=0"};
       },
       "rentals:read", kEveryRole, 200, true},
      {"POST",
       "/v1/rentals/{id}/terminate",
       [](T& t, const Actor& o) {
         return Prepared{Json::object(), t.new_rental_id(o)};
       },
       "rentals:write",
       {"owner", "admin", "member"},
       200,
       true},
      // The catalog's capacity views: any signed-in caller of any org, no scope; they show
      // how much fits, never whose bookings take the rest.
      {"GET", "/v1/offers",
       [](T& t, const Actor&) {
         t.fleet_image();  // the fleet is on sale
         return Prepared{std::nullopt, "", "?gpu_model=H100-SXM5-80GB&gpu_count=1"};
       },
       std::nullopt, kEveryRole, 200, false, false, false},
      {"GET", "/v1/availability",
       [](T& t, const Actor&) {
         t.fleet_image();
         return Prepared{std::nullopt, "", "?gpu_model=H100-SXM5-80GB&gpu_count=1&days=7"};
       },
       std::nullopt, kEveryRole, 200, false, false, false},
  };
  return cases;
}

bool is_unsafe(const std::string& method) {
  return method != "GET" && method != "HEAD" && method != "OPTIONS";
}

std::string upper(std::string s) {
  for (auto& ch : s) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  return s;
}

// The matrix is only as good as its table: every documented route outside sign-in, platform
// administration, the catalog's static documents and operations acts for an org and needs a
// row; so do the catalog's capacity views (offers, availability), which any org may call.
TEST_F(TenancyMatrixE2E, TableHasARowForEveryTenantRoute) {
  const std::vector<std::string> not_tenant_owned = {"/v1/auth/",
                                                     "/v1/admin/",
                                                     "/v1/openapi.json",
                                                     "/v1/gpu-models",
                                                     "/v1/images",
                                                     "/v1/advisor",
                                                     "/v1/billing/payments/webhook",
                                                     "/v1/platform/"};
  auto r = send("GET", "/v1/openapi.json", std::nullopt, {});
  ASSERT_EQ(r.status, 200) << r.body;
  std::set<std::string> documented, in_table;
  Json spec = r.json();
  for (const auto& [path, operations] : spec["paths"].items()) {
    if (path.rfind("/v1/", 0) != 0) continue;
    bool excluded = false;
    for (const auto& prefix : not_tenant_owned) excluded |= path.rfind(prefix, 0) == 0;
    if (excluded) continue;
    for (const auto& [method, _] : operations.items())
      documented.insert(upper(method) + " " + path);
  }
  for (const auto& c : endpoint_cases()) in_table.insert(c.method + " " + c.path);
  EXPECT_EQ(documented, in_table) << "each tenant route needs one row in endpoint_cases()";
}

// The table and the routes' own declarations (Route::access, needs_org, scope, as the
// OpenAPI document prints them) say the same: every row needs credentials, a row for
// sessions only is a route only sessions may call, a declared scope is the row's scope, and
// every route that declares it acts for an org has a row.
TEST_F(TenancyMatrixE2E, TableAgreesWithEachRoutesDeclaration) {
  auto r = send("GET", "/v1/openapi.json", std::nullopt, {});
  ASSERT_EQ(r.status, 200) << r.body;
  Json spec = r.json();
  const Json session_only = Json::array({Json{{"session", Json::array()}}});
  std::set<std::string> in_table;
  for (const auto& c : endpoint_cases()) {
    SCOPED_TRACE(c.method + " " + c.path);
    in_table.insert(c.method + " " + c.path);
    std::string method = c.method;
    for (auto& ch : method) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    ASSERT_TRUE(spec["paths"].contains(c.path));
    const Json& op = spec["paths"][c.path][method];
    ASSERT_TRUE(op.contains("security"));
    EXPECT_FALSE(op["security"].empty()) << "a tenant route takes credentials";
    EXPECT_EQ(op["security"] == session_only, c.sessions_only);
    if (op.contains("x-gpurent-scope")) {
      EXPECT_EQ(op["x-gpurent-scope"], c.scope.value_or(""));
    }
  }
  for (const auto& [path, operations] : spec["paths"].items()) {
    for (const auto& [method, op] : operations.items()) {
      if (op.value("x-gpurent-needs-org", false) && !op.value("x-gpurent-platform-admin", false)) {
        EXPECT_TRUE(in_table.count(upper(method) + " " + path)) << method << " " << path;
      }
    }
  }
}

// Org B's owner, by session and by an all-scopes token, names org A's objects: 404 on every
// verb, and A's rows and A's own view of them stay as they were. Routes that act on the
// caller's org work for B on B's org and leave A alone; B's lists never show A's ids.
TEST_F(TenancyMatrixE2E, AnotherOrgGets404ForEveryObjectAndChangesNothing) {
  Actor a = signup("Org A");
  Actor b = signup("Org B");
  Actor b_token = token_of(b, kAllScopes);
  b_token.label = "org B's all-scopes token";
  // A has one of everything before B starts.
  bare_member(a.org_id, "admin");
  new_key_id(a);
  new_token_id(a);

  int cells = 0;
  for (const Actor* actor : {&b, &b_token}) {
    for (const auto& c : endpoint_cases()) {
      std::string cell = c.cell(actor->label);
      SCOPED_TRACE(cell);
      Prepared p = c.prepare(*this, c.names_object ? a : b);
      std::string rows_before = org_rows(a.org_id);
      std::string listed_before = org_listings(a);
      auto r = run(c, p, actor->credentials());
      ++cells;
      if (c.sessions_only && actor == &b_token) {
        expect(r, 403, "forbidden", cell);
      } else if (c.names_object) {
        expect(r, 404, "not_found", cell);
      } else {
        expect(r, c.success, "", cell);
      }
      EXPECT_EQ(org_rows(a.org_id), rows_before) << cell;
      EXPECT_EQ(org_listings(a), listed_before) << cell;
      // The same request from A's owner works: the 404 was the tenancy check, not a bad target.
      if (c.names_object) expect(run(c, p, a.credentials()), c.success, "", cell + " (A's owner)");
    }
  }
  EXPECT_EQ(cells, 2 * static_cast<int>(endpoint_cases().size()));
  report_cells("cross-tenant", cells);

  auto a_ids = org_ids(a.org_id);
  ASSERT_GE(a_ids.size(), 6u);
  for (const Actor* actor : {&b, &b_token}) {
    for (const auto& c : endpoint_cases()) {
      if (c.method != "GET" || c.names_object || !c.lists_org_objects) continue;
      auto r = send("GET", c.path, std::nullopt, actor->credentials());
      EXPECT_EQ(r.status, c.sessions_only && actor == &b_token ? 403 : 200) << c.cell(actor->label);
      for (const auto& id : a_ids) {
        EXPECT_EQ(r.body.find(id), std::string::npos)
            << c.cell(actor->label) << " shows org A's " << id;
      }
    }
  }
}

// For each role, a session of a user added to the org with that role: 2xx where the table
// allows the role, otherwise 403 forbidden naming the missing scope, with nothing changed.
TEST_F(TenancyMatrixE2E, EveryRoleGetsExactlyItsRoutes) {
  Actor owner = signup("Org A");
  std::map<std::string, Actor> actors;
  for (const auto& role : kRoles) {
    actors[role] = member_of(owner, role);
    auto me = send("GET", "/v1/me", std::nullopt, actors[role].credentials());
    ASSERT_EQ(me.status, 200) << me.body;
    EXPECT_EQ(me.json()["role"], role);
    EXPECT_EQ(me.json()["scopes"], Json(kRoleScopes.at(role))) << role;
  }

  int cells = 0;
  for (const auto& c : endpoint_cases()) {
    for (const auto& role : kRoles) {
      std::string cell = c.cell(role + " session");
      SCOPED_TRACE(cell);
      Prepared p = c.prepare(*this, owner);
      std::string before = org_rows(owner.org_id);
      auto r = run(c, p, actors[role].credentials());
      ++cells;
      if (c.roles.count(role)) {
        expect(r, c.success, "", cell);
        continue;
      }
      expect(r, 403, "forbidden", cell);
      // A role check may answer before the scope check (GET /v1/audit); when the answer
      // names a scope, it is the row's.
      auto details = r.status == 403 ? r.json()["error"].value("details", Json::object()) : Json();
      if (c.scope && details.contains("scope")) {
        EXPECT_EQ(details["scope"], *c.scope) << cell;
      }
      EXPECT_EQ(org_rows(owner.org_id), before) << cell;
    }
  }
  EXPECT_EQ(cells, static_cast<int>(endpoint_cases().size() * kRoles.size()));
  report_cells("role x endpoint", cells);
}

// For each row that needs a scope: a token with every other scope gets 403 naming it, and a
// token with only that scope gets through. Rows that need none take a token of any one scope.
TEST_F(TenancyMatrixE2E, EveryScopeIsRequiredAndSufficient) {
  Actor owner = signup("Org A");
  std::map<std::string, Actor> without, only;
  for (const auto& scope : kAllScopes) {
    std::vector<std::string> others;
    for (const auto& s : kAllScopes) {
      if (s != scope) others.push_back(s);
    }
    without[scope] = token_of(owner, others);
    without[scope].label = "token without " + scope;
    only[scope] = token_of(owner, {scope});
    only[scope].label = "token with only " + scope;
  }

  int cells = 0;
  for (const auto& c : endpoint_cases()) {
    if (!c.scope) {
      const Actor& any = only.at("rentals:read");
      std::string cell = c.cell(any.label);
      SCOPED_TRACE(cell);
      expect(run(c, c.prepare(*this, owner), any.credentials()), c.sessions_only ? 403 : c.success,
             c.sessions_only ? "forbidden" : "", cell);
      ++cells;
      continue;
    }
    {
      const Actor& token = without.at(*c.scope);
      std::string cell = c.cell(token.label);
      SCOPED_TRACE(cell);
      Prepared p = c.prepare(*this, owner);
      std::string before = org_rows(owner.org_id);
      auto r = run(c, p, token.credentials());
      expect(r, 403, "forbidden", cell);
      if (r.status == 403) {
        EXPECT_EQ(r.json()["error"]["details"]["scope"], *c.scope) << cell;
      }
      EXPECT_EQ(org_rows(owner.org_id), before) << cell;
      ++cells;
    }
    {
      const Actor& token = only.at(*c.scope);
      std::string cell = c.cell(token.label);
      SCOPED_TRACE(cell);
      expect(run(c, c.prepare(*this, owner), token.credentials()), c.success, "", cell);
      ++cells;
    }
  }
  EXPECT_GT(cells, static_cast<int>(endpoint_cases().size()));
  report_cells("scope", cells);
}

// A revoked token is refused on the very next request, on every route, and changes nothing.
TEST_F(TenancyMatrixE2E, RevokedTokenIs401OnEveryRoute) {
  Actor owner = signup("Org A");
  Actor token = token_of(owner, kAllScopes);
  ASSERT_EQ(send("GET", "/v1/me", std::nullopt, token.credentials()).status, 200);
  std::vector<Prepared> prepared;
  for (const auto& c : endpoint_cases()) prepared.push_back(c.prepare(*this, owner));

  auto revoked =
      send("DELETE", "/v1/api-tokens/" + token.token_id, std::nullopt, owner.credentials());
  ASSERT_EQ(revoked.status, 204) << revoked.body;
  std::string before = org_rows(owner.org_id);
  for (std::size_t i = 0; i < endpoint_cases().size(); ++i) {
    const auto& c = endpoint_cases()[i];
    expect(run(c, prepared[i], token.credentials()), 401, "unauthenticated",
           c.cell("revoked token"));
  }
  report_cells("revoked token", static_cast<int>(endpoint_cases().size()));
  EXPECT_EQ(org_rows(owner.org_id), before);
  // Each refused request was a good one: its owner's session makes it.
  for (std::size_t i = 0; i < endpoint_cases().size(); ++i) {
    const auto& c = endpoint_cases()[i];
    expect(run(c, prepared[i], owner.credentials()), c.success, "", c.cell("owner (control)"));
  }
}

// A token past its expires_in_days (moved there with the test clock) is refused everywhere.
TEST_F(TenancyMatrixE2E, ExpiredTokenIs401OnEveryRoute) {
  Actor owner = signup("Org A");
  Actor token = token_of(owner, kAllScopes, 1);
  ASSERT_EQ(send("GET", "/v1/me", std::nullopt, token.credentials()).status, 200);
  std::vector<Prepared> prepared;
  for (const auto& c : endpoint_cases()) prepared.push_back(c.prepare(*this, owner));

  auto clock = send("POST", "/v1/admin/test-clock", Json{{"advance_seconds", 25 * 3600}}, {});
  ASSERT_EQ(clock.status, 200) << clock.body;
  std::string before = org_rows(owner.org_id);
  for (std::size_t i = 0; i < endpoint_cases().size(); ++i) {
    const auto& c = endpoint_cases()[i];
    expect(run(c, prepared[i], token.credentials()), 401, "unauthenticated",
           c.cell("expired token"));
  }
  report_cells("expired token", static_cast<int>(endpoint_cases().size()));
  EXPECT_EQ(org_rows(owner.org_id), before);
  // The clock ended the owner's idle session too; a fresh one makes each request, and a token
  // made now works: what was refused was the expired token, not the request.
  Actor again = login(owner.email);
  ASSERT_EQ(again.org_id, owner.org_id);
  Actor fresh = token_of(again, kAllScopes, 1);
  EXPECT_EQ(send("GET", "/v1/me", std::nullopt, fresh.credentials()).status, 200);
  for (std::size_t i = 0; i < endpoint_cases().size(); ++i) {
    const auto& c = endpoint_cases()[i];
    expect(run(c, prepared[i], again.credentials()), c.success, "", c.cell("owner (control)"));
  }
}

// Sessions: an unsafe request with the cookie but without (or with a wrong) X-CSRF-Token is
// 403 and changes nothing; safe ones need no CSRF token. No or unknown credentials are 401.
TEST_F(TenancyMatrixE2E, SessionsNeedCsrfOnUnsafeRoutesAndCredentialsEverywhere) {
  Actor owner = signup("Org A");
  const std::vector<std::pair<std::string, Headers>> strangers = {
      {"no credentials", {}},
      {"an unknown session", {{"Cookie", "gpurent_session=" + std::string(64, 'a')}}},
      {"a malformed session", {{"Cookie", "gpurent_session=x"}}},
      {"an unknown token", {{"Authorization", "Bearer gpr_" + std::string(64, '0')}}},
      {"a malformed Authorization", {{"Authorization", "Basic dXNlcjpwYXNz"}}},
  };
  int cells = 0;
  for (const auto& c : endpoint_cases()) {
    Prepared p = c.prepare(*this, owner);
    std::string before = org_rows(owner.org_id);
    for (const auto& [who, headers] : strangers) {
      expect(run(c, p, headers), 401, "unauthenticated", c.cell(who));
      ++cells;
    }
    if (is_unsafe(c.method)) {
      expect(run(c, p, {{"Cookie", owner.cookie}}), 403, "forbidden",
             c.cell("a session without X-CSRF-Token"));
      expect(run(c, p, {{"Cookie", owner.cookie}, {"X-CSRF-Token", std::string(64, 'f')}}), 403,
             "forbidden", c.cell("a session with a wrong X-CSRF-Token"));
      cells += 2;
    }
    EXPECT_EQ(org_rows(owner.org_id), before) << c.cell("refused callers");
    if (!is_unsafe(c.method)) {
      expect(run(c, p, {{"Cookie", owner.cookie}}), c.success, "",
             c.cell("a session without X-CSRF-Token (safe method)"));
      ++cells;
    }
    expect(run(c, p, owner.credentials()), c.success, "", c.cell("owner (control)"));
  }
  EXPECT_GT(cells, 5 * static_cast<int>(endpoint_cases().size()));
  report_cells("session and credentials", cells);
}

// A token belongs to one org for its whole life: asking to switch is 403, and the token
// keeps acting for its own org with its own scopes (an earlier build answered 200 and
// reported a switch it never made).
TEST_F(TenancyMatrixE2E, AnApiTokenCannotSwitchOrgs) {
  Actor a = signup("Org A");
  Actor other = signup("Org O");
  auto added = send("POST", "/v1/members", Json{{"email", other.email}, {"role", "viewer"}},
                    a.credentials());
  ASSERT_EQ(added.status, 201) << added.body;
  Actor token = token_of(other, {"rentals:read"});  // acts for org O, where other is owner
  for (const std::string& org_id : {a.org_id, other.org_id}) {
    SCOPED_TRACE("switch to " + org_id);
    auto sw = send("POST", "/v1/session/org", Json{{"org_id", org_id}}, token.credentials());
    EXPECT_EQ(sw.status, 403) << sw.body;
    EXPECT_EQ(sw.json()["error"]["code"], "forbidden");
    auto me = send("GET", "/v1/me", std::nullopt, token.credentials());
    ASSERT_EQ(me.status, 200) << me.body;
    EXPECT_EQ(me.json()["current_org_id"], other.org_id);
    EXPECT_EQ(me.json()["scopes"], Json({"rentals:read"}));
  }
}

}  // namespace gpurent::testing::tenancy_matrix_e2e
