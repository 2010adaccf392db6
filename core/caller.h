// Caller: who asks a use case for something, as the edge authenticated them. Use cases take
// this instead of the HTTP layer's Principal, so they are called the same from a route, a
// test or the command line, and never see a request.
#pragma once

#include "core/audit.h"
#include "core/guardrails.h"

#include <optional>
#include <string>

namespace gpurent {

struct Caller {
  // The audit rows' actor: the user (none for a sign-in not yet made), the API token that
  // acted, the client's address and the request id.
  Actor actor;
  // The org acted for; empty when none (a route that needs one is refused before its use
  // case runs).
  std::string org_id;
  std::string role;  // the role in org_id; empty when none
  // An API token's own limits, within the org's (absent for a panel session).
  Guardrails token_guardrails;

  const std::string& user_id() const {
    static const std::string kNone;
    return actor.user_id ? *actor.user_id : kNone;
  }
};

}  // namespace gpurent
