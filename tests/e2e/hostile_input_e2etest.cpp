// Hostile JSON bodies generated from a table of every JSON endpoint's fields (wrong types,
// huge, unicode, control characters, broken surrogates, SQL metacharacters, missing and extra
// fields, non-object bodies), and hostile list query parameters: always 4xx naming the field
// with nothing written, or 2xx with the value stored verbatim (read back from the database)
// and shown verbatim; never 5xx.
#include "core/id.h"
#include "core/subprocess.h"
#include "tests/support/funding.h"
#include "tests/support/http_client.h"
#include "tests/support/pg_harness.h"
#include "tests/support/server_process.h"

#include <gtest/gtest.h>

#include <set>

#include <pqxx/pqxx>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <functional>
#include <limits>
#include <optional>

namespace gpurent::testing::hostile_input_e2e {

using Headers = std::map<std::string, std::string>;
using Json = nlohmann::json;

constexpr const char* kPassword = "a good passphrase";
constexpr std::size_t kBodyLimit = 1 << 20;  // the server's default http_body_limit

// How the server reads a field, which decides the wrong types to send it.
enum class Kind { kString, kInt, kStringList, kMoney };
// What a well-typed value with hostile content leads to.
enum class Verdict {
  kStored,           // 2xx, and the value reads back byte for byte
  kRefused,          // 400 invalid_request naming the field
  kNotFound,         // 404: a well-formed value that names nothing (an org, a user)
  kUnauthenticated,  // 401: a sign-in that does not match
};

class HostileInputE2E;

struct Field {
  std::string name;
  Kind kind;
  bool required;
  Verdict printable = Verdict::kRefused;  // unicode, SQL and LIKE metacharacters, backslashes
  Verdict control = Verdict::kRefused;    // a NUL or an ESC inside
  // Turns hostile text into a value of this field (an email around it); as is when empty.
  std::function<std::string(HostileInputE2E&, const std::string&)> shape;
  std::int64_t min = 0;  // kInt bounds
  std::int64_t max = 0;
  // Whether the maximum is accepted, or refused naming the field for what it means (a GPU
  // count no shape is sold in, an extension past the longest rental).
  bool max_accepted = true;
};

// A fresh valid request: where to send it and its body.
struct ValidRequest {
  std::string path;
  Json body;
};

struct BodyEndpoint {
  std::string method;
  std::string route;
  bool needs_session;
  int success;
  std::vector<Field> fields;  // in the order the handler reads them
  std::function<ValidRequest(HostileInputE2E&)> make;
  // The value of a string field after a 2xx, read back from the database (for a password,
  // kept only as a hash: whether signing in with exactly it works).
  std::function<std::string(HostileInputE2E&, const Json& response, const Json& sent,
                            const std::string& field)>
      stored;
  // The same value as the API shows it, in the response or through a read; empty when the
  // API never shows the field.
  std::function<std::optional<std::string>(HostileInputE2E&, const Json& response,
                                           const std::string& field)>
      shown;
};

struct Expected {
  int status;
  std::string code;      // for errors
  std::string field;     // details.field, when the error names one
  bool stored = false;   // 2xx, and the field reads back as sent from the database
  std::string readback;  // the field to read back
};

struct HostileCase {
  std::string label;
  // Edits the fresh valid body and returns the bytes to send.
  std::function<std::string(Json& body)> build;
  Expected expected;
  std::string content_type = "application/json";  // empty: no Content-Type header
};

// Hostile text, decoded, and how it behaves for a field that takes text.
struct Payload {
  std::string label;
  std::string text;
  enum Class { kPrintable, kControl, kUnparsable, kHuge } cls;
  std::string raw;  // kUnparsable: written into the JSON text as is, in place of `text`
};

// Stands in for raw text: dumped as "\u0001RAW\u0001", then replaced in the bytes.
const std::string kRawMark = "\x01RAW\x01";
const std::string kRawMarkDumped = "\\u0001RAW\\u0001";

// Puts `raw` where the mark was dumped: inside its string, or instead of the whole string.
std::string replace_mark(std::string text, const std::string& raw, bool quoted = false) {
  std::string mark = quoted ? "\"" + kRawMarkDumped + "\"" : kRawMarkDumped;
  auto at = text.find(mark);
  if (at != std::string::npos) text.replace(at, mark.size(), raw);
  return text;
}

const std::vector<Payload>& payloads() {
  static const std::vector<Payload> all = {
      {"emoji", "GPU \xF0\x9F\x9A\x80\xF0\x9F\x94\xA5 \xD1\x84\xD0\xB5\xD1\x80\xD0\xBC\xD0\xB0",
       Payload::kPrintable},
      // Hebrew and Arabic, with a right-to-left override (U+202E) in front.
      {"right-to-left", "\xE2\x80\xAE\xD7\xA9\xD7\x9C\xD7\x95\xD7\x9D \xD9\x85\xD8\xB1\xD8\xAD",
       Payload::kPrintable},
      // Z with three combining marks, and e + COMBINING ACUTE (not the precomposed é).
      {"combining marks", "Z\xCC\xB5\xCC\xA1\xCC\x9B e\xCC\x81", Payload::kPrintable},
      {"SQL injection", "'; DROP TABLE users; --", Payload::kPrintable},
      {"LIKE wildcards", "%_%", Payload::kPrintable},
      {"backslashes and quotes", R"(\\ \' \" $1 \x00 \n)", Payload::kPrintable},
      {"NUL", std::string("a\0b", 3), Payload::kControl},
      {"ESC", "\x1b[31mred", Payload::kControl},
      {"lone high surrogate", kRawMark, Payload::kUnparsable, "\\ud800"},
      {"lone low surrogate", kRawMark, Payload::kUnparsable, "\\udc00"},
      {"high surrogate then a letter", kRawMark, Payload::kUnparsable, "\\ud800\\u0041"},
      {"invalid UTF-8", kRawMark, Payload::kUnparsable, "\xC3\x28\xFF"},
      {"100 KB", std::string(100 * 1024, 'x'), Payload::kHuge},
  };
  return all;
}

std::string without_spaces(std::string s) {
  std::erase(s, ' ');
  return s;
}

const std::vector<BodyEndpoint>& body_endpoints();

class HostileInputE2E : public ::testing::Test {
 public:
  struct Session {
    std::string email;
    std::string user_id;
    std::string org_id;
    std::string cookie;
    std::string csrf;
    Headers credentials() const { return {{"Cookie", cookie}, {"X-CSRF-Token", csrf}}; }
  };

  HttpResult post(const std::string& path, const Json& body, Headers headers = {}) {
    headers.emplace("Content-Type", "application/json");
    return http_request(server_->port(), "POST", path, body.dump(), headers);
  }
  HttpResult get(const std::string& path) {
    return http_request(server_->port(), "GET", path, "", owner().credentials());
  }

  std::string unique(const std::string& what) { return what + "-" + std::to_string(++counter_); }

  Session login(const std::string& email, const std::string& password = kPassword) {
    auto r = post("/v1/auth/login", {{"email", email}, {"password", password}});
    EXPECT_EQ(r.status, 200) << r.body;
    std::string set_cookie = r.header("set-cookie");
    return {email, r.json()["user"].value("id", ""), r.json().value("current_org_id", ""),
            set_cookie.substr(0, set_cookie.find(';')), r.json().value("csrf_token", "")};
  }
  // The org owner whose session the endpoints that need one are called with.
  const Session& owner() {
    if (!owner_) {
      std::string email = unique("owner") + "@example.com";
      auto s = post("/v1/auth/signup",
                    {{"email", email}, {"password", kPassword}, {"org_name", "Hostile Co"}});
      EXPECT_EQ(s.status, 201) << s.body;
      // A platform admin too, so the same session reaches the /v1/admin routes; the flag is
      // read on every request and changes nothing for the org routes.
      tx().exec_params("UPDATE users SET is_platform_admin = true WHERE id = $1",
                       s.json()["user"]["id"].get<std::string>());
      owner_ = login(email);
      // Money to book with: valid bookings are the control the hostile ones are set against.
      if (!conn_) conn_ = std::make_unique<pqxx::connection>(db_.url());
      fund_org(*conn_, owner_->org_id, kAmpleFunds);
    }
    return *owner_;
  }

  pqxx::nontransaction tx() {
    if (!conn_) conn_ = std::make_unique<pqxx::connection>(db_.url());
    return pqxx::nontransaction(*conn_);
  }
  std::string query_one(const std::string& sql, const std::string& param) {
    auto t = tx();
    auto r = t.exec_params(sql, param);
    return r.empty() || r[0][0].is_null() ? "<none>" : r[0][0].as<std::string>();
  }
  // A user written straight to the database (with the owner's password hash, so they can
  // sign in with kPassword): no scrypt per case, and each login case has its own account.
  std::string bare_user() {
    std::string email = unique("bare") + "@example.com";
    std::string hash = query_one("SELECT password_hash FROM users WHERE id = $1", owner().user_id);
    auto t = tx();
    t.exec_params(
        "INSERT INTO users (id, email, password_hash, created_at) VALUES ($1, $2, $3, now())",
        new_id(id_prefix::kUser), email, hash);
    return email;
  }
  std::string bare_member(const std::string& role) {
    std::string email = bare_user();
    std::string id = query_one("SELECT id FROM users WHERE email = $1", email);
    auto t = tx();
    t.exec_params(
        "INSERT INTO memberships (org_id, user_id, role, created_at) VALUES ($1, $2, $3, now())",
        owner().org_id, id, role);
    return id;
  }
  // A site for node bodies, made once through the API.
  const std::string& site_id() {
    if (site_id_.empty()) {
      auto r = post("/v1/admin/sites",
                    {{"name", "Hostile DC"}, {"region", "r"}, {"timezone", "Europe/Moscow"}},
                    owner().credentials());
      EXPECT_EQ(r.status, 201) << r.body;
      site_id_ = r.json().value("id", "");
    }
    return site_id_;
  }
  // A fresh node in `available` (the agent's enrolment is not under test here).
  std::string available_node() {
    auto r = post("/v1/admin/nodes",
                  {{"site_id", site_id()},
                   {"hostname", unique("node")},
                   {"gpu_model", "L4-24GB"},
                   {"gpu_count", 2}},
                  owner().credentials());
    EXPECT_EQ(r.status, 201) << r.body;
    std::string id = r.json()["node"].value("id", "");
    tx().exec_params("UPDATE nodes SET state = 'available' WHERE id = $1", id);
    return id;
  }
  // A node that takes a one-GPU L4 rental now, with the image and the price a booking
  // needs (made once); a fresh node per case, so every accepted booking finds room.
  std::string bookable_node() {
    if (image_id_.empty()) {
      auto image = post("/v1/admin/images",
                        {{"name", "hostile-cuda-12.4"},
                         {"os", "Ubuntu 22.04"},
                         {"driver_version", "550.54.15"},
                         {"cuda_version", "12.4"}},
                        owner().credentials());
      EXPECT_EQ(image.status, 201) << image.body;
      image_id_ = image.json().value("id", "");
      auto priced = http_request(
          server_->port(), "PUT", "/v1/admin/prices",
          Json::array({{{"gpu_model", "L4-24GB"},
                        {"gpu_count", 1},
                        {"price_per_day", {{"amount_minor", 100000}, {"currency", "RUB"}}}}})
              .dump(),
          with_json(owner().credentials()));
      EXPECT_EQ(priced.status, 200) << priced.body;
    }
    std::string id = available_node();
    tx().exec_params("UPDATE nodes SET health = 'ok' WHERE id = $1", id);
    return id;
  }
  Json rental_body() {
    bookable_node();
    return {{"gpu_model", "L4-24GB"}, {"gpu_count", 1},   {"start", "now"}, {"days", 1},
            {"image_id", image_id_},  {"name", "hostile"}};
  }
  std::string booked_rental() {
    auto r = post("/v1/rentals", rental_body(), owner().credentials());
    EXPECT_EQ(r.status, 201) << r.body;
    return r.json().value("id", "");
  }
  static Headers with_json(Headers h) {
    h["Content-Type"] = "application/json";
    return h;
  }
  std::string fresh_public_key() {
    if (key_dir_.empty()) key_dir_ = make_temp_dir("gpurent-hostile-keys");
    std::string path = key_dir_ + "/" + unique("k");
    auto r = run_subprocess(
        {"ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "hostile", "-f", path});
    EXPECT_EQ(r.exit_code, 0) << r.output;
    std::ifstream in(path + ".pub");
    std::string text;
    std::getline(in, text);
    return text;
  }

  // Every table a request here could write, with the columns it could change (not the
  // last_seen_at / last_used_at stamps that reads leave, nor the audit log that failed
  // sign-ins append to).
  std::string db_rows() {
    auto t = tx();
    std::string out;
    for (const auto& [table, columns] : std::vector<std::pair<std::string, std::string>>{
             {"users", "id, email, password_hash, disabled_at"},
             {"orgs", "id, name"},
             {"memberships", "org_id, user_id, role"},
             {"sessions", "id_hash, current_org_id"},
             {"api_tokens",
              "id, org_id, name, scopes, expires_at, revoked_at, max_concurrent_gpus, max_days,"
              " spend_limit_minor"},
             {"ssh_keys", "id, org_id, name, public_key, fingerprint"},
             {"sites", "id, name, region, timezone"},
             {"nodes",
              "id, site_id, hostname, gpu_model, gpu_count, interconnect, cpu_model, cpu_cores,"
              " ram_gb, disk_gb, labels, state, health, topology_source"},
             {"node_events", "id, node_id, action, from_state, to_state, reason"},
             {"gpus", "node_id, idx, health"},
             {"gpu_links", "node_id, gpu_a, gpu_b, kind"},
             {"node_enrollment_tokens", "token_hash, node_id, used_at"},
             {"images", "id, name, os, driver_version, cuda_version, frameworks, status"},
             {"prices", "id, gpu_model, gpu_count, amount_minor, currency, valid_until"},
             {"rentals", "id, org_id, name, state, node_id, gpu_indices, period, days"},
             {"allocations", "rental_id, gpu_id, period"},
             {"rental_events", "id, rental_id, to_state, reason"}}) {
      auto r = t.exec(
          "SELECT count(*), md5(coalesce(string_agg(x::text, '|' ORDER BY x::text),"
          " '')) FROM (SELECT " +
          columns + " FROM " + table + ") x");
      out +=
          table + ": " + r[0][0].as<std::string>() + " rows, " + r[0][1].as<std::string>() + "\n";
    }
    return out;
  }

  // The per-field and whole-body cases for one endpoint.
  std::vector<HostileCase> cases_for(const BodyEndpoint& ep);

  // Sends one case and checks status, error code, details.field, the database and, for
  // stored values, the read-back.
  void check(const BodyEndpoint& ep, const HostileCase& c) {
    ValidRequest req = ep.make(*this);
    std::string bytes = c.build(req.body);
    std::string label = ep.method + " " + ep.route + " with " + c.label;
    std::string before = db_rows();
    Headers headers = ep.needs_session ? owner().credentials() : Headers{};
    if (!c.content_type.empty()) headers["Content-Type"] = c.content_type;
    auto r = http_request(server_->port(), ep.method, req.path, bytes, headers);
    ++cells_;
    EXPECT_LT(r.status, 500) << label << " → " << r.body.substr(0, 300);
    EXPECT_EQ(r.status, c.expected.status) << label << " → " << r.body.substr(0, 300);
    if (c.expected.status >= 400) {
      auto j = Json::parse(r.body, nullptr, false);
      ASSERT_FALSE(j.is_discarded()) << label << " → " << r.body.substr(0, 300);
      EXPECT_EQ(j["error"]["code"], c.expected.code) << label << " → " << r.body.substr(0, 300);
      if (!c.expected.field.empty()) {
        EXPECT_EQ(j["error"]["details"]["field"], c.expected.field)
            << label << " → " << r.body.substr(0, 300);
      }
      EXPECT_EQ(db_rows(), before) << label << " changed the database";
    } else if (c.expected.stored && r.status == c.expected.status) {
      const std::string& field = c.expected.readback;
      const std::string& sent = req.body[field].get_ref<const std::string&>();
      ASSERT_TRUE(ep.stored) << label << ": no way to read " << field << " back is given";
      EXPECT_EQ(ep.stored(*this, r.json(), req.body, field), sent)
          << label << " was not stored verbatim";
      if (auto shown = ep.shown ? ep.shown(*this, r.json(), field) : std::nullopt) {
        EXPECT_EQ(*shown, sent) << label << " is not shown verbatim";
      }
    }
  }
  void check_endpoint(const BodyEndpoint& ep) {
    owner();  // signed up before the first case's "before" snapshot
    for (const auto& c : cases_for(ep)) check(ep, c);
    std::printf("[ cells    ] %s %s: %d\n", ep.method.c_str(), ep.route.c_str(), cells_);
  }
  const BodyEndpoint& endpoint(const std::string& method, const std::string& route) {
    for (const auto& ep : body_endpoints()) {
      if (ep.method == method && ep.route == route) return ep;
    }
    throw std::runtime_error("no row for " + method + " " + route);
  }

 protected:
  void SetUp() override {
    // Hundreds of requests from one address: rate limits are not under test here. Nor is
    // the lifecycle: its worker would move the rentals the valid cases booked ("start":
    // "now") while a later case compares the database before and after its refusal.
    server_ = std::make_unique<ServerProcess>(
        ServerOptions{.database_url = db_.url(),
                      .flags = {"--rate_limit_per_ip=0", "--rate_limit_per_credential=0",
                                "--lifecycle_interval=24h"}});
  }
  void TearDown() override { conn_.reset(); }

  TestDatabase db_;
  std::unique_ptr<ServerProcess> server_;
  std::unique_ptr<pqxx::connection> conn_;
  std::optional<Session> owner_;
  std::string key_dir_;
  std::string site_id_;
  std::string image_id_;
  int counter_ = 0;
  int cells_ = 0;
};

Expected refused(const std::string& field) {
  return {400, "invalid_request", field};
}
const Expected kInvalidJson = {400, "invalid_json", ""};

Expected verdict_for(Verdict v, const BodyEndpoint& ep, const Field& f) {
  switch (v) {
    case Verdict::kStored:
      return {ep.success, "", "", true, f.name};
    case Verdict::kRefused:
      return refused(f.name);
    case Verdict::kNotFound:
      return {404, "not_found", ""};
    case Verdict::kUnauthenticated:
      return {401, "unauthenticated", ""};
  }
  return {};
}

std::vector<HostileCase> HostileInputE2E::cases_for(const BodyEndpoint& ep) {
  std::vector<HostileCase> out;
  const Expected ok = {ep.success, "", ""};
  auto set = [](const std::string& field, Json value) {
    return [field, value](Json& b) {
      b[field] = value;
      return b.dump();
    };
  };
  // The field's value written as raw JSON text, for what nlohmann cannot build.
  auto set_raw = [](const std::string& field, std::string raw) {
    return [field, raw](Json& b) {
      b[field] = kRawMark;
      return replace_mark(b.dump(), raw, /*quoted=*/true);
    };
  };

  for (const Field& f : ep.fields) {
    auto named = [&f](const std::string& what) { return f.name + " " + what; };
    const Expected absent = f.required ? refused(f.name) : ok;
    out.push_back({named("missing"),
                   [n = f.name](Json& b) {
                     b.erase(n);
                     return b.dump();
                   },
                   absent});
    out.push_back({named("null"), set(f.name, nullptr), absent});

    std::vector<std::pair<std::string, Json>> wrong;
    switch (f.kind) {
      case Kind::kString:
        wrong = {{"a number", 42},
                 {"a fraction", -1.5},
                 {"true", true},
                 {"false", false},
                 {"an empty array", Json::array()},
                 {"an array of a string", Json::array({"x"})},
                 {"an empty object", Json::object()},
                 {"an object", {{"x", "y"}}}};
        break;
      case Kind::kInt:
        wrong = {{"a numeric string", "7"},
                 {"an empty string", ""},
                 {"an SQL string", "1; DROP TABLE users; --"},
                 {"true", true},
                 {"an array", Json::array({1})},
                 {"an object", Json::object()},
                 {"a fraction", 1.5},
                 {"1e300", 1e300},
                 {"min - 1", f.min - 1},
                 {"max + 1", f.max + 1},
                 {"INT64_MIN", std::numeric_limits<std::int64_t>::min()},
                 {"INT64_MAX", std::numeric_limits<std::int64_t>::max()},
                 {"UINT64_MAX", std::numeric_limits<std::uint64_t>::max()}};
        out.push_back({named("= its minimum"), set(f.name, f.min), ok});
        out.push_back(
            {named("= its maximum"), set(f.name, f.max), f.max_accepted ? ok : refused(f.name)});
        // Beyond 64 bits the parser yields a float, which is not an integer.
        out.push_back(
            {named("with 20 digits"), set_raw(f.name, "99999999999999999999"), refused(f.name)});
        break;
      case Kind::kStringList:
        wrong = {{"a string", "rentals:read"},
                 {"a number", 42},
                 {"true", true},
                 {"an object", Json::object()},
                 {"an empty list", Json::array()},
                 {"a list of a number", Json::array({42})},
                 {"a list of null", Json::array({nullptr})},
                 {"a nested list", Json::array({Json::array({"rentals:read"})})},
                 {"a list of an object", Json::array({Json::object()})},
                 {"an unknown scope", Json::array({"rentals:READ"})},
                 {"a scope with a space", Json::array({"rentals:read "})},
                 {"17 entries", Json(std::vector<std::string>(17, "rentals:read"))}};
        break;
      case Kind::kMoney: {
        auto money = [](Json amount, Json currency) {
          return Json{{"amount_minor", amount}, {"currency", currency}};
        };
        wrong = {
            {"a number", 100}, {"a string", "100"}, {"true", true}, {"an array", Json::array()}};
        std::vector<std::tuple<std::string, Json, std::string>> sub = {
            {"an empty object", Json::object(), ".amount_minor"},
            {"a fractional amount", money(1.5, "RUB"), ".amount_minor"},
            {"a string amount", money("100", "RUB"), ".amount_minor"},
            {"a negative amount", money(-1, "RUB"), ".amount_minor"},
            {"a UINT64_MAX amount", money(std::numeric_limits<std::uint64_t>::max(), "RUB"),
             ".amount_minor"},
            {"no currency", Json{{"amount_minor", 1}}, ".currency"},
            {"a lower-case currency", money(1, "rub"), ".currency"},
            {"an SQL currency", money(1, "'; DROP TABLE users; --"), ".currency"},
            {"a numeric currency", money(1, 643), ".currency"},
            {"a NUL in the currency", money(1, std::string("RU\0", 3)), ".currency"},
            {"an unknown member", Json{{"amount_minor", 1}, {"currency", "RUB"}, {"x", 1}}, ".x"},
        };
        for (const auto& [what, value, suffix] : sub) {
          out.push_back({named(what), set(f.name, value), refused(f.name + suffix)});
        }
        out.push_back({named("zero"), set(f.name, money(0, "RUB")), ok});
        out.push_back({named("INT64_MAX"),
                       set(f.name, money(std::numeric_limits<std::int64_t>::max(), "RUB")), ok});
        break;
      }
    }
    for (const auto& [what, value] : wrong) {
      out.push_back({named("as " + what), set(f.name, value), refused(f.name)});
    }

    // Hostile text, where the field takes text (or a list of it).
    if (f.kind != Kind::kString && f.kind != Kind::kStringList) continue;
    for (const Payload& p : payloads()) {
      HostileCase c;
      c.label = named("holding " + p.label);
      bool list = f.kind == Kind::kStringList;
      c.build = [this, &f, &p, list](Json& b) {
        std::string value = f.shape ? f.shape(*this, p.text) : p.text;
        b[f.name] = list ? Json::array({value}) : Json(value);
        return p.cls == Payload::kUnparsable ? replace_mark(b.dump(), p.raw) : b.dump();
      };
      switch (p.cls) {
        case Payload::kPrintable:
          c.expected = list ? refused(f.name) : verdict_for(f.printable, ep, f);
          break;
        case Payload::kControl:
          c.expected = list ? refused(f.name) : verdict_for(f.control, ep, f);
          break;
        case Payload::kUnparsable:
          c.expected = kInvalidJson;
          break;
        case Payload::kHuge:
          c.expected = refused(f.name);
          break;
      }
      out.push_back(c);
    }
  }

  // The body as a whole.
  const Field& first = ep.fields.front();
  out.push_back({"the valid body (control)", [](Json& b) { return b.dump(); }, ok});
  out.push_back({"an empty object", [](Json&) { return std::string("{}"); }, refused(first.name)});
  for (const std::string& extra :
       {std::string("zz_unknown"), std::string("'; DROP TABLE users; --"),
        std::string(first.name.size(), 'X'), std::string("")}) {
    out.push_back({"an unknown field \"" + extra + "\"", set(extra, 1), refused(extra)});
  }
  {
    std::string capitalised = first.name;
    capitalised[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(capitalised[0])));
    out.push_back({"the first field capitalised as an extra field", set(capitalised, "x"),
                   refused(capitalised)});
  }
  for (const auto& [what, text] :
       std::vector<std::pair<std::string, std::string>>{{"an empty array", "[]"},
                                                        {"a bare string", "\"just a string\""},
                                                        {"a number", "42"},
                                                        {"true", "true"},
                                                        {"null", "null"}}) {
    out.push_back({"a body that is " + what, [t = text](Json&) { return t; }, refused("body")});
  }
  out.push_back({"the valid body inside an array", [](Json& b) { return Json::array({b}).dump(); },
                 refused("body")});
  for (const auto& [what, text] : std::vector<std::pair<std::string, std::string>>{
           {"an empty body", ""},
           {"an open brace", "{"},
           {"a cut-off member", "{\"email\":"},
           {"single quotes", "{'email': 'x'}"},
           {"a trailing comma", "{\"a\": 1,}"},
           {"invalid UTF-8 bytes", "\xFF\xFE"},
           {"a raw NUL byte", std::string("{\"a\":\"\0\"}", 9)},
           {"a bare lone surrogate", "\"\\ud800\""},
           {"a comment", "/* hi */ {}"}}) {
    out.push_back({what, [t = text](Json&) { return t; }, kInvalidJson});
  }
  out.push_back({"the valid body and trailing garbage",
                 [](Json& b) { return b.dump() + " trailing"; }, kInvalidJson});
  out.push_back({"the valid body as text/plain", [](Json& b) { return b.dump(); },
                 refused("Content-Type"), "text/plain"});
  out.push_back({"the valid body without Content-Type", [](Json& b) { return b.dump(); },
                 refused("Content-Type"), ""});
  // 100 000 nested arrays: refused as the wrong type, never a crash in the parser.
  out.push_back({"100000 nested arrays in " + first.name,
                 set_raw(first.name, std::string(100000, '[') + std::string(100000, ']')),
                 refused(first.name)});
  // The body limit: one byte over is 413 before any handler runs; exactly at it is read.
  auto padded = [n = first.name](std::size_t total) {
    return [n, total](Json& b) {
      b[n] = "";
      std::size_t base = b.dump().size();
      b[n] = std::string(total - base, 'a');
      return b.dump();
    };
  };
  out.push_back(
      {"a body one byte over the limit", padded(kBodyLimit + 1), {413, "payload_too_large", ""}});
  out.push_back({"a body exactly at the limit", padded(kBodyLimit), refused(first.name)});
  return out;
}

// Email-shaped hostile text: signup and members validate the shape of an address before
// anything else, so the hostile part goes into a local part of its own.
std::string as_email(HostileInputE2E& t, const std::string& text) {
  return "x" + without_spaces(text) + t.unique("") + "@example.com";
}
std::string as_password(HostileInputE2E&, const std::string& text) {
  return text + " and enough";
}

// The table: every endpoint that takes a JSON body, its fields in the order the handler reads
// them, and what hostile text means for each.
const std::vector<BodyEndpoint>& body_endpoints() {
  using T = HostileInputE2E;
  using V = Verdict;
  static const std::vector<BodyEndpoint> endpoints = {
      {"POST",
       "/v1/auth/signup",
       false,
       201,
       {{"email", Kind::kString, true, V::kStored, V::kRefused, as_email},
        {"password", Kind::kString, true, V::kStored, V::kStored, as_password},
        {"org_name", Kind::kString, true, V::kStored, V::kRefused}},
       [](T& t) {
         return ValidRequest{"/v1/auth/signup",
                             {{"email", t.unique("new") + "@example.com"},
                              {"password", kPassword},
                              {"org_name", "Acme"}}};
       },
       [](T& t, const Json& response, const Json& sent, const std::string& field) {
         if (field == "email") {
           return t.query_one("SELECT email FROM users WHERE id = $1",
                              response["user"]["id"].get<std::string>());
         }
         if (field == "org_name") {
           return t.query_one("SELECT name FROM orgs WHERE id = $1",
                              response["org"]["id"].get<std::string>());
         }
         // The password reads back as a sign-in that works with exactly it.
         auto l =
             t.post("/v1/auth/login", {{"email", sent["email"]}, {"password", sent["password"]}});
         return l.status == 200 ? sent["password"].get<std::string>() : "login → " + l.body;
       },
       [](T&, const Json& response, const std::string& field) -> std::optional<std::string> {
         if (field == "email") return response["user"]["email"].get<std::string>();
         if (field == "org_name") return response["org"]["name"].get<std::string>();
         return std::nullopt;
       }},
      // Each case signs in as an account of its own, so failed attempts never reach the
      // per-account throttle (5); the 16 that fail stay under the per-address one (20).
      {"POST",
       "/v1/auth/login",
       false,
       200,
       {{"email", Kind::kString, true, V::kUnauthenticated, V::kUnauthenticated},
        {"password", Kind::kString, true, V::kUnauthenticated, V::kUnauthenticated, as_password}},
       [](T& t) {
         return ValidRequest{"/v1/auth/login", {{"email", t.bare_user()}, {"password", kPassword}}};
       },
       nullptr,
       nullptr},
      {"POST",
       "/v1/session/org",
       true,
       200,
       {{"org_id", Kind::kString, true, V::kNotFound, V::kNotFound}},
       [](T& t) {
         return ValidRequest{"/v1/session/org", {{"org_id", t.owner().org_id}}};
       },
       nullptr,
       nullptr},
      {"POST",
       "/v1/members",
       true,
       201,
       {{"email", Kind::kString, true, V::kNotFound, V::kRefused, as_email},
        {"role", Kind::kString, true, V::kRefused, V::kRefused}},
       [](T& t) {
         return ValidRequest{"/v1/members", {{"email", t.bare_user()}, {"role", "viewer"}}};
       },
       nullptr,
       nullptr},
      {"PATCH",
       "/v1/members/{user_id}",
       true,
       200,
       {{"role", Kind::kString, true, V::kRefused, V::kRefused}},
       [](T& t) {
         return ValidRequest{"/v1/members/" + t.bare_member("member"), {{"role", "billing"}}};
       },
       nullptr,
       nullptr},
      {"POST",
       "/v1/ssh-keys",
       true,
       201,
       {{"name", Kind::kString, true, V::kStored, V::kRefused},
        {"public_key", Kind::kString, true, V::kRefused, V::kRefused,
         [](T&, const std::string& text) { return "ssh-ed25519 " + text; }}},
       [](T& t) {
         return ValidRequest{"/v1/ssh-keys",
                             {{"name", "laptop"}, {"public_key", t.fresh_public_key()}}};
       },
       [](T& t, const Json& response, const Json&, const std::string& field) {
         if (field != "name") return "no query for " + field;
         return t.query_one("SELECT name FROM ssh_keys WHERE id = $1",
                            response["id"].get<std::string>());
       },
       [](T& t, const Json& response, const std::string& field) -> std::optional<std::string> {
         auto r = t.get("/v1/ssh-keys/" + response["id"].get<std::string>());
         return r.status == 200 ? r.json()[field].get<std::string>() : "GET → " + r.body;
       }},
      {"POST",
       "/v1/api-tokens",
       true,
       201,
       {{"name", Kind::kString, true, V::kStored, V::kRefused},
        {"scopes", Kind::kStringList, true},
        {"expires_in_days", Kind::kInt, false, V::kRefused, V::kRefused, nullptr, 1, 3650},
        {"max_concurrent_gpus", Kind::kInt, false, V::kRefused, V::kRefused, nullptr, 0, 100000},
        {"max_days", Kind::kInt, false, V::kRefused, V::kRefused, nullptr, 1, 3650},
        {"spend_limit", Kind::kMoney, false}},
       [](T&) {
         return ValidRequest{"/v1/api-tokens", {{"name", "ci"}, {"scopes", {"rentals:read"}}}};
       },
       [](T& t, const Json& response, const Json&, const std::string& field) {
         if (field != "name") return "no query for " + field;
         return t.query_one("SELECT name FROM api_tokens WHERE id = $1",
                            response["id"].get<std::string>());
       },
       [](T& t, const Json& response, const std::string& field) -> std::optional<std::string> {
         auto r = t.get("/v1/api-tokens");
         Json list = r.json();
         for (const auto& item : list["items"]) {
           if (item["id"] == response["id"]) return item[field].get<std::string>();
         }
         return "not listed: " + r.body.substr(0, 200);
       }},
      {"POST",
       "/v1/admin/sites",
       true,
       201,
       {{"name", Kind::kString, true, V::kStored, V::kRefused},
        {"region", Kind::kString, true, V::kStored, V::kRefused},
        {"timezone", Kind::kString, true, V::kRefused, V::kRefused}},
       [](T& t) {
         return ValidRequest{"/v1/admin/sites",
                             {{"name", t.unique("DC")}, {"region", "eu"}, {"timezone", "UTC"}}};
       },
       [](T& t, const Json& response, const Json&, const std::string& field) {
         std::string id = response["id"].get<std::string>();
         if (field == "name") return t.query_one("SELECT name FROM sites WHERE id = $1", id);
         if (field == "region") return t.query_one("SELECT region FROM sites WHERE id = $1", id);
         return "no query for " + field;
       },
       [](T&, const Json& response, const std::string& field) -> std::optional<std::string> {
         return response[field].get<std::string>();
       }},
      {"POST",
       "/v1/admin/nodes",
       true,
       201,
       {{"site_id", Kind::kString, true, V::kRefused, V::kRefused},
        {"hostname", Kind::kString, true, V::kRefused, V::kRefused},
        {"gpu_model", Kind::kString, true, V::kRefused, V::kRefused},
        {"gpu_count", Kind::kInt, true, V::kRefused, V::kRefused, nullptr, 1, 64},
        {"interconnect", Kind::kString, false, V::kRefused, V::kRefused},
        {"cpu_model", Kind::kString, false, V::kStored, V::kRefused},
        {"cpu_cores", Kind::kInt, false, V::kRefused, V::kRefused, nullptr, 1, 4096},
        {"ram_gb", Kind::kInt, false, V::kRefused, V::kRefused, nullptr, 1, 1 << 20},
        {"disk_gb", Kind::kInt, false, V::kRefused, V::kRefused, nullptr, 1, 1 << 24}},
       [](T& t) {
         return ValidRequest{"/v1/admin/nodes",
                             {{"site_id", t.site_id()},
                              {"hostname", t.unique("gpu")},
                              {"gpu_model", "RTX4090-24GB"},
                              {"gpu_count", 8},
                              {"cpu_model", "EPYC"}}};
       },
       [](T& t, const Json& response, const Json&, const std::string& field) {
         if (field != "cpu_model") return "no query for " + field;
         return t.query_one("SELECT cpu_model FROM nodes WHERE id = $1",
                            response["node"]["id"].get<std::string>());
       },
       [](T&, const Json& response, const std::string& field) -> std::optional<std::string> {
         return response["node"][field].get<std::string>();
       }},
      {"POST",
       "/v1/admin/nodes/{id}/drain",
       true,
       200,
       {{"reason", Kind::kString, true, V::kStored, V::kRefused}},
       [](T& t) {
         return ValidRequest{"/v1/admin/nodes/" + t.available_node() + "/drain",
                             {{"reason", "fan noise"}}};
       },
       [](T& t, const Json& response, const Json&, const std::string& field) {
         if (field != "reason") return "no query for " + field;
         return t.query_one(
             "SELECT reason FROM node_events WHERE node_id = $1 ORDER BY id DESC"
             " LIMIT 1",
             response["id"].get<std::string>());
       },
       [](T&, const Json& response, const std::string&) -> std::optional<std::string> {
         return response["events"][0]["reason"].get<std::string>();
       }},
      {"POST",
       "/v1/admin/images",
       true,
       201,
       {{"name", Kind::kString, true, V::kStored, V::kRefused},
        {"os", Kind::kString, true, V::kStored, V::kRefused},
        {"driver_version", Kind::kString, true, V::kRefused, V::kRefused},
        {"cuda_version", Kind::kString, true, V::kRefused, V::kRefused}},
       [](T& t) {
         return ValidRequest{"/v1/admin/images",
                             {{"name", t.unique("image")},
                              {"os", "Ubuntu 24.04"},
                              {"driver_version", "570.124.06"},
                              {"cuda_version", "12.8"},
                              {"frameworks", {"PyTorch 2.7"}}}};
       },
       [](T& t, const Json& response, const Json&, const std::string& field) {
         std::string id = response["id"].get<std::string>();
         if (field == "name") return t.query_one("SELECT name FROM images WHERE id = $1", id);
         if (field == "os") return t.query_one("SELECT os FROM images WHERE id = $1", id);
         return "no query for " + field;
       },
       [](T&, const Json& response, const std::string& field) -> std::optional<std::string> {
         return response[field].get<std::string>();
       }},
      // Rentals. ssh_key_ids and constraints are not text fields: their malformed shapes have
      // their own cases in rentals_e2etest.cpp and rental_requests_e2etest.cpp.
      {"POST",
       "/v1/rentals",
       true,
       201,
       {{"gpu_model", Kind::kString, true, V::kRefused, V::kRefused},
        {"gpu_count", Kind::kInt, true, V::kRefused, V::kRefused, nullptr, 1, 64, false},
        {"interconnect", Kind::kString, false, V::kRefused, V::kRefused},
        {"start", Kind::kString, false, V::kRefused, V::kRefused},
        {"days", Kind::kInt, true, V::kRefused, V::kRefused, nullptr, 1, 365},
        {"image_id", Kind::kString, true, V::kRefused, V::kRefused},
        {"name", Kind::kString, false, V::kStored, V::kRefused}},
       [](T& t) {
         return ValidRequest{"/v1/rentals", t.rental_body()};
       },
       [](T& t, const Json& response, const Json&, const std::string& field) {
         if (field != "name") return "no query for " + field;
         return t.query_one("SELECT name FROM rentals WHERE id = $1",
                            response["id"].get<std::string>());
       },
       [](T&, const Json& response, const std::string& field) -> std::optional<std::string> {
         return response[field].get<std::string>();
       }},
      {"POST",
       "/v1/quotes",
       true,
       200,
       {{"gpu_model", Kind::kString, true, V::kRefused, V::kRefused},
        {"gpu_count", Kind::kInt, true, V::kRefused, V::kRefused, nullptr, 1, 64, false},
        {"interconnect", Kind::kString, false, V::kRefused, V::kRefused},
        {"start", Kind::kString, false, V::kRefused, V::kRefused},
        {"days", Kind::kInt, true, V::kRefused, V::kRefused, nullptr, 1, 365},
        {"image_id", Kind::kString, true, V::kRefused, V::kRefused}},
       [](T& t) {
         Json body = t.rental_body();
         body.erase("name");
         return ValidRequest{"/v1/quotes", body};
       },
       nullptr,
       nullptr},
      // One more day is the least; a year more than a day's rental is past the longest.
      {"POST",
       "/v1/rentals/{id}/extend",
       true,
       200,
       {{"days", Kind::kInt, true, V::kRefused, V::kRefused, nullptr, 1, 365, false}},
       [](T& t) {
         return ValidRequest{"/v1/rentals/" + t.booked_rental() + "/extend", {{"days", 1}}};
       },
       nullptr,
       nullptr},
  };
  return endpoints;
}

TEST_F(HostileInputE2E, RentalBodies) {
  check_endpoint(endpoint("POST", "/v1/rentals"));
}

TEST_F(HostileInputE2E, QuoteBodies) {
  check_endpoint(endpoint("POST", "/v1/quotes"));
}

TEST_F(HostileInputE2E, ExtendBodies) {
  check_endpoint(endpoint("POST", "/v1/rentals/{id}/extend"));
}

TEST_F(HostileInputE2E, SiteBodies) {
  check_endpoint(endpoint("POST", "/v1/admin/sites"));
}

TEST_F(HostileInputE2E, NodeBodies) {
  check_endpoint(endpoint("POST", "/v1/admin/nodes"));
}

TEST_F(HostileInputE2E, NodeTransitionBodies) {
  check_endpoint(endpoint("POST", "/v1/admin/nodes/{id}/drain"));
}

TEST_F(HostileInputE2E, ImageBodies) {
  check_endpoint(endpoint("POST", "/v1/admin/images"));
}

TEST_F(HostileInputE2E, SignupBodies) {
  check_endpoint(endpoint("POST", "/v1/auth/signup"));
}

TEST_F(HostileInputE2E, LoginBodies) {
  check_endpoint(endpoint("POST", "/v1/auth/login"));
}

TEST_F(HostileInputE2E, SessionOrgBodies) {
  check_endpoint(endpoint("POST", "/v1/session/org"));
}

TEST_F(HostileInputE2E, AddMemberBodies) {
  check_endpoint(endpoint("POST", "/v1/members"));
}

TEST_F(HostileInputE2E, ChangeMemberRoleBodies) {
  check_endpoint(endpoint("PATCH", "/v1/members/{user_id}"));
}

TEST_F(HostileInputE2E, SshKeyBodies) {
  check_endpoint(endpoint("POST", "/v1/ssh-keys"));
}

TEST_F(HostileInputE2E, ApiTokenBodies) {
  check_endpoint(endpoint("POST", "/v1/api-tokens"));
}

// LIKE wildcards must match only themselves: "%" as an email or org id finds nobody.
TEST_F(HostileInputE2E, WildcardsMatchNothingButThemselves) {
  std::string victim = bare_user();  // "bare-N@example.com", password kPassword
  for (const std::string& pattern :
       {std::string("%"), std::string("%@example.com"), std::string("bare-_@example.com"),
        "BARE-" + victim.substr(5)}) {
    auto r = post("/v1/auth/login", {{"email", pattern}, {"password", kPassword}});
    // Case-insensitive equality is the rule, so the upper-cased address is the one that signs in.
    int expected = pattern == "BARE-" + victim.substr(5) ? 200 : 401;
    EXPECT_EQ(r.status, expected) << pattern << " → " << r.body;
  }
  std::string before = db_rows();
  for (const char* email : {"%@example.com", "_%@example.com", "bare-%@example.com"}) {
    auto r = post("/v1/members", {{"email", email}, {"role", "viewer"}}, owner().credentials());
    EXPECT_EQ(r.status, 404) << email << " → " << r.body;
  }
  auto sw = post("/v1/session/org", {{"org_id", "org_%"}}, owner().credentials());
  EXPECT_EQ(sw.status, 404) << sw.body;
  EXPECT_EQ(db_rows(), before);
}

// A query string and the parameter a 400 must name; empty: 200.
using QueryCase = std::pair<std::string, std::string>;

// Hostile ?limit= and ?cursor= that every paged list refuses.
std::vector<QueryCase> common_list_cases() {
  return {
      {"limit=abc", "limit"},
      {"limit=-1", "limit"},
      {"limit=0", "limit"},
      {"limit=501", "limit"},
      {"limit=", "limit"},
      {"limit=1.5", "limit"},
      {"limit=1e2", "limit"},
      {"limit=0x10", "limit"},
      {"limit=%2B5", "limit"},  // "+5"
      {"limit=%205", "limit"},  // " 5"
      {"limit=5%20", "limit"},
      {"limit=%EF%BC%95", "limit"},  // FULLWIDTH DIGIT FIVE
      {"limit=2147483648", "limit"},
      {"limit=-2147483649", "limit"},
      {"limit=99999999999999999999", "limit"},
      {"limit=%27%3B%20DROP%20TABLE%20users%3B--", "limit"},
      // An undecodable value (%00, a bad or cut-off escape) is 400 naming the parameter,
      // never taken for an absent one.
      {"limit=5%00", "limit"},
      {"limit=%ZZ", "limit"},
      {"limit=5%", "limit"},
      {"cursor=%G0", "cursor"},
      {"cursor=", "cursor"},
      {"cursor=garbage", "cursor"},
      {"cursor=.", "cursor"},
      {"cursor=1.", "cursor"},
      {"cursor=-1", "cursor"},
      {"cursor=%27%3B%20DROP%20TABLE%20users%3B--", "cursor"},
      {"cursor=" + std::string(4000, 'c'), "cursor"},
      {"limit=1", ""},
      {"limit=500", ""},
  };
}

// List routes: hostile ?limit= and ?cursor= are 400 naming the parameter, never 5xx.
class HostileInputListsE2E : public HostileInputE2E {
 protected:
  void check_list(const std::string& path, const std::vector<QueryCase>& cases) {
    for (const auto& [query, field] : cases) {
      auto r = get(path + "?" + query);
      std::string label = "GET " + path + "?" + query.substr(0, 80);
      ++cells_;
      EXPECT_LT(r.status, 500) << label << " → " << r.body.substr(0, 300);
      if (field.empty()) {
        EXPECT_EQ(r.status, 200) << label << " → " << r.body.substr(0, 300);
        continue;
      }
      EXPECT_EQ(r.status, 400) << label << " → " << r.body.substr(0, 300);
      if (r.status == 400) {
        EXPECT_EQ(r.json()["error"]["code"], "invalid_request") << label;
        EXPECT_EQ(r.json()["error"]["details"]["field"], field) << label;
      }
    }
  }
};

TEST_F(HostileInputListsE2E, SshKeyListQueryParameters) {
  for (int i = 0; i < 3; ++i) {
    auto r = post("/v1/ssh-keys", {{"name", "k"}, {"public_key", fresh_public_key()}},
                  owner().credentials());
    ASSERT_EQ(r.status, 201) << r.body;
  }
  std::string key = new_id(id_prefix::kSshKey);
  auto cases = common_list_cases();
  cases.insert(cases.end(), {
                                {"cursor=-1." + key, "cursor"},
                                {"cursor=1.key_short", "cursor"},
                                {"cursor=1." + key + "%00", "cursor"},
                                {"cursor=1.%25", "cursor"},
                                // 19 digits: longer than any cursor this list makes.
                                {"cursor=1234567890123456789." + key, "cursor"},
                                // Well-formed cursors that point nowhere page from there.
                                {"cursor=0." + key, ""},
                                {"cursor=999999999999999999." + key, ""},
                            });
  check_list("/v1/ssh-keys", cases);
  std::printf("[ cells    ] GET /v1/ssh-keys: %d\n", cells_);
}

TEST_F(HostileInputListsE2E, AuditListQueryParameters) {
  auto cases = common_list_cases();
  cases.insert(cases.end(), {
                                {"cursor=0", "cursor"},
                                {"cursor=1", "cursor"},  // "<micros>.<row id>" only
                                {"cursor=1.0", "cursor"},
                                {"cursor=1.9223372036854775808", "cursor"},
                                {"cursor=1.1%00", "cursor"},
                                {"cursor=1.1", ""},
                                {"cursor=1.9223372036854775807", ""},
                                {"limit=5&limit=6", "limit"},
                                {"LIMIT=5", "LIMIT"},
                                {"%27%3B--=1", "';--"},
                                {"since=yesterday", "since"},
                                {"since=2026-02-30T00:00:00Z", "since"},
                                {"actor_user_id=%27%20OR%201%3D1", "actor_user_id"},
                                {"action=%25", "action"},
                                {"since=2026-01-01T00:00:00Z", ""},
                            });
  check_list("/v1/audit", cases);
  std::printf("[ cells    ] GET /v1/audit: %d\n", cells_);
}

// API.md "Conventions": every list takes ?limit= (max 500) and ?cursor=; members and API
// tokens page like the others, and following next_cursor returns every item once.
TEST_F(HostileInputListsE2E, MemberAndTokenListsCheckTheirQueryParameters) {
  bare_member("viewer");
  for (int i = 0; i < 2; ++i) {
    ASSERT_EQ(
        post("/v1/api-tokens", {{"name", "t"}, {"scopes", {"rentals:read"}}}, owner().credentials())
            .status,
        201);
  }
  for (const std::string list : {"/v1/members", "/v1/api-tokens"}) {
    check_list(list, common_list_cases());
    auto one = get(list + "?limit=1");
    ASSERT_EQ(one.status, 200) << one.body;
    EXPECT_EQ(one.json()["items"].size(), 1u) << list << "?limit=1 → " << one.body.substr(0, 300);
    EXPECT_TRUE(one.json()["next_cursor"].is_string()) << list << "?limit=1";
    std::set<std::string> seen;
    std::string cursor;
    int pages = 0;
    do {
      auto page = get(list + "?limit=1" + (cursor.empty() ? "" : "&cursor=" + cursor));
      ASSERT_EQ(page.status, 200) << page.body;
      auto body = page.json();  // kept: the loop reads into it
      for (const auto& item : body["items"]) {
        std::string id = item.contains("user_id") ? item["user_id"] : item["id"];
        EXPECT_TRUE(seen.insert(id).second) << list << " repeats " << id;
      }
      auto next = body["next_cursor"];
      cursor = next.is_string() ? next.get<std::string>() : "";
      ASSERT_LT(++pages, 10) << list;
    } while (!cursor.empty());
    auto all = get(list);
    EXPECT_EQ(seen.size(), all.json()["items"].size()) << list;
    EXPECT_GE(seen.size(), 2u) << list;
  }
}

TEST_F(HostileInputListsE2E, NodeListQueryParameters) {
  available_node();
  available_node();
  std::string node = new_id(id_prefix::kNode);
  auto cases = common_list_cases();
  cases.insert(cases.end(), {
                                {"cursor=1." + new_id(id_prefix::kSshKey), "cursor"},
                                {"cursor=0." + node, ""},
                                {"state=asleep", "state"},
                                {"state=AVAILABLE", "state"},
                                {"state=%27%20OR%201%3D1--", "state"},
                                {"site_id=sit_%25", "site_id"},
                                {"site_id=" + new_id(id_prefix::kSite), ""},
                                {"gpu_model=%27%3B%20DROP%20TABLE%20nodes%3B--", ""},
                                {"state=available&state=failed", "state"},
                                {"hostname=x", "hostname"},
                            });
  check_list("/v1/admin/nodes", cases);
  std::printf("[ cells    ] GET /v1/admin/nodes: %d\n", cells_);
}

// The catalog lists cut their pages from the cached snapshot; their cursors are checked
// like every other list's.
TEST_F(HostileInputListsE2E, RentalListQueryParameters) {
  booked_rental();
  booked_rental();
  std::string rental = new_id(id_prefix::kRental);
  auto cases = common_list_cases();
  cases.insert(cases.end(), {
                                {"cursor=1." + new_id(id_prefix::kSshKey), "cursor"},
                                {"cursor=0." + rental, ""},
                                {"state=asleep", "state"},
                                {"state=ACTIVE", "state"},
                                {"state=%27%20OR%201%3D1--", "state"},
                                {"state=active&state=ended", "state"},
                                {"state=scheduled", ""},
                                {"gpu_model=x", "gpu_model"},
                            });
  check_list("/v1/rentals", cases);
  cases.insert(cases.end(), {
                                {"org_id=org_%25", "org_id"},
                                {"org_id=" + owner().org_id, ""},
                                {"node_id=" + new_id(id_prefix::kNode), ""},
                                {"node_id=%00", "node_id"},
                            });
  check_list("/v1/admin/rentals", cases);
  std::printf("[ cells    ] GET /v1/rentals, /v1/admin/rentals: %d\n", cells_);
}

// The capacity views take no paging; their own parameters are numbers in a range, a link
// kind, and a date or time.
TEST_F(HostileInputListsE2E, CapacityViewQueryParameters) {
  bookable_node();
  const std::vector<QueryCase> shared = {
      {"gpu_count=0", "gpu_count"},
      {"gpu_count=65", "gpu_count"},
      {"gpu_count=1.5", "gpu_count"},
      {"gpu_count=%2B1", "gpu_count"},
      {"gpu_count=99999999999999999999", "gpu_count"},
      {"gpu_count=1%00", "gpu_count"},
      {"interconnect=NVLINK", "interconnect"},
      {"interconnect=%27%3B--", "interconnect"},
      {"days=0", "days"},
      {"days=abc", "days"},
      {"gpu_count=1&gpu_count=2", "gpu_count"},
      {"gpu_model=%27%3B%20DROP%20TABLE%20nodes%3B--&gpu_count=1", ""},
      {"limit=5", "limit"},
  };
  auto offers = shared;
  offers.insert(offers.end(), {
                                  {"", ""},
                                  {"gpu_model=L4-24GB&gpu_count=1&days=365", ""},
                                  {"days=366", "days"},
                                  {"start=tomorrow", "start"},
                                  {"start=2026-13-45", "start"},
                                  {"start=" + std::string(300, '9'), "start"},
                                  {"start=now", ""},
                              });
  check_list("/v1/offers", offers);
  auto calendar = shared;
  for (auto& c : calendar) {
    // The calendar needs a model of the catalog, where the offers list none for another.
    if (c.first.rfind("gpu_model=", 0) == 0) {
      c.second = "gpu_model";
    } else {
      c.first = "gpu_model=L4-24GB&" + c.first;
    }
  }
  calendar.insert(calendar.end(), {
                                      {"", "gpu_model"},
                                      {"gpu_model=L4-24GB&days=90", ""},
                                      {"gpu_model=L4-24GB&days=91", "days"},
                                      {"gpu_model=L4-24GB&from=2026-13-45", "from"},
                                      {"gpu_model=L4-24GB&from=%27%3B--", "from"},
                                      {"gpu_model=L4-24GB&from=" + std::string(300, '9'), "from"},
                                  });
  check_list("/v1/availability", calendar);
  std::printf("[ cells    ] GET /v1/offers, /v1/availability: %d\n", cells_);
}

TEST_F(HostileInputListsE2E, CatalogListQueryParameters) {
  for (const std::string list : {"/v1/gpu-models", "/v1/images", "/v1/admin/sites"}) {
    check_list(list, common_list_cases());
  }
}

}  // namespace gpurent::testing::hostile_input_e2e
