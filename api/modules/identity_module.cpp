// Identity's wiring.
#include "api/modules/identity_module.h"

namespace gpurent {

IdentityModule::IdentityModule(const ModuleContext& ctx, IdentityStores& stores,
                               http::OrgBalancesView& balances)
    : identity_store_(ctx.clock),
      ssh_key_store_(stores.ssh_keys),
      member_store_(ctx.clock),
      token_store_(ctx.clock),
      org_admin_store_(stores.orgs),
      idempotency_store_(ctx.clock),
      credentials_(ctx.pool, identity_store_, token_store_, ctx.clock,
                   [&listener = ctx.listener] { return listener.caught_up(); }),
      authenticator_(credentials_,
                     {.idle = ctx.config.session_idle, .absolute = ctx.config.session_absolute}),
      sign_in_(ctx.pool, identity_store_, authenticator_.policy(), &login_throttle_,
               {.log2_n = ctx.config.password_hash_cost}),
      auth_routes_{.pool = &ctx.pool,
                   .store = &identity_store_,
                   .sign_in = &sign_in_,
                   .auth = &authenticator_,
                   .signup_enabled = ctx.config.signup_enabled},
      token_routes_{.pool = &ctx.pool, .store = &token_store_},
      ssh_key_routes_{.pool = &ctx.pool, .store = &ssh_key_store_},
      member_routes_{.pool = &ctx.pool, .store = &member_store_},
      audit_routes_{.pool = &ctx.pool, .store = &audit_store_},
      admin_routes_{.pool = &ctx.pool,
                    .orgs = &org_admin_store_,
                    .audit = &audit_store_,
                    .balances = &balances} {
  // Every change that takes effect "on the next request" (revocation, logout, role change,
  // removal, org switch, admin demotion, guardrails) is announced in its own transaction by
  // a trigger; after a reconnection the cache is dropped, since announcements sent
  // meanwhile are lost.
  ctx.listener.subscribe("gpurent_credentials",
                         [this](const std::string&) { credentials_.invalidate(); });
  ctx.listener.on_connected([this] { credentials_.invalidate(); });
}

void IdentityModule::add_routes(http::Router& router) {
  http::add_auth_routes(router, auth_routes_);
  http::add_token_routes(router, token_routes_);
  http::add_ssh_key_routes(router, ssh_key_routes_);
  http::add_member_routes(router, member_routes_);
  http::add_audit_routes(router, audit_routes_);
  http::add_admin_routes(router, admin_routes_);
}

void IdentityModule::add_metrics(http::Metrics& metrics) {
  metrics.add_job("credential_write_behind", credentials_.write_behind_stats());
  metrics.add_collector([this](std::string& out) {
    using http::append_metric;
    append_metric(out, "gpurent_credential_cache_hits_total", "counter",
                  "Credentials resolved from memory.", credentials_.hits());
    append_metric(out, "gpurent_credential_cache_misses_total", "counter",
                  "Credentials resolved from the database.", credentials_.misses());
    append_metric(out, "gpurent_credential_cache_invalidations_total", "counter",
                  "Announced credential changes that dropped cached entries.",
                  credentials_.invalidations());
    append_metric(out, "gpurent_credential_cache_entries", "gauge",
                  "Credentials held in memory now.", credentials_.entries());
  });
}

}  // namespace gpurent
