// Router: exact-path table first, then parameterised patterns segment by segment.
#include "api/router.h"

#include <stdexcept>

namespace gpurent::http {
namespace {

std::vector<std::string_view> split_path(std::string_view path) {
  std::vector<std::string_view> out;
  std::size_t pos = 1;  // skip the leading '/'
  while (pos <= path.size()) {
    auto slash = path.find('/', pos);
    if (slash == std::string_view::npos) slash = path.size();
    out.push_back(path.substr(pos, slash - pos));
    pos = slash + 1;
  }
  return out;
}

bool is_param(std::string_view part) {
  return part.size() > 2 && part.front() == '{' && part.back() == '}';
}

void append_allow(std::string& allow, Method m) {
  if (!allow.empty()) allow += ", ";
  allow += method_name(m);
  if (m == Method::kGet) allow += ", HEAD";
}

}  // namespace

void Router::add(Route route) {
  if (route.pattern.empty() || route.pattern[0] != '/') {
    throw std::invalid_argument("route pattern must start with '/': " + route.pattern);
  }
  if (route.execution == Execution::kInlineUnlessBlocked && route.method != Method::kGet) {
    // Tried inline and then run again on a worker: only a read may start twice.
    throw std::invalid_argument("only GET routes may be kInlineUnlessBlocked: " + route.pattern);
  }
  Segments seg;
  bool has_params = false;
  for (auto part : split_path(route.pattern)) {
    if (part.find('{') != std::string_view::npos && !is_param(part)) {
      throw std::invalid_argument("malformed parameter in route " + route.pattern);
    }
    has_params = has_params || is_param(part);
    seg.parts.emplace_back(part);
  }
  for (const auto& r : routes_) {
    if (r.method == route.method && r.pattern == route.pattern) {
      throw std::invalid_argument("duplicate route " + std::string(method_name(route.method)) +
                                  " " + route.pattern);
    }
  }
  route.index = routes_.size();
  if (!has_params) exact_[route.pattern].push_back(route.index);
  routes_.push_back(std::move(route));
  segments_.push_back(std::move(seg));
}

RouteMatch Router::match(Method method, std::string_view path) const {
  RouteMatch result;
  // HEAD is served by the GET handler; the transport drops the body.
  Method lookup = method == Method::kHead ? Method::kGet : method;
  if (auto it = exact_.find(path); it != exact_.end()) {
    for (auto i : it->second) {
      if (routes_[i].method == lookup) {
        result.kind = RouteMatch::Kind::kFound;
        result.route = &routes_[i];
        return result;
      }
      append_allow(result.allow, routes_[i].method);
    }
  }
  if (path.empty() || path[0] != '/') return result;
  auto parts = split_path(path);
  for (std::size_t i = 0; i < routes_.size(); ++i) {
    const auto& pattern = segments_[i].parts;
    if (pattern.size() != parts.size()) continue;
    bool ok = true, any_param = false;
    for (std::size_t k = 0; k < parts.size() && ok; ++k) {
      if (is_param(pattern[k])) {
        ok = !parts[k].empty();
        any_param = true;
      } else {
        ok = pattern[k] == parts[k];
      }
    }
    if (!ok || !any_param) continue;
    if (routes_[i].method != lookup) {
      append_allow(result.allow, routes_[i].method);
      continue;
    }
    result.kind = RouteMatch::Kind::kFound;
    result.route = &routes_[i];
    for (std::size_t k = 0; k < parts.size(); ++k) {
      if (is_param(pattern[k])) {
        auto decoded = percent_decode(parts[k], false);
        result.params.emplace_back(pattern[k].substr(1, pattern[k].size() - 2),
                                   decoded ? *decoded : std::string());
      }
    }
    return result;
  }
  if (!result.allow.empty()) result.kind = RouteMatch::Kind::kMethodNotAllowed;
  return result;
}

}  // namespace gpurent::http
