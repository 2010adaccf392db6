// The SSH public keys an organisation registers for its engineers, in PostgreSQL.
#pragma once

#include "core/clock.h"
#include "core/db_pool.h"
#include "identity/identity_store.h"
#include "identity/sql_common.h"
#include "identity/ssh_public_key.h"

#include <optional>
#include <string>
#include <vector>

namespace gpurent::identity {

struct SshKeyRecord {
  std::string id;  // "key_…"
  std::string name;
  std::string type;
  int bits = 0;
  std::string fingerprint;  // "SHA256:…", as `ssh-keygen -lf` prints it
  std::string public_key;   // canonical one-line form
  std::string created_at;   // RFC 3339, seconds
};

using SshKeyPage = Page<SshKeyRecord>;

class SshKeyStore {
 public:
  SshKeyStore(PgPool& pool, const Clock& clock) : pool_(pool), clock_(clock) {}

  // Registers `key` for the org. Throws Error(kConflict) with details {field: public_key,
  // fingerprint} when the org already has a key with this fingerprint.
  SshKeyRecord create(const std::string& org_id, const std::string& name, const SshPublicKey& key,
                      const std::string& created_by, const AuditContext& ctx);

  // Keys in (created_at, id) order, at most `limit`, after `cursor` (a next_cursor from an
  // earlier page). Throws invalid_request naming "cursor" when it is not one.
  SshKeyPage list(const std::string& org_id, int limit, const std::optional<std::string>& cursor);

  std::optional<SshKeyRecord> get(const std::string& org_id, const std::string& id);

  // False when the org has no such key (nothing is deleted then).
  bool remove(const std::string& org_id, const std::string& id, const std::string& actor_user_id,
              const AuditContext& ctx);

 private:
  PgPool& pool_;
  const Clock& clock_;
};

}  // namespace gpurent::identity
