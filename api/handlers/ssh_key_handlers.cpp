// SSH key routes: each turns one request into one SshKeyStore call in a transaction of its
// own, for the caller's org only.
#include "api/handlers/ssh_key_handlers.h"
#include "api/handlers/json_values.h"

#include "api/handlers/query_params.h"
#include "api/json_body.h"
#include "api/responses.h"
#include "core/clock.h"
#include "core/error.h"
#include "core/id.h"
#include "identity/ssh_public_key.h"

#include <nlohmann/json.hpp>

namespace gpurent::http {
namespace {

constexpr std::size_t kMaxNameChars = 200;
// Four bytes per character at most in UTF-8; the character count is checked after trimming.
constexpr std::size_t kMaxNameBytes = 4 * kMaxNameChars;
// The body limit bounds the key text; the parser refuses a pasted private key whatever its
// size (before its own length check), so the reader must not cut it off first.
constexpr std::size_t kMaxKeyTextBytes = std::size_t(1) << 30;

// Code points in valid UTF-8 (the JSON parser has already refused anything else).
std::size_t utf8_length(std::string_view s) {
  std::size_t n = 0;
  for (unsigned char c : s) {
    if ((c & 0xC0) != 0x80) ++n;
  }
  return n;
}

nlohmann::json key_json(const identity::SshKeyRecord& k) {
  return {{"id", k.id},
          {"name", k.name},
          {"type", k.type},
          {"bits", k.bits},
          {"fingerprint", k.fingerprint},
          {"public_key", k.public_key},
          {"created_at", time_json(k.created_at)}};
}

// The key id from the path; a malformed one is simply a key that does not exist.
std::string key_id(const Request& req) {
  return path_id(req, "id", id_prefix::kSshKey, "No such SSH key.");
}

}  // namespace

void add_ssh_key_routes(Router& router, SshKeyRoutesState& state) {
  router.add({.method = Method::kGet,
              .pattern = "/v1/ssh-keys",
              .handler =
                  [&state](const Request& req, const Principal& p) {
                    const std::string& org_id = *p.org_id;
                    QueryParams query(req, {"limit", "cursor"});
                    auto page = state.pool->read("ssh_key_list", [&](Tx& tx) {
                      return state.store->list(tx, org_id, query.limit(), query.cursor());
                    });
                    nlohmann::json items = nlohmann::json::array();
                    for (const auto& k : page.items) items.push_back(key_json(k));
                    return list_response(200, std::move(items), page.next_cursor);
                  },
              .needs_org = true,
              .summary = "The organisation's SSH keys, oldest first.",
              .tag = "identity"});

  router.add({.method = Method::kPost,
              .pattern = "/v1/ssh-keys",
              .handler =
                  [&state](const Request& req, const Principal& p) {
                    const std::string& org_id = *p.org_id;
                    auto body = parse_json_body(req);
                    JsonObjectReader in(body);
                    std::string name = trimmed(in.required_string("name", kMaxNameBytes));
                    std::string text = in.required_string("public_key", kMaxKeyTextBytes);
                    in.finish();
                    if (name.empty() || utf8_length(name) > kMaxNameChars ||
                        has_control_characters(name)) {
                      throw Error::invalid_field("name", "must be 1 to 200 printable characters");
                    }
                    // Throws invalid_request naming public_key, without echoing key material.
                    auto key = identity::parse_ssh_public_key(text);
                    auto record = state.pool->transact("ssh_key_create", [&](Tx& tx) {
                      return state.store->create(tx, org_id, name, key, actor_of(req, p));
                    });
                    return json_response(201, key_json(record));
                  },
              .needs_org = true,
              .scope = "ssh-keys:write",
              .summary = "Register an SSH public key for the organisation.",
              .tag = "identity"});

  router.add({.method = Method::kGet,
              .pattern = "/v1/ssh-keys/{id}",
              .handler =
                  [&state](const Request& req, const Principal& p) {
                    const std::string& org_id = *p.org_id;
                    std::string id = key_id(req);
                    auto key = state.pool->read(
                        "ssh_key_get", [&](Tx& tx) { return state.store->get(tx, org_id, id); });
                    if (!key) throw Error(ErrorCode::kNotFound, "No such SSH key.");
                    return json_response(200, key_json(*key));
                  },
              .needs_org = true,
              .summary = "One SSH key of the organisation.",
              .tag = "identity"});

  router.add({.method = Method::kDelete,
              .pattern = "/v1/ssh-keys/{id}",
              .handler =
                  [&state](const Request& req, const Principal& p) {
                    const std::string& org_id = *p.org_id;
                    std::string id = key_id(req);
                    bool removed = state.pool->transact("ssh_key_remove", [&](Tx& tx) {
                      return state.store->remove(tx, org_id, id, actor_of(req, p));
                    });
                    if (!removed) {
                      throw Error(ErrorCode::kNotFound, "No such SSH key.");
                    }
                    Response r;
                    r.status = 204;
                    return r;
                  },
              .needs_org = true,
              .scope = "ssh-keys:write",
              .summary = "Remove an SSH key from the organisation.",
              .tag = "identity"});
}

}  // namespace gpurent::http
