// Maps (method, path) to a route; patterns hold literal segments and {param} segments.
#pragma once

#include "api/http_types.h"

#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace gpurent::http {

using Handler = std::function<Response(const Request&)>;

// Where a handler runs. kInline handlers are cheap and never block (no database, no disk):
// they run on the network thread. kWorker handlers run on the worker pool.
enum class Execution { kInline, kWorker };

struct Route {
  Method method = Method::kGet;
  std::string pattern;  // "/v1/rentals/{id}"
  Handler handler;
  Execution execution = Execution::kWorker;
  std::string summary;     // one line for the OpenAPI document
  std::string tag;         // OpenAPI grouping
  bool documented = true;  // false for test-only routes
  bool quiet = false;      // access log at debug level (probes that run every second)
  // POST routes honour the Idempotency-Key header unless this is false: routes that hand
  // out or clear credentials (login, logout, sign-up), whose responses must never be
  // replayed, and test-only routes.
  bool idempotency_key = true;
  std::size_t index = 0;  // position in routes(); metrics key
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
  // Replaces each route's handler with fn(route) (wrapping it in middleware); call before
  // serving.
  void decorate(const std::function<Handler(const Route&)>& fn) {
    for (auto& r : routes_) r.handler = fn(r);
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
