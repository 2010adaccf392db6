// Members of the caller's organisation (API.md "Identity and tenancy": /v1/members).
#pragma once

#include "api/auth.h"
#include "api/router.h"
#include "core/db_pool.h"
#include "identity/member_store.h"

namespace gpurent::http {

struct MemberRoutesState {
  PgPool* pool = nullptr;
  identity::MemberStore* store = nullptr;
};

void add_member_routes(Router& router, MemberRoutesState& state);

}  // namespace gpurent::http
