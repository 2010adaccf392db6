// The one audit writer. Every change a person or a token makes writes its row inside the
// change's own transaction, so the log never shows a change that did not happen nor misses
// one that did.
#pragma once

#include "core/clock.h"
#include "core/db_pool.h"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <string_view>

namespace gpurent {

// Who acted, and from where.
struct Actor {
  std::optional<std::string> user_id;   // none for an anonymous request (a failed login)
  std::optional<std::string> token_id;  // the API token that acted, when one did
  std::string ip;
  std::string request_id;
};

struct AuditEntry {
  std::optional<std::string> org_id;  // none for the platform's rows (inventory, prices)
  std::string_view action;            // "token.create", "node.retire", …
  std::string target;                 // the id acted on; empty when none
  nlohmann::json details = nlohmann::json::object();
};

void write_audit(Tx& tx, Timestamp at, const Actor& actor, const AuditEntry& entry);

}  // namespace gpurent
