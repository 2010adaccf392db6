// Notices to tenants (scheduler/notices.h): GET /v1/notices, the org's, newest first, and GET
// /v1/rentals/{id}/notices, one rental's.
#pragma once

#include "api/router.h"
#include "core/db_pool.h"
#include "scheduler/notices.h"
#include "scheduler/rental_store.h"

namespace gpurent::http {

struct NoticeRoutesState {
  PgPool* pool = nullptr;
  scheduler::NoticeStore* notices = nullptr;
  scheduler::RentalStore* rentals = nullptr;
};

void add_notice_routes(Router& router, NoticeRoutesState& state);

}  // namespace gpurent::http
