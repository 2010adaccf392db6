// Identity's wiring: its stores, the credential cache and the authenticator, its routes
// (sign-up and sessions, tokens, SSH keys, members, audit, org administration) and metrics.
#pragma once

#include "api/auth.h"
#include "api/credential_cache.h"
#include "api/handlers/admin_handlers.h"
#include "api/handlers/audit_handlers.h"
#include "api/handlers/auth_handlers.h"
#include "api/handlers/member_handlers.h"
#include "api/handlers/ssh_key_handlers.h"
#include "api/handlers/token_handlers.h"
#include "api/metrics.h"
#include "api/modules/module.h"
#include "api/modules/module_context.h"
#include "api/rate_limiter.h"
#include "identity/audit_store.h"
#include "identity/idempotency_store.h"
#include "identity/identity_store.h"
#include "identity/member_store.h"
#include "identity/org_admin_store.h"
#include "identity/ssh_key_store.h"
#include "identity/token_store.h"

namespace gpurent {

// Identity's stores that other modules read through, one instance each per process: made
// before the modules, so that billing and the scheduler are given them while identity is
// given billing's balances in turn.
struct IdentityStores {
  explicit IdentityStores(const Clock& clock) : orgs(clock), ssh_keys(clock) {}
  identity::OrgAdminStore orgs;    // an org's guardrails (OrgDirectory), the admins' org list
  identity::SshKeyStore ssh_keys;  // the keys a booking names
};

class IdentityModule final : public Module {
 public:
  // Subscribes the credential cache to every replica's credential announcements. `balances`
  // is billing's: the admins' org list shows each org's balance.
  IdentityModule(const ModuleContext& ctx, IdentityStores& stores, http::OrgBalancesView& balances);
  IdentityModule(const IdentityModule&) = delete;
  IdentityModule& operator=(const IdentityModule&) = delete;

  void add_routes(http::Router& router) override;
  void add_metrics(http::Metrics& metrics) override;
  // The cache's write-behind of last-used times.
  void start() override { credentials_.start(); }
  // Writes the uses still pending.
  void stop() override { credentials_.stop(); }

  http::Authenticator& authenticator() { return authenticator_; }
  http::CredentialCache& credentials() { return credentials_; }
  const http::LoginThrottle& login_throttle() const { return login_throttle_; }
  identity::IdentityStore& identity_store() { return identity_store_; }
  identity::IdempotencyStore& idempotency_store() { return idempotency_store_; }

 private:
  identity::IdentityStore identity_store_;
  identity::SshKeyStore& ssh_key_store_;
  identity::MemberStore member_store_;
  identity::TokenStore token_store_;
  identity::AuditStore audit_store_;
  identity::OrgAdminStore& org_admin_store_;
  identity::IdempotencyStore idempotency_store_;
  http::CredentialCache credentials_;
  http::Authenticator authenticator_;
  http::LoginThrottle login_throttle_;
  identity::SignIn sign_in_;
  http::AuthRoutesState auth_routes_;
  http::TokenRoutesState token_routes_;
  http::SshKeyRoutesState ssh_key_routes_;
  http::MemberRoutesState member_routes_;
  http::AuditRoutesState audit_routes_;
  http::AdminRoutesState admin_routes_;
};

}  // namespace gpurent
