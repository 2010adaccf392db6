// Maps (method, path) to a route; patterns hold literal segments and {param} segments.
#pragma once

#include "api/http_types.h"

#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace gpurent::http {

struct Principal;  // api/auth.h

// What a module writes: one request, and the caller the pipeline has already checked
// against the route's declaration, in; one domain call; a response out.
using Handler = std::function<Response(const Request&, const Principal&)>;
// What the server calls: the handler behind the pipeline (authentication, access checks,
// the Idempotency-Key guard), composed once by Router::decorate.
using Entry = std::function<Response(const Request&)>;

// Where a handler runs. kInline handlers are cheap and never block (no database, no disk):
// they run on the network thread. kWorker handlers run on the worker pool.
// kInlineUnlessBlocked handlers are tried on the network thread and, the moment they would
// block (core/blocking.h: a database connection, a snapshot to rebuild, a credential not in
// memory), run again from the start on a worker: for reads that usually answer from memory,
// which must have no effects before their first blocking call (GET routes only).
enum class Execution { kInline, kWorker, kInlineUnlessBlocked };

// Which credentials a route takes. The pipeline authenticates once, before the handler
// and the Idempotency-Key guard, and refuses the request (401/403) before either runs.
enum class Access {
  kAnyone,       // no credentials read: probes, sign-up, login, the OpenAPI document
  kSignedIn,     // an API token or a panel session (with CSRF on unsafe methods)
  kSessionOnly,  // a panel session: what an API token may never do (switching orgs)
};

struct Route {
  Method method = Method::kGet;
  std::string pattern;  // "/v1/rentals/{id}"
  Handler handler;
  Execution execution = Execution::kWorker;
  // Who may call it; denied by default. The OpenAPI document's `security` and the
  // tenancy tests read the same declaration.
  Access access = Access::kSignedIn;
  bool needs_org = false;       // 403 unless the caller acts for an organisation
  std::string scope;            // 403 unless the caller's role or token carries it
  bool platform_admin = false;  // 403 unless a platform admin with the `admin` scope
  // It changes what some token or session may do (logout, revocation, roles, org switch,
  // guardrails): after it, the pipeline drops this replica's resolved credentials at once,
  // so the change shows on this replica's very next request. Other replicas drop theirs
  // when the database announces the change (api/credential_cache.h).
  bool changes_credentials = false;
  // Its change is announced to every replica's copy (webhooks' subscriptions; credentials
  // too, above): a successful answer waits, up to a second, until the announcement is back on
  // this replica's listener, so that by the time the caller has it the other replicas have it.
  bool waits_for_announcement = false;
  std::string summary;     // one line for the OpenAPI document
  std::string tag;         // OpenAPI grouping
  bool documented = true;  // false for test-only routes
  bool quiet = false;      // access log at debug level (probes that run every second)
  // POST routes honour the Idempotency-Key header unless this is false: routes that hand
  // out or clear credentials (login, logout, sign-up), whose responses must never be
  // replayed, and test-only routes.
  bool idempotency_key = true;
  std::size_t index = 0;  // position in routes(); metrics key
  // Set by Router::decorate; until then invoke() calls the handler with no caller.
  Entry entry;
};

struct RouteMatch {
  enum class Kind { kFound, kNotFound, kMethodNotAllowed };
  Kind kind = Kind::kNotFound;
  const Route* route = nullptr;
  std::vector<std::pair<std::string, std::string>> params;
  std::string allow;  // for 405: "GET, POST"
};

class Router {
 public:
  // Throws std::invalid_argument on a malformed pattern or a duplicate (method, pattern).
  void add(Route route);
  RouteMatch match(Method method, std::string_view path) const;
  const std::vector<Route>& routes() const { return routes_; }
  // Sets each route's entry to fn(route): its handler behind the pipeline. Call once,
  // before serving.
  void decorate(const std::function<Entry(const Route&)>& fn) {
    for (auto& r : routes_) r.entry = fn(r);
  }

 private:
  struct Segments {
    std::vector<std::string> parts;  // "{id}" marks a parameter
  };
  struct TransparentHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };

  std::vector<Route> routes_;
  std::vector<Segments> segments_;  // parallel to routes_
  // Routes without parameters by exact path, for the common fast case.
  std::unordered_map<std::string, std::vector<std::size_t>, TransparentHash, std::equal_to<>>
      exact_;
};

}  // namespace gpurent::http
