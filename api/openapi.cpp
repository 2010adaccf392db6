// OpenAPI document generation from the registered routes.
#include "api/openapi.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>

namespace gpurent::http {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string operation_id(const Route& r) {
  std::string id = lower(method_name(r.method));
  for (char c : r.pattern) {
    if (std::isalnum(static_cast<unsigned char>(c))) {
      id.push_back(c);
    } else if (!id.empty() && id.back() != '_') {
      id.push_back('_');
    }
  }
  while (!id.empty() && id.back() == '_') id.pop_back();
  return id;
}

nlohmann::json error_schema() {
  return {{"type", "object"},
          {"required", {"error"}},
          {"properties",
           {{"error",
             {{"type", "object"},
              {"required", {"code", "message"}},
              {"properties",
               {{"code", {{"type", "string"}}},
                {"message", {{"type", "string"}}},
                {"details", {{"type", "object"}}}}}}}}}};
}

// Which of the document's security schemes an operation takes; an empty list: none.
nlohmann::json security_of(Access access) {
  nlohmann::json bearer = {{"bearer", nlohmann::json::array()}};
  nlohmann::json session = {{"session", nlohmann::json::array()}};
  switch (access) {
    case Access::kAnyone:
      return nlohmann::json::array();
    case Access::kSessionOnly:
      return nlohmann::json::array({session});
    case Access::kSignedIn:
      break;
  }
  return nlohmann::json::array({bearer, session});
}

}  // namespace

nlohmann::json build_openapi(const Router& router, const std::string& version) {
  nlohmann::json paths = nlohmann::json::object();
  for (const auto& r : router.routes()) {
    if (!r.documented) continue;
    nlohmann::json op = {
        {"operationId", operation_id(r)},
        {"summary", r.summary},
        {"tags", {r.tag}},
        {"responses",
         {{"default",
           {{"description", "An error in the contract's format (API.md, Conventions)."},
            {"content",
             {{"application/json", {{"schema", {{"$ref", "#/components/schemas/Error"}}}}}}}}},
          {"2XX", {{"description", "Success."}}}}}};
    nlohmann::json params = nlohmann::json::array();
    std::size_t pos = 0;
    while ((pos = r.pattern.find('{', pos)) != std::string::npos) {
      auto end = r.pattern.find('}', pos);
      params.push_back({{"name", r.pattern.substr(pos + 1, end - pos - 1)},
                        {"in", "path"},
                        {"required", true},
                        {"schema", {{"type", "string"}}}});
      pos = end;
    }
    if (r.method == Method::kPost && r.execution == Execution::kWorker && r.idempotency_key) {
      params.push_back(
          {{"name", "Idempotency-Key"},
           {"in", "header"},
           {"required", false},
           {"description",
            "Retrying with the same key and body returns the first response (24 h); another "
            "body is 422 idempotency_key_reused."},
           {"schema", {{"type", "string"}, {"minLength", 1}, {"maxLength", 255}}}});
    }
    if (!params.empty()) op["parameters"] = params;
    // The route's own declaration, as the pipeline enforces it.
    op["security"] = security_of(r.access);
    if (r.needs_org) op["x-gpurent-needs-org"] = true;
    if (!r.scope.empty()) op["x-gpurent-scope"] = r.scope;
    if (r.platform_admin) op["x-gpurent-platform-admin"] = true;
    paths[r.pattern][lower(method_name(r.method))] = op;
  }
  return {{"openapi", "3.1.0"},
          {"info",
           {{"title", "gpurent API"},
            {"version", version},
            {"description", "Rent GPU servers by the day. The contract is API.md."}}},
          {"paths", paths},
          {"components",
           {{"schemas",
             {{"Error", error_schema()},
              {"Money",
               {{"type", "object"},
                {"required", {"amount_minor", "currency"}},
                {"properties",
                 {{"amount_minor", {{"type", "integer"}}},
                  {"currency", {{"type", "string"}, {"pattern", "^[A-Z]{3}$"}}}}}}}}},
            {"securitySchemes",
             {{"bearer", {{"type", "http"}, {"scheme", "bearer"}}},
              {"session", {{"type", "apiKey"}, {"in", "cookie"}, {"name", "gpurent_session"}}}}}}}};
}

}  // namespace gpurent::http
