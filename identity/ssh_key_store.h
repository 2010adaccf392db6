// The SSH public keys an organisation registers for its engineers, in PostgreSQL.
#pragma once

#include "core/audit.h"
#include "core/clock.h"
#include "core/db_pool.h"
#include "core/paging.h"
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
  Timestamp created_at;
};

using SshKeyPage = gpurent::Page<SshKeyRecord>;

// Every method runs in the caller's transaction (see gpurent::Tx) and commits nothing.
class SshKeyStore {
 public:
  explicit SshKeyStore(const Clock& clock) : clock_(clock) {}

  // Registers `key` for the org, created by `actor`'s user, with the `ssh_key.create` audit
  // row. Throws Error(kConflict) with details {field: public_key, fingerprint} when the org
  // already has a key with this fingerprint.
  SshKeyRecord create(Tx& tx, const std::string& org_id, const std::string& name,
                      const SshPublicKey& key, const Actor& actor);

  // Keys in (created_at, id) order, at most `limit`, after `cursor` (a next_cursor from an
  // earlier page). Throws invalid_request naming "cursor" when it is not one.
  SshKeyPage list(Tx& tx, const std::string& org_id, int limit,
                  const std::optional<std::string>& cursor);

  std::optional<SshKeyRecord> get(Tx& tx, const std::string& org_id, const std::string& id);

  // False when the org has no such key (nothing is deleted then).
  bool remove(Tx& tx, const std::string& org_id, const std::string& id, const Actor& actor);

 private:
  const Clock& clock_;
};

}  // namespace gpurent::identity
