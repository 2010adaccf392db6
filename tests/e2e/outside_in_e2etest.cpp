// Generated requests against every operation that the served /v1/openapi.json lists: random
// and hostile path parameters, query strings, headers and bodies, sent as the org owner's API
// token, as the owner's session and anonymously. Whatever is sent, the answer is a response
// below 500 in the contract's error format; a 5xx or a connection closed without an answer
// fails, printing the request. The run is seeded (GPURENT_OUTSIDE_IN_SEED replays one) and
// counts requests, not time, so a seed always generates the same requests (only the ids the
// server gives the objects made for the run differ).
#include "tests/support/api_fixture.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cctype>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace gpurent::testing::outside_in_e2e {

using Json = nlohmann::json;

constexpr std::uint64_t kDefaultSeed = 20260601;
// Requests per operation for each caller; the run's length is operations × 3 × this.
constexpr int kRequestsPerCaller = 45;
// Failures printed in full; the run stops after these, since each dropped connection costs
// the whole timeout.
constexpr int kFailuresShown = 20;
constexpr auto kResponseTimeout = std::chrono::seconds(10);

const std::vector<std::string> kAllScopes = {"rentals:read",   "rentals:write", "billing:read",
                                             "ssh-keys:write", "members:write", "tokens:write",
                                             "admin"};

// OpenSSH public keys, fixed so a seed replays exactly.
const std::vector<std::string> kPublicKeys = {
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIP3H5HXj1ch6UB8vhPC0cdg2zzQsWafaJ3D40tabxWy9",
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIF8F+0AHQDM0UtiG+f0bY3yoA9d+MGrT2Le22i1hKrPa",
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIPfuFiw/NIM1etjR/2+Jkh38M4PK2+ti1dFAjB+7+YNQ",
};

std::uint64_t seed_from_env() {
  const char* text = std::getenv("GPURENT_OUTSIDE_IN_SEED");
  if (!text || !*text) return kDefaultSeed;
  return std::strtoull(text, nullptr, 10);
}

// FNV-1a: each (operation, caller) gets a stream of its own, so adding an operation to the
// document leaves the requests sent to every other one unchanged.
std::uint64_t stream_seed(std::uint64_t seed, const std::string& label) {
  std::uint64_t h = 1469598103934665603ULL ^ seed;
  for (unsigned char c : label) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return h;
}

class Rng {
 public:
  explicit Rng(std::uint64_t seed) : engine_(seed) {}
  std::size_t below(std::size_t n) { return n == 0 ? 0 : engine_() % n; }
  bool chance(int percent) { return static_cast<int>(below(100)) < percent; }
  template <typename T>
  const T& pick(const std::vector<T>& items) {
    return items[below(items.size())];
  }
  std::string alnum(std::size_t n) {
    static constexpr char kChars[] =
        "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    std::string s;
    for (std::size_t i = 0; i < n; ++i) s.push_back(kChars[below(62)]);
    return s;
  }

 private:
  std::mt19937_64 engine_;
};

// Bytes as a test log can show them: printable ASCII kept, the rest as \xNN, cut at `max`.
std::string shown(const std::string& bytes, std::size_t max = 300) {
  std::string out;
  for (std::size_t i = 0; i < bytes.size() && i < max; ++i) {
    unsigned char c = static_cast<unsigned char>(bytes[i]);
    if (c >= 0x20 && c < 0x7f) {
      out.push_back(static_cast<char>(c));
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02X", c);
      out += buf;
    }
  }
  if (bytes.size() > max) out += "… (" + std::to_string(bytes.size()) + " bytes)";
  return out;
}

std::string percent_encode(const std::string& text) {
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      char buf[4];
      std::snprintf(buf, sizeof buf, "%%%02X", c);
      out += buf;
    }
  }
  return out;
}

// Path and query values as they go into a target: already encoded, hostile on purpose.
const std::vector<std::string>& hostile_url_values() {
  static const std::vector<std::string> values = {
      // Not UTF-8: surrogates, overlong forms, bytes that never appear, cut-off sequences.
      "%ED%A0%80",
      "%ED%BF%BF",
      "%ED%A0%BD%ED%B8%80",
      "%C0%AF",
      "%C0%80",
      "%E0%80%AF",
      "%F0%80%80%AF",
      "%F4%90%80%80",
      "%FF",
      "%FE%FF",
      "%80",
      "%D0",
      "key_%C3",
      // Sent raw, not percent-encoded.
      "\xED\xA0\x80",
      "\xFF\xFE",
      "\xC0\xAF",
      // NUL and broken escapes.
      "%00",
      "a%00b",
      "key_0000000000000000000000%00",
      "%",
      "%Z",
      "%ZZ",
      "%%",
      "%2",
      // Traversal and separators.
      "..",
      "%2E%2E",
      "..%2F..%2Fetc%2Fpasswd",
      "%2F",
      "%5C",
      ".%2E%2F",
      "%252E%252E",
      // Numbers and words that are not ids.
      "0",
      "-1",
      "99999999999999999999999999",
      "1e400",
      "-1e400",
      "NaN",
      "null",
      "true",
      "undefined",
      "%20",
      "+",
      "%2B",
      // SQL and LIKE metacharacters, well encoded.
      "%27%20OR%201%3D1--",
      "%25",
      "_",
      "%27%3B%20DROP%20TABLE%20users%3B--",
      // Valid UTF-8 that is still not an id.
      "%D0%B6",
      "%F0%9F%9A%80",
      "%E2%80%AE",
      "%EF%BB%BF",
  };
  return values;
}

// Ids of every prefix the contract names, for ids of the wrong kind.
const std::vector<std::string> kIdPrefixes = {"org", "usr", "rnt", "nod", "img", "key",
                                              "tok", "inv", "sit", "whk", "gpu"};

// Which prefix a path parameter holds, from the collection segment in front of it.
std::string prefix_for(const std::string& pattern, const std::string& param) {
  static const std::map<std::string, std::string> kByCollection = {
      {"ssh-keys", "key"}, {"api-tokens", "tok"}, {"members", "usr"}, {"nodes", "nod"},
      {"orgs", "org"},     {"images", "img"},     {"sites", "sit"},   {"rentals", "rnt"},
      {"invoices", "inv"}, {"webhooks", "whk"}};
  auto at = pattern.find("{" + param + "}");
  if (at == std::string::npos || at < 2) return "";
  auto start = pattern.rfind('/', at - 2);
  std::string collection = pattern.substr(start + 1, at - 2 - start);
  auto it = kByCollection.find(collection);
  return it == kByCollection.end() ? "" : it->second;
}

// Raw JSON text that nlohmann cannot build (numbers out of range, broken strings): dumped
// as a marker string, then swapped in.
class RawJson {
 public:
  Json mark(std::string raw) {
    std::string m = "\x01RAW" + std::to_string(raws_.size()) + "\x01";
    raws_.push_back(std::move(raw));
    return m;
  }
  std::string dump(const Json& value) const {
    std::string text = value.dump();
    for (std::size_t i = 0; i < raws_.size(); ++i) {
      std::string m = "\"\\u0001RAW" + std::to_string(i) + "\\u0001\"";
      for (auto at = text.find(m); at != std::string::npos; at = text.find(m, at + 1)) {
        text.replace(at, m.size(), raws_[i]);
      }
    }
    return text;
  }

 private:
  std::vector<std::string> raws_;
};

// Hostile JSON values for any field; `raw` builds what nlohmann cannot.
Json hostile_json_value(Rng& rng, RawJson& raw) {
  switch (rng.below(24)) {
    case 0:
      return raw.mark("1e400");
    case 1:
      return raw.mark("-1e400");
    case 2:
      return raw.mark("123456789012345678901234567890");
    case 3:
      return raw.mark("-9223372036854775809");
    case 4:
      return raw.mark("\"\xED\xA0\x80\"");  // a surrogate as raw bytes
    case 5:
      return raw.mark("\"\xFF\xFE\"");
    case 6:
      return raw.mark("\"\\ud800\"");  // a lone surrogate escape
    case 7:
      return raw.mark("\"\xC0\xAF\"");
    case 8:
      return raw.mark(std::string(200, '[') + std::string(200, ']'));
    case 9:
      return raw.mark(std::string(5000, '[') + std::string(5000, ']'));
    case 10: {
      std::string deep;
      for (int i = 0; i < 70; ++i) deep += "{\"a\":";
      deep += "1";
      for (int i = 0; i < 70; ++i) deep += "}";
      return raw.mark(deep);
    }
    case 11:
      return std::string(64 * 1024, 'x');
    case 12:
      return std::string("a\0b", 3);
    case 13:
      return "\x1b[31m\xE2\x80\xAE";
    case 14:
      return 1e308;
    case 15:
      return -0.0;
    case 16:
      return std::numeric_limits<std::uint64_t>::max();
    case 17:
      return std::numeric_limits<std::int64_t>::min();
    case 18:
      return Json::array();
    case 19:
      return Json::object();
    case 20:
      return Json::array({1, "two", nullptr, Json::object()});
    case 21:
      return true;
    case 22:
      return nullptr;
    default:
      return "'; DROP TABLE users; --";
  }
}

// Ids that exist, by prefix, so some requests get past 404 into deeper code.
struct ExistingIds {
  std::map<std::string, std::vector<std::string>> by_prefix;
  std::vector<std::string> all() const {
    std::vector<std::string> out;
    for (const auto& [_, ids] : by_prefix) out.insert(out.end(), ids.begin(), ids.end());
    return out;
  }
};

// A plausible value for a field, by its name as the contract spells it.
Json plausible_value(const std::string& field, Rng& rng, const ExistingIds& ids) {
  auto existing = [&](const std::string& prefix) -> Json {
    auto it = ids.by_prefix.find(prefix);
    if (it == ids.by_prefix.end() || it->second.empty()) return prefix + "_" + rng.alnum(22);
    return rng.pick(it->second);
  };
  static const std::vector<std::string> kModels = {"H100-SXM5-80GB", "A100-SXM4-80GB", "L4-24GB",
                                                   "RTX4090-24GB", "B200-HYPOTHETICAL"};
  static const std::vector<std::string> kRoles = {"owner",   "admin",  "member",
                                                  "billing", "viewer", "root"};
  if (field == "email") return "u" + rng.alnum(8) + "@example.com";
  if (field == "password") return "a good passphrase " + rng.alnum(4);
  if (field == "org_id") return existing("org");
  if (field == "site_id") return existing("sit");
  if (field == "image_id") return existing("img");
  if (field == "user_id") return existing("usr");
  if (field == "ssh_key_ids") return Json::array({existing("key")});
  if (field == "role") return rng.pick(kRoles);
  if (field == "scopes") {
    Json scopes = Json::array();
    for (const auto& s : kAllScopes) {
      if (rng.chance(40)) scopes.push_back(s);
    }
    return scopes;
  }
  if (field == "public_key") return rng.pick(kPublicKeys) + " outside-in";
  if (field == "hostname") return "gpu-" + rng.alnum(6) + ".example.net";
  if (field == "gpu_model") return rng.pick(kModels);
  if (field == "gpu_count") return static_cast<int>(1 << rng.below(4));
  if (field == "timezone") return rng.chance(80) ? "Europe/Moscow" : "Mars/Olympus";
  if (field == "interconnect") return rng.chance(50) ? "nvswitch" : "pcie";
  if (field == "driver_version") return rng.chance(70) ? "550.54.15" : "1.0";
  if (field == "cuda_version") return rng.chance(70) ? "12.4" : "99.9";
  if (field == "frameworks") return Json::array({"pytorch", "jax"});
  if (field == "labels") return {{"rack", rng.alnum(3)}};
  if (field == "spend_limit" || field == "amount" || field == "price_per_day") {
    return {{"amount_minor", static_cast<int>(rng.below(1000000))}, {"currency", "RUB"}};
  }
  if (field == "items") {
    return Json::array({{{"gpu_model", rng.pick(kModels)},
                         {"gpu_count", 8},
                         {"price_per_day", {{"amount_minor", 1234500}, {"currency", "RUB"}}}}});
  }
  if (field == "expires_in_days" || field == "max_days" || field == "days" ||
      field == "max_concurrent_gpus" || field == "cpu_cores" || field == "ram_gb" ||
      field == "disk_gb") {
    return static_cast<int>(rng.below(40));
  }
  if (field == "events") return Json::array({"rental.active"});
  if (field == "url") return "https://example.com/hook";
  return "outside-in " + rng.alnum(6);
}

// Field names the contract uses in request bodies; operations the document gives no schema
// for draw from these.
const std::vector<std::string> kKnownFields = {"email",        "password",
                                               "org_name",     "org_id",
                                               "role",         "name",
                                               "scopes",       "expires_in_days",
                                               "public_key",   "site_id",
                                               "hostname",     "gpu_model",
                                               "gpu_count",    "cpu_model",
                                               "cpu_cores",    "ram_gb",
                                               "disk_gb",      "labels",
                                               "interconnect", "reason",
                                               "region",       "timezone",
                                               "os",           "driver_version",
                                               "cuda_version", "frameworks",
                                               "items",        "amount",
                                               "max_days",     "max_concurrent_gpus",
                                               "spend_limit",  "days",
                                               "image_id",     "ssh_key_ids",
                                               "url",          "events"};

// The fields each operation reads, from API.md, so that generated bodies often pass the
// strict reader and reach the operation's own logic. The document's requestBody schema,
// when an operation has one, takes precedence.
std::vector<std::string> contract_fields(const std::string& method, const std::string& path) {
  static const std::map<std::string, std::vector<std::string>> kFields = {
      {"POST /v1/auth/signup", {"email", "password", "org_name"}},
      {"POST /v1/auth/login", {"email", "password"}},
      {"POST /v1/session/org", {"org_id"}},
      {"POST /v1/members", {"email", "role"}},
      {"PATCH /v1/members/{user_id}", {"role"}},
      {"POST /v1/api-tokens",
       {"name", "scopes", "expires_in_days", "max_concurrent_gpus", "max_days", "spend_limit"}},
      {"POST /v1/ssh-keys", {"name", "public_key"}},
      {"POST /v1/admin/sites", {"name", "region", "timezone"}},
      {"POST /v1/admin/nodes",
       {"site_id", "hostname", "gpu_model", "gpu_count", "interconnect", "cpu_model", "cpu_cores",
        "ram_gb", "disk_gb", "labels"}},
      {"PATCH /v1/admin/nodes/{id}",
       {"hostname", "labels", "cpu_model", "cpu_cores", "ram_gb", "disk_gb"}},
      {"POST /v1/admin/images", {"name", "os", "driver_version", "cuda_version", "frameworks"}},
      {"PUT /v1/admin/prices", {"items"}},
      {"PATCH /v1/admin/orgs/{id}", {"max_concurrent_gpus", "max_days", "spend_limit"}},
      {"POST /v1/admin/orgs/{id}/credit", {"amount", "reason"}},
  };
  auto it = kFields.find(method + " " + path);
  if (it != kFields.end()) return it->second;
  if (path.size() > 5 && path.find("/v1/admin/nodes/{id}/") == 0) return {"reason"};
  return {};
}

struct Operation {
  std::string method;  // upper case
  std::string path;    // the pattern, "/v1/ssh-keys/{id}"
  std::vector<std::string> path_params;
  std::vector<std::string> body_fields;  // may be empty
  bool takes_body = false;
};

struct Caller {
  std::string name;
  Headers headers;
};

struct Generated {
  std::string method, target, body;
  Headers headers;
  std::string describe(std::uint64_t seed, const std::string& caller, int index) const {
    std::string out = "seed " + std::to_string(seed) + " (GPURENT_OUTSIDE_IN_SEED), caller " +
                      caller + ", request #" + std::to_string(index) + ":\n  " + method + " " +
                      shown(target, 600) + "\n";
    for (const auto& [k, v] : headers) out += "  " + k + ": " + shown(v, 200) + "\n";
    if (!body.empty()) out += "  body: " + shown(body, 600) + "\n";
    return out;
  }
};

class OutsideInE2E : public ApiTest {
 protected:
  void SetUp() override {
    ApiTest::SetUp();
    seed_ = seed_from_env();
    std::printf("[ seed     ] %llu (set GPURENT_OUTSIDE_IN_SEED to replay another)\n",
                static_cast<unsigned long long>(seed_));
    // The owner is also a platform admin, so admin operations run past 403 as well.
    owner_ = account(kOwnerEmail, "Outside In");
    set_platform_admin(owner_.user_id, true);
    owner_ = login(kOwnerEmail);
    // Spare sessions, signed in before any generated sign-in fails: failed sign-ins from one
    // address are throttled, and a generated logout may end the session in use.
    for (int i = 0; i < 3; ++i) spare_sessions_.push_back(login(kOwnerEmail));
    refresh_token();
    create_existing_objects();
  }

  static constexpr const char* kOwnerEmail = "owner@outside-in.example.com";

  void refresh_token() {
    auto r =
        post("/v1/api-tokens", {{"name", "outside-in"}, {"scopes", kAllScopes}}, session(owner_));
    ASSERT_EQ(r.status, 201) << r.body;
    token_ = r.json()["token"].get<std::string>();
    token_id_ = r.json()["id"].get<std::string>();
  }

  // Objects of each kind, so that generated ids sometimes name something real.
  void create_existing_objects() {
    Headers h = session(owner_);
    auto add = [this](const std::string& prefix, const HttpResult& r, const std::string& key) {
      EXPECT_LT(r.status, 300) << r.body;
      if (r.status >= 300) return;
      Json body = r.json();
      const Json& at = key.empty() ? body : body[key];
      ids_.by_prefix[prefix].push_back(at["id"].get<std::string>());
    };
    for (std::size_t i = 0; i < 2; ++i) {
      add("key",
          post("/v1/ssh-keys", {{"name", "k" + std::to_string(i)}, {"public_key", kPublicKeys[i]}},
               h),
          "");
    }
    // A token other than the caller's: revoking it must not cut the run short.
    add("tok", post("/v1/api-tokens", {{"name", "spare"}, {"scopes", {"rentals:read"}}}, h), "");
    Login member = member_of(owner_, "viewer", "member@outside-in.example.com");
    ids_.by_prefix["usr"].push_back(member.user_id);
    ids_.by_prefix["org"].push_back(owner_.org_id);
    ids_.by_prefix["org"].push_back(account("other@outside-in.example.com", "Other").org_id);
    auto site =
        post("/v1/admin/sites",
             {{"name", "Outside"}, {"region", "ru-central"}, {"timezone", "Europe/Moscow"}}, h);
    add("sit", site, "");
    if (site.status == 201) {
      add("nod",
          post("/v1/admin/nodes",
               {{"site_id", site.json()["id"]},
                {"hostname", "gpu-1.outside-in.example.net"},
                {"gpu_model", "H100-SXM5-80GB"},
                {"gpu_count", 8}},
               h),
          "node");
    }
    add("img",
        post("/v1/admin/images",
             {{"name", "outside-in"},
              {"os", "Ubuntu 22.04"},
              {"driver_version", "550.54.15"},
              {"cuda_version", "12.4"},
              {"frameworks", {"pytorch"}}},
             h),
        "");
  }

  // Operations some requests may end (logout, a revoked token, a role change): the callers
  // are restored between operations so each operation sees all three.
  void restore_callers() {
    if (get("/v1/me", session(owner_)).status == 401) {
      if (spare_sessions_.empty()) {
        owner_ = login(kOwnerEmail);
      } else {
        owner_ = spare_sessions_.back();
        spare_sessions_.pop_back();
      }
      ++restored_;
    }
    if (get("/v1/me", bearer(token_)).status == 401) {
      refresh_token();
      ++restored_;
    }
  }

  std::vector<Operation> documented_operations() {
    auto r = get("/v1/openapi.json", {});
    EXPECT_EQ(r.status, 200);
    Json doc = r.json();
    std::vector<Operation> ops;
    for (const auto& [path, methods] : doc["paths"].items()) {
      for (const auto& [method, op] : methods.items()) {
        Operation o;
        for (char c : method) o.method.push_back(static_cast<char>(std::toupper(c)));
        o.path = path;
        for (const auto& p : op.value("parameters", Json::array())) {
          if (p.value("in", "") == "path") o.path_params.push_back(p.value("name", ""));
        }
        // The JSON body's schema, its $ref followed to the document's components.
        Json schema;
        if (op.contains("requestBody")) {
          Json content = op["requestBody"].value("content", Json::object());
          if (content.contains("application/json")) schema = content["application/json"]["schema"];
        }
        if (schema.is_object() && schema.contains("$ref")) {
          schema = doc.at(Json::json_pointer(schema["$ref"].get<std::string>().substr(1)));
        }
        if (schema.is_object() && schema.contains("properties")) {
          for (const auto& [name, _] : schema["properties"].items()) o.body_fields.push_back(name);
        } else {
          o.body_fields = contract_fields(o.method, o.path);
        }
        o.takes_body = o.method == "POST" || o.method == "PUT" || o.method == "PATCH";
        ops.push_back(std::move(o));
      }
    }
    return ops;
  }

  std::string path_value(const Operation& op, const std::string& param, Rng& rng) {
    std::string prefix = prefix_for(op.path, param);
    auto existing = ids_.by_prefix.find(prefix);
    switch (rng.below(10)) {
      case 0:
      case 1:
      case 2:
        if (existing != ids_.by_prefix.end() && !existing->second.empty())
          return rng.pick(existing->second);
        [[fallthrough]];
      case 3:
        return (prefix.empty() ? rng.pick(kIdPrefixes) : prefix) + "_" + rng.alnum(22);
      case 4: {
        auto all = ids_.all();
        all.push_back(token_id_);  // the caller's own: restore_callers() replaces it
        return rng.pick(all);      // real, of any kind: another kind's id is still 404
      }
      case 5:
        return rng.pick(kIdPrefixes) + "_" + rng.alnum(rng.chance(50) ? 21 : 23);
      case 6: {
        std::size_t n = rng.chance(50) ? 300 : 4000;
        return prefix + "_" + std::string(n, 'k');
      }
      default:
        return (rng.chance(30) ? prefix + "_" : "") + rng.pick(hostile_url_values());
    }
  }

  std::string query_string(Rng& rng) {
    static const std::vector<std::string> kNames = {
        "limit",  "cursor",        "state",        "site_id", "gpu_model", "org_id",
        "action", "actor_user_id", "since",        "until",   "format",    "gpu_count",
        "days",   "from",          "interconnect", "start",   "timeout_s", "ms"};
    static const std::vector<std::string> kValues = {"1",
                                                     "50",
                                                     "500",
                                                     "501",
                                                     "0",
                                                     "-1",
                                                     "abc",
                                                     "",
                                                     "available",
                                                     "2026-12-01T00:00:00Z",
                                                     "2026-02-30T00:00:00Z",
                                                     "1.key_0000000000000000000000",
                                                     "csv",
                                                     "json"};
    std::string q;
    std::size_t pairs = rng.below(5);
    std::string last;
    for (std::size_t i = 0; i < pairs; ++i) {
      std::string name;
      switch (rng.below(6)) {
        case 0:
          name = rng.alnum(1 + rng.below(12));  // unknown
          break;
        case 1:
          name = rng.pick(hostile_url_values());
          break;
        case 2:
          name = last.empty() ? "limit" : last;  // repeated
          break;
        default:
          name = rng.pick(kNames);
      }
      std::string value;
      switch (rng.below(4)) {
        case 0:
          value = rng.pick(hostile_url_values());
          break;
        case 1:
          value = percent_encode(rng.alnum(rng.below(3000)));
          break;
        default:
          value = percent_encode(rng.pick(kValues));
      }
      if (!q.empty()) q += "&";
      q += name;
      if (!rng.chance(10)) q += "=" + value;
      last = name;
    }
    return q;
  }

  std::string body_for(const Operation& op, Rng& rng, Headers& headers) {
    if (!op.takes_body && !rng.chance(10)) return "";
    if (op.path.size() > 9 && op.path.rfind("/topology") == op.path.size() - 9 && rng.chance(60)) {
      static const std::vector<std::string> kTexts = {
          "\tGPU0\tGPU1\nGPU0\t X \tNV18\nGPU1\tNV18\t X \n", "garbage", "\xFF\xFE\x00",
          std::string(10000, '\t'), "GPU0\tGPU0\nGPU0\tX\n\x1b[31m"};
      headers["Content-Type"] = rng.chance(80) ? "text/plain" : "text/plain; charset=latin1";
      return rng.pick(kTexts);
    }
    static const std::vector<std::string> kContentTypes = {"application/json; charset=utf-8",
                                                           "APPLICATION/JSON",
                                                           "text/plain",
                                                           "",
                                                           "application/x-www-form-urlencoded",
                                                           "multipart/form-data; boundary=x",
                                                           "application/json; charset=latin1",
                                                           "application/json\xFF",
                                                           "application/jsonx"};
    headers["Content-Type"] = rng.chance(80) ? "application/json" : rng.pick(kContentTypes);
    if (rng.chance(10)) {
      static const std::vector<std::string> kNotJson = {"not json",
                                                        "{",
                                                        "}",
                                                        "<xml/>",
                                                        "a=1&b=2",
                                                        "\xFF\xFE\xFD",
                                                        std::string("\0\0", 2),
                                                        "1e400",
                                                        "-1e400",
                                                        "[1e400]",
                                                        "{\"a\":1e400",
                                                        std::string(20000, '['),
                                                        "\"\\ud800\"",
                                                        "{\"a\":\"\xED\xA0\x80\"}",
                                                        "null",
                                                        "[]",
                                                        "0"};
      return rng.pick(kNotJson);
    }
    RawJson raw;
    Json body = Json::object();
    const auto& fields = op.body_fields.empty() ? kKnownFields : op.body_fields;
    for (const auto& f : fields) {
      if (op.body_fields.empty() ? rng.chance(15) : rng.chance(85)) {
        body[f] = plausible_value(f, rng, ids_);
      }
    }
    // Then break it: a hostile value in a field, an unknown field, a field dropped.
    std::size_t breaks = rng.below(3);
    for (std::size_t i = 0; i < breaks; ++i) {
      switch (rng.below(4)) {
        case 0:
        case 1: {
          std::string f = fields.empty() ? "x" : rng.pick(fields);
          body[f] = hostile_json_value(rng, raw);
          break;
        }
        case 2:
          body[rng.chance(50) ? rng.alnum(6) : rng.pick(kKnownFields)] =
              hostile_json_value(rng, raw);
          break;
        default:
          if (!body.empty()) body.erase(body.begin());
      }
    }
    if (rng.chance(5)) return raw.dump(Json::array({body}));
    return raw.dump(body);
  }

  Generated generate(const Operation& op, const Caller& caller, Rng& rng) {
    Generated g;
    g.method = op.method;
    g.headers = caller.headers;
    g.target = op.path;
    for (const auto& p : op.path_params) {
      std::string placeholder = "{" + p + "}";
      auto at = g.target.find(placeholder);
      if (at != std::string::npos) g.target.replace(at, placeholder.size(), path_value(op, p, rng));
    }
    if (rng.chance(50)) {
      std::string q = query_string(rng);
      if (!q.empty()) g.target += "?" + q;
    }
    g.body = body_for(op, rng, g.headers);
    if (op.method == "POST" && rng.chance(35)) {
      static const std::vector<std::string> kKeys = {
          "",         " ",         std::string(256, 'k'), "key with spaces",
          "\xFF\xFE", "%ED%A0%80", "\xED\xA0\x80",        "\xD0\xBA\xD0\xBB\xD1\x8E\xD1\x87",
          "k\x7f",    "\t"};
      g.headers["Idempotency-Key"] =
          rng.chance(50) ? "outside-in-" + rng.alnum(12) : rng.pick(kKeys);
    }
    if (rng.chance(10)) {
      static const std::vector<std::string> kRequestIds = {"\xFF", std::string(200, 'r'), "../..",
                                                           "id with space", ""};
      g.headers["X-Request-Id"] = rng.pick(kRequestIds);
    }
    if (caller.headers.empty() && rng.chance(15)) {
      // Anonymous, with credentials that are broken rather than absent.
      static const std::vector<std::pair<std::string, std::string>> kBroken = {
          {"Authorization", "Bearer gpr_" + std::string(64, 'z')},
          {"Authorization", "Bearer \xED\xA0\x80"},
          {"Authorization", "Bearer gpr_" + std::string(62, '0') + "\xC3\xA9"},
          {"Authorization", "Basic dXNlcjpwYXNz"},
          {"Cookie", "gpurent_session=" + std::string(64, 'f')},
          {"Cookie", "gpurent_session=\xFF\xFE"},
          {"Cookie", "gpurent_session=" + std::string(62, 'f') + "\xC3\xA9"},
          {"X-CSRF-Token", "\xED\xA0\x80"}};
      const auto& [name, value] = rng.pick(kBroken);
      g.headers[name] = value;
    }
    if (caller.headers.count("X-CSRF-Token") && rng.chance(10)) {
      g.headers["X-CSRF-Token"] = rng.chance(50) ? "wrong" : "\xFF";
    }
    return g;
  }

  // Sends one request; a failure is described, with the response when there was one.
  std::optional<std::string> check(const Generated& g) {
    HttpResult r;
    try {
      r = http_request(port(), g.method, g.target, g.body, g.headers, kResponseTimeout);
    } catch (const std::exception& e) {
      return std::string("no response: ") + e.what();
    }
    ++sent_;
    ++statuses_[r.status];
    if (r.status >= 500) return "status " + std::to_string(r.status) + ": " + shown(r.body);
    if (r.status < 100) return "status " + std::to_string(r.status);
    if (r.status >= 400 && r.header("content-type") == "application/json") {
      // The contract's error format, whatever the request held.
      try {
        Json body = r.json();
        if (!body["error"]["code"].is_string() || !body["error"]["message"].is_string())
          return "an error outside the contract's format: " + shown(r.body);
      } catch (const std::exception&) {
        return "an error body that is not JSON: " + shown(r.body);
      }
    }
    if (r.header("x-request-id").empty()) return "no X-Request-Id";
    // Whatever got through, the answer is one the document describes.
    if (contract_) {
      auto problems =
          contract_->response(g.method, g.target, r.status, r.header("content-type"), r.body);
      if (!problems.empty()) return "disagrees with /v1/openapi.json: " + problems.front();
    }
    return std::nullopt;
  }

  std::uint64_t seed_ = kDefaultSeed;
  Login owner_;
  std::vector<Login> spare_sessions_;
  std::string token_, token_id_;
  ExistingIds ids_;
  int sent_ = 0;
  std::map<int, int> statuses_;  // how far requests got: 2xx means past every check
  int restored_ = 0;
};

TEST_F(OutsideInE2E, EveryDocumentedOperationAnswersEveryCallerBelow500) {
  auto ops = documented_operations();
  ASSERT_GT(ops.size(), 20u) << "the document lists too few operations";
  auto started = std::chrono::steady_clock::now();
  int failures = 0;
  std::set<std::string> failing_operations;
  for (const auto& op : ops) {
    if (failures >= kFailuresShown) break;
    std::vector<Caller> callers = {{"owner's API token", bearer(token_)},
                                   {"owner's session", session(owner_)},
                                   {"anonymous", {}}};
    for (const auto& caller : callers) {
      Rng rng(stream_seed(seed_, op.method + " " + op.path + " " + caller.name));
      for (int i = 0; i < kRequestsPerCaller; ++i) {
        Generated g = generate(op, caller, rng);
        if (auto failure = check(g)) {
          failing_operations.insert(op.method + " " + op.path);
          if (++failures <= kFailuresShown) {
            ADD_FAILURE() << *failure << "\n" << g.describe(seed_, caller.name, i);
          }
        }
      }
    }
    restore_callers();
  }
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  std::printf(
      "[ cells    ] outside-in: %zu operations x 3 callers x %d requests = %d sent in "
      "%.1f s (callers restored %d times)\n",
      ops.size(), kRequestsPerCaller, sent_, seconds, restored_);
  EXPECT_EQ(failures, 0) << failures << " failing requests (first " << kFailuresShown
                         << " shown) in " << failing_operations.size() << " operations; seed "
                         << seed_;
  std::string histogram;
  for (const auto& [status, n] : statuses_) {
    histogram += " " + std::to_string(status) + ":" + std::to_string(n);
  }
  std::printf("[ statuses ]%s\n", histogram.c_str());
  for (const auto& op : failing_operations) std::printf("[ failing  ] %s\n", op.c_str());
  // A request can fail inside the server without a 5xx reaching the client (an exception in
  // a worker after the response was lost): such failures are logged at error level.
  std::string logs = server_->logs();
  ASSERT_NE(logs.find("\"level\":\"info\""), std::string::npos)
      << "the server's log is not in JSON lines; the error scan below would see nothing";
  std::vector<std::string> errors;
  for (std::size_t at = logs.find("\"level\":\"error\""); at != std::string::npos;
       at = logs.find("\"level\":\"error\"", at + 1)) {
    auto start = logs.rfind('\n', at);
    auto end = logs.find('\n', at);
    errors.push_back(logs.substr(start == std::string::npos ? 0 : start + 1,
                                 end == std::string::npos ? std::string::npos : end - start - 1));
  }
  EXPECT_TRUE(errors.empty()) << errors.size() << " error lines in the server's log, the first: "
                              << shown(errors.empty() ? "" : errors.front(), 1000);
}

// The edge check, cell by cell: on every documented operation and for every caller, text the
// server cannot use is 400 invalid_request naming where it was, before authentication and
// before any handler; a number out of range in a JSON body is 400 naming the field.
TEST_F(OutsideInE2E, EveryOperationRefusesUnusableTextWith400NamingIt) {
  struct Cell {
    std::string label;
    std::string method, target, body;
    Headers headers;
    std::string field;
  };
  auto ops = documented_operations();
  ASSERT_GT(ops.size(), 20u);
  // A target for `op` whose parameters name existing objects, except `bad_param` (if any),
  // which becomes `bad_value`.
  auto target_for = [this](const Operation& op, const std::string& bad_param,
                           const std::string& bad_value) {
    std::string target = op.path;
    for (const auto& p : op.path_params) {
      std::string value = p == bad_param ? bad_value : "";
      if (value.empty()) {
        auto it = ids_.by_prefix.find(prefix_for(op.path, p));
        value = it != ids_.by_prefix.end() && !it->second.empty() ? it->second.front()
                                                                  : "x_0123456789012345678901";
      }
      std::string placeholder = "{" + p + "}";
      target.replace(target.find(placeholder), placeholder.size(), value);
    }
    return target;
  };
  const std::vector<std::string> kBadValues = {"%ED%A0%80", "%C0%AF", "a%00b", "%F4%90%80%80",
                                               "%ZZ"};
  std::vector<Caller> callers = {{"owner's API token", bearer(token_)},
                                 {"owner's session", session(owner_)},
                                 {"anonymous", {}}};
  std::vector<Cell> cells;
  std::size_t variant = 0;
  for (const auto& op : ops) {
    for (const auto& caller : callers) {
      for (const auto& p : op.path_params) {
        const std::string& bad = kBadValues[variant++ % kBadValues.size()];
        cells.push_back({"path parameter " + p + " = " + bad, op.method, target_for(op, p, bad), "",
                         caller.headers, p});
      }
      const std::string& bad = kBadValues[variant++ % kBadValues.size()];
      cells.push_back({"query value", op.method, target_for(op, "", "") + "?q=" + bad, "",
                       caller.headers, "q"});
      cells.push_back({"query name", op.method, target_for(op, "", "") + "?%ED%A0%80=1", "",
                       caller.headers, "%ED%A0%80"});
      Headers with_key = caller.headers;
      with_key["Idempotency-Key"] = "\xED\xA0\x80";
      cells.push_back(
          {"Idempotency-Key", op.method, target_for(op, "", ""), "", with_key, "Idempotency-Key"});
    }
    Headers broken_token = {{"Authorization", "Bearer gpr_\xC0\xAF"}};
    cells.push_back(
        {"Authorization", op.method, target_for(op, "", ""), "", broken_token, "Authorization"});
    Headers broken_cookie = {{"Cookie", "gpurent_session=\xFF"}};
    cells.push_back({"Cookie", op.method, target_for(op, "", ""), "", broken_cookie, "Cookie"});
  }
  // Bodies: operations that read JSON (found by sending one that is not) refuse a number
  // out of range, naming the field, for both authenticated callers.
  std::vector<const Operation*> json_ops;
  for (const auto& op : ops) {
    if (op.method != "POST" && op.method != "PUT" && op.method != "PATCH") continue;
    auto probe = send(op.method, target_for(op, "", ""), "not json", bearer(token_));
    if (probe.status == 400 && probe.json()["error"]["code"] == "invalid_json")
      json_ops.push_back(&op);
  }
  restore_callers();
  callers = {{"owner's API token", bearer(token_)}, {"owner's session", session(owner_)}};
  for (const Operation* op : json_ops) {
    for (const auto& caller : callers) {
      for (const auto& [body, field] : std::vector<std::pair<std::string, std::string>>{
               {R"({"x": 1e400})", "x"}, {R"({"a": {"b": [0, -1e400]}})", "a.b[1]"}}) {
        Headers h = caller.headers;
        h["Content-Type"] = "application/json";
        cells.push_back({"body " + body, op->method, target_for(*op, "", ""), body, h, field});
      }
    }
  }
  EXPECT_GT(json_ops.size(), 10u) << "too few operations read JSON bodies";

  int failures = 0;
  for (const auto& c : cells) {
    HttpResult r;
    try {
      r = http_request(port(), c.method, c.target, c.body, c.headers, kResponseTimeout);
    } catch (const std::exception& e) {
      r.status = 0;
      r.body = e.what();
    }
    std::string field;
    std::string code;
    try {
      code = r.json()["error"]["code"].get<std::string>();
      field = r.json()["error"]["details"].value("field", "");
    } catch (const std::exception&) {
    }
    bool ok = r.status == 400 && code == "invalid_request" && field == c.field;
    if (!ok && ++failures <= kFailuresShown) {
      ADD_FAILURE() << c.label << ": " << c.method << " " << shown(c.target) << " → " << r.status
                    << " " << shown(r.body) << " (expected 400 naming " << shown(c.field) << ")";
    }
  }
  std::printf("[ cells    ] edge refusals: %zu cells over %zu operations (%zu read JSON)\n",
              cells.size(), ops.size(), json_ops.size());
  EXPECT_EQ(failures, 0);
}

}  // namespace gpurent::testing::outside_in_e2e
