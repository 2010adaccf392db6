// The request pipeline, composed once per route when the routes are all registered:
//
//   authorize (the route's declared access, org, scope, platform admin; credentials from
//   memory) → Idempotency-Key guard (POST routes) → the handler, with the Principal
//   → for routes that change credentials: drop this replica's cache, and before answering
//     wait (bounded) until the change's announcement came back through the listener, so
//     the caller's next request sees it on whichever replica it lands (other replicas'
//     listeners get the same announcement at the same commit, give or take scheduling).
#pragma once

#include "api/auth.h"
#include "api/credential_cache.h"
#include "api/idempotency.h"
#include "api/router.h"
#include "core/announcement_barrier.h"

namespace gpurent::http {

struct PipelineParts {
  Authenticator& authenticator;
  IdempotencyGuard& idempotency;
  CredentialCache& credentials;
  AnnouncementBarrier& barrier;
};

void compose_pipeline(Router& router, const PipelineParts& parts);

}  // namespace gpurent::http
