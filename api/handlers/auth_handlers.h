// Sign-up, login, logout, /v1/me and switching the session's org (API.md "Identity").
#pragma once

#include "api/auth.h"
#include "api/router.h"
#include "core/db_pool.h"
#include "identity/identity_store.h"

namespace gpurent::http {

struct LoginThrottle;

struct AuthRoutesState {
  PgPool* pool = nullptr;
  identity::IdentityStore* store = nullptr;
  Authenticator* auth = nullptr;
  bool signup_enabled = true;
  LoginThrottle* login_throttle = nullptr;  // none: failed logins are not throttled
};

void add_auth_routes(Router& router, AuthRoutesState& state);

// Field checks shared with the admin command line.
std::string validated_email(const std::string& email);  // throws invalid_request("email")

}  // namespace gpurent::http
