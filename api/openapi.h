// Builds the OpenAPI 3.1 document from the router, so the two cannot drift apart: the router
// gives every operation's path, method, summary and access; the fragments in api/openapi/
// (compiled in) give its query parameters, request body and responses.
#pragma once

#include "api/router.h"

#include <nlohmann/json.hpp>

#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace gpurent::http {

// One file of api/openapi/: {"schemas": {Name: schema}, "paths": {pattern: {method: {
// "parameters"?, "requestBody"?, "responses", "description"?}}}}.
struct OpenApiFragment {
  std::string name;  // the file's name, for messages
  nlohmann::json content;
};

// The fragments compiled into this binary, parsed. Throws std::runtime_error naming the
// file when one is not JSON.
const std::vector<OpenApiFragment>& embedded_openapi_fragments();

// Every documented route appears under its path and method with its summary, path
// parameters and security, merged with what the fragments say of it; shared schemas
// (Error, Money) and the fragments' schemas sit under components.
nlohmann::json build_openapi(const Router& router, const std::string& version,
                             const std::vector<OpenApiFragment>& fragments = {});

// Where the router and the fragments disagree, one sentence each (empty: they agree): a
// documented route no fragment describes or without a success response, a fragment's
// operation no route serves, a schema defined twice, a $ref to no schema, a fragment key the
// merge does not know. `document`: what build_openapi made of the same router and fragments,
// if the caller has it (built here otherwise).
std::vector<std::string> openapi_disagreements(const Router& router,
                                               const std::vector<OpenApiFragment>& fragments,
                                               const nlohmann::json* document = nullptr);

// The served document, built from the router (complete once serving starts) and the
// embedded fragments on first use: parsing and merging them costs ~0.1 s of a sanitizer
// build's start, and of the suite's hundreds of test servers few are ever asked for it.
// `check`: also work out openapi_disagreements (test mode, GET /v1/test/openapi-check), each
// logged as an error when found. Any thread.
class OpenApiDocument {
 public:
  OpenApiDocument(const Router& router, std::string version, bool check)
      : router_(router), version_(std::move(version)), check_(check) {}
  std::shared_ptr<const std::string> text();
  std::vector<std::string> disagreements();  // empty unless `check`

 private:
  void build();

  const Router& router_;
  const std::string version_;
  const bool check_;
  std::once_flag built_;
  std::shared_ptr<const std::string> text_;
  std::vector<std::string> disagreements_;
};

}  // namespace gpurent::http
