// TokenStore: hashed token secrets, revocation and expiry checked in the lookup itself.
#include "identity/token_store.h"

#include "core/crypto.h"
#include "core/error.h"
#include "core/id.h"
#include "core/pg_array.h"
#include "core/sql.h"

#include <nlohmann/json.hpp>

#include <stdexcept>

namespace gpurent::identity {
namespace {

constexpr Statement kInsertToken = {
    "token_insert",
    "INSERT INTO api_tokens (id, org_id, created_by, name, prefix, secret_hash, scopes,"
    " max_concurrent_gpus, max_days, spend_limit_minor, created_at, expires_at)"
    " VALUES ($1, $2, $3, $4, $5, $6, string_to_array($7, ' '), $8, $9, $10, $11, $12)"};
#define TOKEN_TIMES \
  SQL_MICROS("created_at") ", " SQL_MICROS("expires_at") ", " SQL_MICROS("last_used_at")
#define TOKEN_LIST_COLUMNS                                                         \
  "id, name, prefix, array_to_string(scopes, ' '), max_concurrent_gpus, max_days," \
  " spend_limit_minor, " TOKEN_TIMES ", created_by"
constexpr Statement kListTokensFirst = {"token_list_first",
                                        "SELECT " TOKEN_LIST_COLUMNS
                                        " FROM api_tokens WHERE org_id = $1 AND revoked_at IS NULL"
                                        " ORDER BY created_at, id LIMIT $2"};
constexpr Statement kListTokensAfter = {
    "token_list_after",
    "SELECT " TOKEN_LIST_COLUMNS
    " FROM api_tokens WHERE org_id = $1 AND revoked_at IS NULL"
    " AND (created_at, id) > ($2::timestamptz, $3) ORDER BY created_at, id LIMIT $4"};
constexpr Statement kRevokeToken = {
    "token_revoke",
    "UPDATE api_tokens SET revoked_at = $3 WHERE org_id = $1 AND id = $2 AND revoked_at IS NULL"
    " RETURNING id"};
constexpr Statement kResolve = {
    "token_resolve",
    "SELECT t.id, t.org_id, array_to_string(t.scopes, ' '), t.max_concurrent_gpus, t.max_days,"
    " t.spend_limit_minor, u.id, u.email, u.is_platform_admin, " SQL_MICROS("u.created_at")
    ", m.role, " SQL_MICROS("t.expires_at")
    " FROM api_tokens t JOIN users u ON u.id = t.created_by"
    " LEFT JOIN memberships m ON m.org_id = t.org_id AND m.user_id = t.created_by"
    " WHERE t.secret_hash = $1 AND t.revoked_at IS NULL AND u.disabled_at IS NULL"
    " AND (t.expires_at IS NULL OR t.expires_at > $2)"};
// Two arrays of equal length, hash and time; only moves last_used_at forward.
constexpr Statement kRecordUses = {
    "token_record_uses",
    "UPDATE api_tokens t SET last_used_at = u.at"
    " FROM unnest($1::text[], $2::timestamptz[]) AS u(secret_hash, at)"
    " WHERE t.secret_hash = u.secret_hash AND (t.last_used_at IS NULL OR t.last_used_at < u.at)"};
std::vector<std::string> split_scopes(const std::string& s) {
  std::vector<std::string> out;
  std::size_t pos = 0;
  while (pos < s.size()) {
    auto sp = s.find(' ', pos);
    if (sp == std::string::npos) sp = s.size();
    if (sp > pos) out.push_back(s.substr(pos, sp - pos));
    pos = sp + 1;
  }
  return out;
}

// A live token's row as listed (TOKEN_LIST_COLUMNS).
TokenRecord token_from(const pqxx::row& row) {
  TokenRecord r;
  r.id = row[0].as<std::string>();
  r.name = row[1].as<std::string>();
  r.prefix = row[2].as<std::string>();
  r.scopes = split_scopes(row[3].as<std::string>());
  r.guardrails = {optional_field<int>(row[4]), optional_field<int>(row[5]),
                  optional_field<std::int64_t>(row[6])};
  r.created_at = read_timestamp(row[7]);
  r.expires_at = read_optional_timestamp(row[8]);
  r.last_used_at = read_optional_timestamp(row[9]);
  r.created_by = row[10].as<std::string>();
  return r;
}

}  // namespace

bool is_valid_scope(std::string_view scope) {
  for (const char* s : kScopes) {
    if (scope == s) return true;
  }
  return false;
}

std::pair<TokenRecord, std::string> TokenStore::create(Tx& tx, const std::string& org_id,
                                                       const std::string& name,
                                                       const std::vector<std::string>& scopes,
                                                       std::optional<int> expires_in_days,
                                                       const Guardrails& guardrails,
                                                       const Actor& actor) {
  if (!actor.user_id) throw std::invalid_argument("an API token is created by a user");
  auto raw = crypto::random_bytes(32);
  std::string token = "gpr_" + crypto::to_hex(raw.data(), raw.size());
  // Token times are kept to the second, as the API shows them: a token stops working at
  // exactly the expires_at its creator was shown.
  auto at = clock_.now();
  auto now = std::chrono::floor<std::chrono::seconds>(at);
  TokenRecord r;
  r.id = new_id(id_prefix::kToken);
  r.name = name;
  r.prefix = token.substr(0, 12);
  r.scopes = scopes;
  r.guardrails = guardrails;
  r.created_at = now;
  if (expires_in_days) r.expires_at = now + std::chrono::hours(24 * *expires_in_days);
  r.created_by = *actor.user_id;
  std::string joined;
  for (const auto& s : scopes) joined += (joined.empty() ? "" : " ") + s;
  std::optional<std::string> expires;
  if (r.expires_at) expires = sql_timestamp(*r.expires_at);
  tx.exec(kInsertToken, r.id, org_id, r.created_by, name, r.prefix, crypto::sha256_hex(token),
          joined, guardrails.max_concurrent_gpus, guardrails.max_days, guardrails.spend_limit_minor,
          sql_timestamp(now), expires);
  write_audit(tx, at, actor,
              {.org_id = org_id,
               .action = "token.create",
               .target = r.id,
               .details = {{"name", name}, {"scopes", scopes}}});
  return {r, token};
}

gpurent::Page<TokenRecord> TokenStore::list(Tx& tx, const std::string& org_id, int limit,
                                            const std::optional<std::string>& cursor) {
  std::optional<Keyset> after;
  if (cursor) {
    after = decode_cursor(*cursor,
                          [](std::string_view id) { return is_valid_id(id_prefix::kToken, id); });
  }
  // One row more than asked says whether another page follows.
  auto rows =
      after ? tx.exec(kListTokensAfter, org_id, sql_timestamp(after->at), after->id, limit + 1)
            : tx.exec(kListTokensFirst, org_id, limit + 1);
  return page_of<TokenRecord>(rows, limit, token_from, [](const TokenRecord& t) {
    return Keyset{t.created_at, t.id};
  });
}

bool TokenStore::revoke(Tx& tx, const std::string& org_id, const std::string& id,
                        const Actor& actor) {
  auto now = clock_.now();
  if (tx.exec(kRevokeToken, org_id, id, sql_timestamp(now)).empty()) return false;
  write_audit(tx, now, actor, {.org_id = org_id, .action = "token.revoke", .target = id});
  return true;
}

std::optional<ResolvedToken> TokenStore::resolve(Tx& tx, const std::string& secret_hash,
                                                 Timestamp now) {
  auto rows = tx.exec(kResolve, secret_hash, sql_timestamp(now));
  if (rows.empty()) return std::nullopt;
  const auto& row = rows[0];
  ResolvedToken r;
  r.identity.token_id = row[0].as<std::string>();
  r.identity.org_id = row[1].as<std::string>();
  r.identity.scopes = split_scopes(row[2].as<std::string>());
  r.identity.guardrails = {optional_field<int>(row[3]), optional_field<int>(row[4]),
                           optional_field<std::int64_t>(row[5])};
  r.identity.user = {row[6].as<std::string>(), row[7].as<std::string>(), row[8].as<bool>(),
                     read_timestamp(row[9])};
  r.role = optional_field<std::string>(row[10]);
  r.expires_at = read_optional_timestamp(row[11]);
  return r;
}

void TokenStore::record_uses(Tx& tx, const std::vector<std::pair<std::string, Timestamp>>& uses) {
  if (uses.empty()) return;
  std::vector<std::string> hashes, times;
  for (const auto& [hash, at] : uses) {
    hashes.push_back(hash);
    times.push_back(sql_timestamp(at));
  }
  tx.exec(kRecordUses, pg_array_literal(hashes), pg_array_literal(times));
}

}  // namespace gpurent::identity
