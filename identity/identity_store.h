// Users, organisations, memberships and browser sessions in PostgreSQL.
#pragma once

#include "core/audit.h"
#include "core/clock.h"
#include "core/db_pool.h"

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace gpurent::identity {

inline constexpr const char* kRoles[] = {"owner", "admin", "member", "billing", "viewer"};
bool is_valid_role(std::string_view role);

struct User {
  std::string id;
  std::string email;
  bool is_platform_admin = false;
  Timestamp created_at;
};

struct Org {
  std::string id;
  std::string name;
};

struct Membership {
  Org org;
  std::string role;
};

struct SessionPolicy {
  std::chrono::seconds idle{std::chrono::hours(12)};
  std::chrono::seconds absolute{std::chrono::hours(24 * 7)};
};

// A session as created: the cookie value and CSRF token exist in plain text only here.
struct NewSession {
  std::string cookie_value;
  std::string csrf_token;
};

struct Session {
  std::string id_hash;
  User user;
  std::optional<std::string> current_org_id;
  std::string csrf_token;
};

// A session as the credential cache keeps it.
struct ResolvedSession {
  Session session;
  std::optional<std::string> role;  // the user's role in current_org_id now
  Timestamp expires_at;             // absolute expiry
  Timestamp last_seen_at;           // idle expiry is this plus the policy's idle time
};

// Every method runs in the caller's transaction (see gpurent::Tx) and commits nothing.
class IdentityStore {
 public:
  explicit IdentityStore(const Clock& clock) : clock_(clock) {}

  // Sign-up: a user, an org, an owner membership and the `user.signup` audit row, whose
  // actor is the new user. Throws Error(kConflict) when the email is taken (compared
  // case-insensitively).
  std::pair<User, Org> create_user_with_org(Tx& tx, const std::string& email,
                                            const std::string& password_hash,
                                            const std::string& org_name, const Actor& actor);

  // A platform admin (gpurentd admin create). Throws Error(kConflict) when the email is taken.
  User create_platform_admin(Tx& tx, const std::string& email, const std::string& password_hash,
                             const Actor& actor);

  // The user and their password hash, for login.
  std::optional<std::pair<User, std::string>> find_login(Tx& tx, const std::string& email);

  std::vector<Membership> memberships(Tx& tx, const std::string& user_id);
  std::optional<std::string> role_in(Tx& tx, const std::string& user_id, const std::string& org_id);

  NewSession create_session(Tx& tx, const std::string& user_id,
                            const std::optional<std::string>& current_org_id,
                            const SessionPolicy& policy, const std::string& ip);
  // The live session for a cookie value (not expired by idle or absolute time); refreshes
  // its last-seen time.
  std::optional<Session> find_session(Tx& tx, const std::string& cookie_value,
                                      const SessionPolicy& policy);
  // One statement that writes nothing: the session whose cookie hashes to `id_hash`, not
  // past its absolute expiry at `now`, its user not disabled, with the user's role in its
  // current org. The caller judges idle expiry from last_seen_at and the uses it has not
  // written yet (the credential cache writes last-seen times behind).
  std::optional<ResolvedSession> resolve_session(Tx& tx, const std::string& id_hash, Timestamp now);
  // Records when sessions (by id hash) were last seen, in one statement; a recorded time
  // never moves back.
  void record_sessions_seen(Tx& tx, const std::vector<std::pair<std::string, Timestamp>>& seen);
  void delete_session(Tx& tx, const std::string& id_hash);
  void set_session_org(Tx& tx, const std::string& id_hash, const std::string& org_id);

  // An audit row at the clock's now, for the session events the handlers record (a login, a
  // failed one, a logout) beside the statements above.
  void audit(Tx& tx, const Actor& actor, const AuditEntry& entry);

 private:
  const Clock& clock_;
};

}  // namespace gpurent::identity
