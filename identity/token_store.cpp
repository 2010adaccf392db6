// TokenStore: hashed token secrets, revocation and expiry checked in the lookup itself.
#include "identity/token_store.h"

#include "identity/sql_common.h"

#include "core/crypto.h"
#include "core/error.h"
#include "core/id.h"
#include "core/pg_array.h"

#include <nlohmann/json.hpp>

namespace gpurent::identity {
namespace {

constexpr Statement kInsertToken = {
    "token_insert",
    "INSERT INTO api_tokens (id, org_id, created_by, name, prefix, secret_hash, scopes,"
    " max_concurrent_gpus, max_days, spend_limit_minor, created_at, expires_at)"
    " VALUES ($1, $2, $3, $4, $5, $6, string_to_array($7, ' '), $8, $9, $10, $11, $12)"
    " RETURNING " RFC3339("created_at") ", " RFC3339("expires_at")};
#define TOKEN_LIST_COLUMNS                                                              \
  "id, name, prefix, array_to_string(scopes, ' '), max_concurrent_gpus, max_days,"      \
  " spend_limit_minor, " RFC3339("created_at") ", " RFC3339("expires_at") ", " RFC3339( \
      "last_used_at") ", created_by, " EPOCH_MICROS("created_at")
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
// One statement finds a live token and stamps its use (at most once a minute, so busy
// automation does not turn every request into a write).
constexpr Statement kResolve = {
    "token_resolve",
    "SELECT t.id, t.org_id, array_to_string(t.scopes, ' '), t.max_concurrent_gpus, t.max_days,"
    " t.spend_limit_minor, u.id, u.email, u.is_platform_admin, " RFC3339("u.created_at")
    ", m.role, " EPOCH_MICROS("t.expires_at")
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
constexpr Statement kAuthenticate = {
    "token_authenticate",
    "WITH live AS (SELECT t.id FROM api_tokens t WHERE t.secret_hash = $1"
    " AND t.revoked_at IS NULL AND (t.expires_at IS NULL OR t.expires_at > $2)),"
    " touched AS (UPDATE api_tokens SET last_used_at = $2 WHERE id IN (SELECT id FROM live)"
    " AND (last_used_at IS NULL OR last_used_at < $2::timestamptz - interval '1 minute'))"
    " SELECT t.id, t.org_id, array_to_string(t.scopes, ' '), t.max_concurrent_gpus, t.max_days,"
    " t.spend_limit_minor, u.id, u.email, u.is_platform_admin, " RFC3339("u.created_at")
    " FROM api_tokens t JOIN live l ON l.id = t.id JOIN users u ON u.id = t.created_by"
    " WHERE u.disabled_at IS NULL"};
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

}  // namespace

bool is_valid_scope(std::string_view scope) {
  for (const char* s : kScopes) {
    if (scope == s) return true;
  }
  return false;
}

std::pair<TokenRecord, std::string> TokenStore::create(
    const std::string& org_id, const std::string& created_by, const std::string& name,
    const std::vector<std::string>& scopes, std::optional<int> expires_in_days,
    const Guardrails& guardrails, const AuditContext& ctx) {
  auto raw = crypto::random_bytes(32);
  std::string token = "gpr_" + crypto::to_hex(raw.data(), raw.size());
  TokenRecord r;
  r.id = new_id(id_prefix::kToken);
  r.name = name;
  r.prefix = token.substr(0, 12);
  r.scopes = scopes;
  r.guardrails = guardrails;
  r.created_by = created_by;
  std::string joined;
  for (const auto& s : scopes) joined += (joined.empty() ? "" : " ") + s;
  auto now = clock_.now();
  std::optional<std::string> expires;
  if (expires_in_days) expires = format_rfc3339(now + std::chrono::hours(24 * *expires_in_days));
  pool_.transact("token_create", [&](PgPool::Lease& lease, pqxx::work& tx) {
    auto row = lease.exec(tx, kInsertToken, r.id, org_id, created_by, name, r.prefix,
                          crypto::sha256_hex(token), joined, guardrails.max_concurrent_gpus,
                          guardrails.max_days, guardrails.spend_limit_minor, format_rfc3339(now),
                          expires)[0];
    r.created_at = row[0].as<std::string>();
    r.expires_at = optional_field<std::string>(row[1]);
    nlohmann::json details = {{"name", name}, {"scopes", scopes}};
    lease.exec(tx, kInsertAuditRow, format_rfc3339(now), org_id, created_by, "token.create", r.id,
               ctx.ip, ctx.request_id, details.dump());
  });
  return {r, token};
}

namespace {

// A live token's row as listed; column 11 (the creation time in microseconds) is read by
// list() for its cursor.
TokenRecord token_from(const pqxx::row& row) {
  TokenRecord r;
  r.id = row[0].as<std::string>();
  r.name = row[1].as<std::string>();
  r.prefix = row[2].as<std::string>();
  r.scopes = split_scopes(row[3].as<std::string>());
  r.guardrails = {optional_field<int>(row[4]), optional_field<int>(row[5]),
                  optional_field<long long>(row[6])};
  r.created_at = row[7].as<std::string>();
  r.expires_at = optional_field<std::string>(row[8]);
  r.last_used_at = optional_field<std::string>(row[9]);
  r.created_by = row[10].as<std::string>();
  return r;
}

}  // namespace

Page<TokenRecord> TokenStore::list(const std::string& org_id, int limit,
                                   const std::optional<std::string>& cursor) {
  std::optional<KeysetPosition> after;
  if (cursor) after = parse_keyset_cursor(*cursor, id_prefix::kToken);
  return pool_.transact("token_list", [&](PgPool::Lease& lease, pqxx::work& tx) {
    // One row more than asked says whether another page follows.
    auto rows =
        after ? lease.exec(tx, kListTokensAfter, org_id, after->created_at, after->id, limit + 1)
              : lease.exec(tx, kListTokensFirst, org_id, limit + 1);
    return keyset_page<TokenRecord>(rows, limit, 11, token_from,
                                    [](const TokenRecord& t) { return t.id; });
  });
}

bool TokenStore::revoke(const std::string& org_id, const std::string& id, const std::string& actor,
                        const AuditContext& ctx) {
  return pool_.transact("token_revoke", [&](PgPool::Lease& lease, pqxx::work& tx) {
    auto now = format_rfc3339(clock_.now());
    if (lease.exec(tx, kRevokeToken, org_id, id, now).empty()) return false;
    lease.exec(tx, kInsertAuditRow, now, org_id, actor, "token.revoke", id, ctx.ip, ctx.request_id,
               "{}");
    return true;
  });
}

std::optional<TokenIdentity> TokenStore::authenticate(const std::string& token) {
  std::string hash = crypto::sha256_hex(token);
  return pool_.transact("token_authenticate", [&](PgPool::Lease& lease, pqxx::work& tx) {
    std::optional<TokenIdentity> out;
    auto rows = lease.exec(tx, kAuthenticate, hash, format_rfc3339(clock_.now()));
    if (rows.empty()) return out;
    const auto& row = rows[0];
    TokenIdentity t;
    t.token_id = row[0].as<std::string>();
    t.org_id = row[1].as<std::string>();
    t.scopes = split_scopes(row[2].as<std::string>());
    t.guardrails = {optional_field<int>(row[3]), optional_field<int>(row[4]),
                    optional_field<long long>(row[5])};
    t.user = {row[6].as<std::string>(), row[7].as<std::string>(), row[8].as<bool>(),
              row[9].as<std::string>()};
    out = std::move(t);
    return out;
  });
}

std::optional<ResolvedToken> TokenStore::resolve(const std::string& secret_hash, Timestamp now) {
  return pool_.read("token_resolve", [&](PgPool::Lease& lease, pqxx::transaction_base& tx) {
    std::optional<ResolvedToken> out;
    auto rows = lease.exec(tx, kResolve, secret_hash, sql_timestamp(now));
    if (rows.empty()) return out;
    const auto& row = rows[0];
    ResolvedToken r;
    r.identity.token_id = row[0].as<std::string>();
    r.identity.org_id = row[1].as<std::string>();
    r.identity.scopes = split_scopes(row[2].as<std::string>());
    r.identity.guardrails = {optional_field<int>(row[3]), optional_field<int>(row[4]),
                             optional_field<long long>(row[5])};
    r.identity.user = {row[6].as<std::string>(), row[7].as<std::string>(), row[8].as<bool>(),
                       row[9].as<std::string>()};
    r.role = optional_field<std::string>(row[10]);
    if (!row[11].is_null())
      r.expires_at = Timestamp(std::chrono::microseconds(row[11].as<long long>()));
    out = std::move(r);
    return out;
  });
}

void TokenStore::record_uses(const std::vector<std::pair<std::string, Timestamp>>& uses) {
  if (uses.empty()) return;
  std::vector<std::string> hashes, times;
  for (const auto& [hash, at] : uses) {
    hashes.push_back(hash);
    times.push_back(sql_timestamp(at));
  }
  pool_.transact("token_record_uses", [&](PgPool::Lease& lease, pqxx::work& tx) {
    lease.exec(tx, kRecordUses, pg_array_literal(hashes), pg_array_literal(times));
  });
}

}  // namespace gpurent::identity
