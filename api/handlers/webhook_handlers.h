// Webhooks of the caller's organisation (API.md "Identity and tenancy": /v1/webhooks), their
// delivery log and a test ping.
#pragma once

#include "api/auth.h"
#include "api/router.h"
#include "core/db_pool.h"
#include "webhooks/subscription_copy.h"
#include "webhooks/webhook_store.h"

namespace gpurent::http {

struct WebhookRoutesState {
  PgPool* pool = nullptr;
  webhooks::WebhookStore* store = nullptr;
  // Forgets the webhooks after each change on this replica; the database announces it to all.
  webhooks::SubscriptionCopy* subscriptions = nullptr;
  // Whether a webhook may name an internal address (config webhook_allow_internal).
  bool allow_internal = false;
};

void add_webhook_routes(Router& router, WebhookRoutesState& state);

}  // namespace gpurent::http
