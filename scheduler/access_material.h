// What a rental's install_access task carries besides the rental itself, asked of the SSH
// capability inside the lifecycle's transaction: the rental's registered keys as they are
// when it starts (a key deleted since is not installed), the node's host certificates
// (sshd's HostCertificate), and the login probe that proves the login works.
#pragma once

#include "core/clock.h"
#include "core/db_pool.h"
#include "scheduler/records.h"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

namespace gpurent::scheduler {

class AccessMaterial {
 public:
  virtual ~AccessMaterial() = default;
  // The public key lines (one each) of the rental's registered SSH keys.
  virtual std::vector<std::string> authorized_keys(Tx& tx, const RentalRecord& r) = 0;
  virtual std::vector<std::string> host_certificates(Tx& tx, const std::string& node_id) = 0;
  // The payload's "probe" (certificate, principal, host, host_ca_key), made at `now`, or
  // nullopt when the node reported no probe key.
  virtual std::optional<nlohmann::json> probe(Tx& tx, const RentalRecord& r, Timestamp now) = 0;
};

}  // namespace gpurent::scheduler
