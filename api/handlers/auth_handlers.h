// Sign-up, login, logout, /v1/me and switching the session's org (API.md "Identity").
#pragma once

#include "api/auth.h"
#include "api/router.h"
#include "core/db_pool.h"
#include "identity/identity_store.h"
#include "identity/sign_in.h"

namespace gpurent::http {

struct AuthRoutesState {
  PgPool* pool = nullptr;
  identity::IdentityStore* store = nullptr;
  identity::SignIn* sign_in = nullptr;  // sign-up and login
  Authenticator* auth = nullptr;
  bool signup_enabled = true;
};

void add_auth_routes(Router& router, AuthRoutesState& state);

// Field checks shared with the admin command line.
std::string validated_email(const std::string& email);  // throws invalid_request("email")

}  // namespace gpurent::http
