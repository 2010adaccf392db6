// Composing the request pipeline.
#include "api/pipeline.h"

#include "core/log.h"

#include <chrono>

namespace gpurent::http {

void compose_pipeline(Router& router, const PipelineParts& parts) {
  router.decorate([&idempotency = parts.idempotency, &authenticator = parts.authenticator,
                   &credentials = parts.credentials, &barrier = parts.barrier](const Route& r) {
    Entry entry = [&authenticator, route = &r, handler = idempotency.wrap(r)](const Request& req) {
      return handler(req, authorize(authenticator, *route, req));
    };
    if (!r.changes_credentials && !r.waits_for_announcement) return entry;
    return Entry([&credentials, &barrier, entry,
                  drops_credentials = r.changes_credentials](const Request& req) {
      Response response;
      try {
        response = entry(req);
      } catch (...) {
        // A handler that failed may still have committed.
        if (drops_credentials) credentials.invalidate();
        throw;
      }
      if (drops_credentials) credentials.invalidate();
      // Before answering, the change's announcement comes back to this replica's listener.
      // PostgreSQL sent it to every replica's listener at the same commit, so by the time
      // the caller has the answer the others have it too, or will within the moment it
      // takes their listener process to be scheduled (milliseconds on a loaded machine).
      // Bounded, and only for the few routes that change credentials or webhooks.
      if (response.status < 300) {
        try {
          if (!barrier.pass(std::chrono::seconds(1))) {
            log::warn("a change was not announced back within 1 s");
          }
        } catch (const std::exception& e) {
          log::warn("announcing a change failed: {}", e.what());
        }
      }
      return response;
    });
  });
}

}  // namespace gpurent::http
