// API tokens for automation: `gpr_` + 256 random bits, stored only as SHA-256, shown once.
#pragma once

#include "core/audit.h"
#include "core/clock.h"
#include "core/db_pool.h"
#include "core/guardrails.h"
#include "core/paging.h"
#include "identity/identity_store.h"

#include <optional>
#include <string>
#include <vector>

namespace gpurent::identity {

// `admin` is not an org role's: platform admins' sessions carry it, and so may their tokens.
inline constexpr const char* kScopes[] = {"rentals:read",   "rentals:write", "billing:read",
                                          "ssh-keys:write", "members:write", "tokens:write",
                                          "admin"};
bool is_valid_scope(std::string_view scope);

// Limits stored with a token for the rental and billing modules to enforce.
using Guardrails = gpurent::Guardrails;

struct TokenRecord {
  std::string id;
  std::string name;
  std::string prefix;  // the first characters of the token, to recognise it in lists
  std::vector<std::string> scopes;
  Guardrails guardrails;
  Timestamp created_at;
  std::optional<Timestamp> expires_at;
  std::optional<Timestamp> last_used_at;
  std::string created_by;
};

// What a presented token resolves to.
struct TokenIdentity {
  std::string token_id;
  std::string org_id;
  User user;  // the token's creator
  std::vector<std::string> scopes;
  Guardrails guardrails;
};

// A token as the credential cache keeps it.
struct ResolvedToken {
  TokenIdentity identity;
  std::optional<std::string> role;  // the creator's role in the org now; none: they left
  std::optional<Timestamp> expires_at;
};

// Every method runs in the caller's transaction (see gpurent::Tx) and commits nothing.
class TokenStore {
 public:
  explicit TokenStore(const Clock& clock) : clock_(clock) {}

  // A token of `actor`'s user for the org, with the `token.create` audit row. Returns the
  // record and the token in plain text (the only time it exists).
  std::pair<TokenRecord, std::string> create(Tx& tx, const std::string& org_id,
                                             const std::string& name,
                                             const std::vector<std::string>& scopes,
                                             std::optional<int> expires_in_days,
                                             const Guardrails& guardrails, const Actor& actor);
  // Live tokens in (created_at, id) order, at most `limit`, after `cursor` (a next_cursor
  // from an earlier page; invalid_request naming "cursor" when it is not one).
  gpurent::Page<TokenRecord> list(Tx& tx, const std::string& org_id, int limit = 500,
                                  const std::optional<std::string>& cursor = std::nullopt);
  // Revokes a live token of this org; false when there is none (or it is another org's).
  bool revoke(Tx& tx, const std::string& org_id, const std::string& id, const Actor& actor);
  // One statement that writes nothing: the live token whose secret hashes to `secret_hash`
  // (not revoked, not expired at `now`, its creator's account not disabled), with its
  // creator's role in its org now. For the credential cache, which writes uses behind.
  std::optional<ResolvedToken> resolve(Tx& tx, const std::string& secret_hash, Timestamp now);
  // Records when tokens (by secret hash) were last used, in one statement; a recorded time
  // never moves back.
  void record_uses(Tx& tx, const std::vector<std::pair<std::string, Timestamp>>& uses);

 private:
  const Clock& clock_;
};

}  // namespace gpurent::identity
