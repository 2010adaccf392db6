// OpenAPI document generation from the registered routes and the fragments of api/openapi/.
#include "api/openapi.h"

#include "api/openapi_fragment_files.h"
#include "core/log.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <stdexcept>

namespace gpurent::http {
namespace {

using nlohmann::json;

const std::set<std::string> kFragmentKeys = {"schemas", "paths"};
const std::set<std::string> kOperationKeys = {"parameters", "requestBody", "responses",
                                              "description"};
const char* const kSchemaPrefix = "#/components/schemas/";

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

// Responses leave additionalProperties open: API.md lets fields be added, and a client that
// validates responses must not break when they are.
json error_schema() {
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

// Money's two fields are fixed by API.md, in requests and responses alike.
json money_schema() {
  return {{"type", "object"},
          {"required", {"amount_minor", "currency"}},
          {"additionalProperties", false},
          {"properties",
           {{"amount_minor", {{"type", "integer"}}},
            {"currency", {{"type", "string"}, {"pattern", "^[A-Z]{3}$"}}}}}};
}

json error_response(const char* description) {
  return {
      {"description", description},
      {"content", {{"application/json", {{"schema", {{"$ref", "#/components/schemas/Error"}}}}}}}};
}

// Which of the document's security schemes an operation takes; an empty list: none.
json security_of(Access access) {
  json bearer = {{"bearer", json::array()}};
  json session = {{"session", json::array()}};
  switch (access) {
    case Access::kAnyone:
      return json::array();
    case Access::kSessionOnly:
      return json::array({session});
    case Access::kSignedIn:
      break;
  }
  return json::array({bearer, session});
}

// The fragments' operations by (pattern, lower-case method): the first fragment that names
// one wins; openapi_disagreements reports the others.
std::map<std::pair<std::string, std::string>, const json*> fragment_operations(
    const std::vector<OpenApiFragment>& fragments) {
  std::map<std::pair<std::string, std::string>, const json*> ops;
  for (const auto& f : fragments) {
    if (!f.content.is_object() || !f.content.contains("paths")) continue;
    const auto& paths = f.content["paths"];
    if (!paths.is_object()) continue;
    for (const auto& [pattern, methods] : paths.items()) {
      if (!methods.is_object()) continue;
      for (const auto& [method, op] : methods.items()) ops.emplace(std::pair{pattern, method}, &op);
    }
  }
  return ops;
}

json operation(const Route& r, const json* fragment) {
  json op = {{"operationId", operation_id(r)}, {"summary", r.summary}, {"tags", {r.tag}}};
  json params = json::array();
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
  json responses = json::object();
  if (fragment && fragment->is_object()) {
    if (fragment->contains("parameters") && (*fragment)["parameters"].is_array()) {
      for (const auto& p : (*fragment)["parameters"]) params.push_back(p);
    }
    if (fragment->contains("description")) op["description"] = (*fragment)["description"];
    if (fragment->contains("requestBody")) op["requestBody"] = (*fragment)["requestBody"];
    if (fragment->contains("responses") && (*fragment)["responses"].is_object()) {
      responses = (*fragment)["responses"];
    }
  }
  if (responses.empty()) responses["2XX"] = {{"description", "Success."}};
  if (!responses.contains("4XX")) {
    responses["4XX"] = error_response(
        "The request was refused: bad input (400), no credentials (401), a role or scope "
        "that does not allow it (403), an unknown or another tenant's object (404), a "
        "conflict (409), 402/413/422/429 as API.md lists them.");
  }
  responses["default"] = error_response("An error in the contract's format (API.md, Conventions).");
  op["responses"] = responses;
  if (!params.empty()) op["parameters"] = params;
  // The route's own declaration, as the pipeline enforces it.
  op["security"] = security_of(r.access);
  if (r.needs_org) op["x-gpurent-needs-org"] = true;
  if (!r.scope.empty()) op["x-gpurent-scope"] = r.scope;
  if (r.platform_admin) op["x-gpurent-platform-admin"] = true;
  return op;
}

void collect_refs(const json& node, const std::string& where, std::vector<std::string>& out,
                  const json& schemas) {
  if (node.is_object()) {
    for (const auto& [key, value] : node.items()) {
      if (key == "$ref" && value.is_string()) {
        const auto ref = value.get<std::string>();
        if (ref.rfind(kSchemaPrefix, 0) != 0 ||
            !schemas.contains(ref.substr(std::string(kSchemaPrefix).size()))) {
          out.push_back(where + ": $ref " + ref + " names no schema of the document");
        }
      } else {
        collect_refs(value, where, out, schemas);
      }
    }
  } else if (node.is_array()) {
    for (const auto& item : node) collect_refs(item, where, out, schemas);
  }
}

}  // namespace

const std::vector<OpenApiFragment>& embedded_openapi_fragments() {
  static const std::vector<OpenApiFragment> fragments = [] {
    std::vector<OpenApiFragment> out;
    for (const auto& file : openapi_fragment_files()) {
      try {
        out.push_back({file.name, json::parse(file.content)});
      } catch (const json::parse_error& e) {
        throw std::runtime_error("api/openapi/" + file.name + " is not JSON: " + e.what());
      }
    }
    return out;
  }();
  return fragments;
}

json build_openapi(const Router& router, const std::string& version,
                   const std::vector<OpenApiFragment>& fragments) {
  const auto described = fragment_operations(fragments);
  json paths = json::object();
  for (const auto& r : router.routes()) {
    if (!r.documented) continue;
    const std::string method = lower(method_name(r.method));
    auto it = described.find({r.pattern, method});
    paths[r.pattern][method] = operation(r, it == described.end() ? nullptr : it->second);
  }
  json schemas = {{"Error", error_schema()}, {"Money", money_schema()}};
  for (const auto& f : fragments) {
    if (!f.content.is_object() || !f.content.contains("schemas")) continue;
    for (const auto& [name, schema] : f.content["schemas"].items()) {
      if (!schemas.contains(name)) schemas[name] = schema;
    }
  }
  return {{"openapi", "3.1.0"},
          {"info",
           {{"title", "gpurent API"},
            {"version", version},
            {"license", {{"name", "Proprietary"}, {"identifier", "LicenseRef-Proprietary"}}},
            {"description",
             "Rent GPU servers by the day. The contract is API.md; this document is built "
             "from the server's own routes."}}},
          // Served by the server it describes: requests go to the same origin.
          {"servers", json::array({{{"url", "/"}}})},
          {"paths", paths},
          {"components",
           {{"schemas", schemas},
            {"securitySchemes",
             {{"bearer", {{"type", "http"}, {"scheme", "bearer"}}},
              {"session", {{"type", "apiKey"}, {"in", "cookie"}, {"name", "gpurent_session"}}}}}}}};
}

std::vector<std::string> openapi_disagreements(const Router& router,
                                               const std::vector<OpenApiFragment>& fragments,
                                               const nlohmann::json* document) {
  std::vector<std::string> out;
  std::set<std::pair<std::string, std::string>> routes;
  for (const auto& r : router.routes()) {
    if (r.documented) routes.insert({r.pattern, lower(method_name(r.method))});
  }
  std::map<std::pair<std::string, std::string>, std::string> described;  // → fragment name
  std::map<std::string, std::string> schema_owner{{"Error", "the generator"},
                                                  {"Money", "the generator"}};
  for (const auto& f : fragments) {
    const std::string file = "api/openapi/" + f.name;
    if (!f.content.is_object()) {
      out.push_back(file + ": not a JSON object");
      continue;
    }
    for (const auto& [key, value] : f.content.items()) {
      if (!kFragmentKeys.count(key)) out.push_back(file + ": unknown key \"" + key + "\"");
    }
    if (f.content.contains("schemas")) {
      for (const auto& [name, schema] : f.content["schemas"].items()) {
        auto [it, fresh] = schema_owner.emplace(name, file);
        if (!fresh) out.push_back(file + ": schema " + name + " is also defined by " + it->second);
      }
    }
    if (!f.content.contains("paths")) continue;
    for (const auto& [pattern, methods] : f.content["paths"].items()) {
      for (const auto& [method, op] : methods.items()) {
        const std::string name = file + ": " + method + " " + pattern;
        if (!routes.count({pattern, method})) {
          out.push_back(name + " is served by no documented route");
          continue;
        }
        auto [it, fresh] = described.emplace(std::pair{pattern, method}, file);
        if (!fresh) out.push_back(name + " is also described by " + it->second);
        if (!op.is_object()) {
          out.push_back(name + ": not a JSON object");
          continue;
        }
        for (const auto& [key, value] : op.items()) {
          if (!kOperationKeys.count(key)) out.push_back(name + ": unknown key \"" + key + "\"");
        }
        bool success = false;
        if (op.contains("responses") && op["responses"].is_object()) {
          for (const auto& [status, response] : op["responses"].items()) {
            success = success || (!status.empty() && status[0] == '2');
          }
        }
        if (!success) out.push_back(name + " lists no success (2xx) response");
        if (op.contains("parameters")) {
          for (const auto& p : op["parameters"]) {
            if (p.value("in", "") == "path") {
              out.push_back(name + ": path parameter " + p.value("name", "?") +
                            " is generated from the route; leave it out");
            }
          }
        }
      }
    }
  }
  for (const auto& [pattern, method] : routes) {
    if (!described.count({pattern, method})) {
      out.push_back(method + " " + pattern + " is described by no file of api/openapi/");
    }
  }
  json built;
  if (!document) built = build_openapi(router, "check", fragments);
  const json& doc = document ? *document : built;
  const json& schemas = doc["components"]["schemas"];
  collect_refs(doc["paths"], "paths", out, schemas);
  collect_refs(schemas, "components", out, schemas);
  return out;
}

void OpenApiDocument::build() {
  std::call_once(built_, [this] {
    const auto& fragments = embedded_openapi_fragments();
    const auto document = build_openapi(router_, version_, fragments);
    if (check_) {
      disagreements_ = openapi_disagreements(router_, fragments, &document);
      for (const auto& d : disagreements_) log::error("OpenAPI document: {}", d);
    }
    text_ = std::make_shared<const std::string>(document.dump());
  });
}

std::shared_ptr<const std::string> OpenApiDocument::text() {
  build();
  return text_;
}

std::vector<std::string> OpenApiDocument::disagreements() {
  build();
  return disagreements_;
}

}  // namespace gpurent::http
