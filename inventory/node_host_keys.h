// The node's sshd host keys as its agent last reported them (migration 0011): shown in the
// admin node view and, by the SSH capability, in the rental, so that engineers check the
// host they reach instead of trusting it on first use.
#pragma once

#include "core/clock.h"
#include "core/db_pool.h"

#include <map>
#include <string>
#include <vector>

namespace gpurent::inventory {

struct HostKey {
  std::string algorithm;    // "ssh-ed25519", "ecdsa-sha2-nistp256", "ssh-rsa", …
  std::string public_key;   // the OpenSSH line without its comment: "type base64"
  std::string fingerprint;  // "SHA256:…", as `ssh-keygen -lf` prints it
  Timestamp reported_at;
  // Its certificate from the platform's host CA (the `-cert.pub` line); empty when none.
  std::string certificate;
};

class NodeHostKeys {
 public:
  explicit NodeHostKeys(const Clock& clock) : clock_(clock) {}

  // Replaces the node's keys with `keys` (algorithm, public_key and fingerprint set; one per
  // algorithm — a second of the same algorithm is ignored), reported now. An agent that
  // reports none leaves none.
  void replace(Tx& tx, const std::string& node_id, const std::vector<HostKey>& keys);

  // The node's keys by algorithm.
  std::vector<HostKey> list(Tx& tx, const std::string& node_id);
  // The same for several nodes in one statement: node id → its keys by algorithm (a node
  // with none is absent). What a page of rentals shows for its nodes.
  std::map<std::string, std::vector<HostKey>> list(Tx& tx,
                                                   const std::vector<std::string>& node_ids);

 private:
  const Clock& clock_;
};

}  // namespace gpurent::inventory
