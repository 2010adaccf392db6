// API tokens: GET/POST /v1/api-tokens, DELETE /v1/api-tokens/{id} (API.md "Identity").
#pragma once

#include "api/auth.h"
#include "api/router.h"
#include "core/db_pool.h"
#include "identity/token_store.h"

namespace gpurent::http {

struct TokenRoutesState {
  PgPool* pool = nullptr;
  identity::TokenStore* store = nullptr;
};

void add_token_routes(Router& router, TokenRoutesState& state);

}  // namespace gpurent::http
