// SSH keys of the caller's organisation (API.md "Identity and tenancy": /v1/ssh-keys).
#pragma once

#include "api/auth.h"
#include "api/router.h"
#include "core/db_pool.h"
#include "identity/ssh_key_store.h"

namespace gpurent::http {

struct SshKeyRoutesState {
  PgPool* pool = nullptr;
  identity::SshKeyStore* store = nullptr;
};

void add_ssh_key_routes(Router& router, SshKeyRoutesState& state);

}  // namespace gpurent::http
