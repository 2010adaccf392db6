// Builds the OpenAPI 3.1 document from the router, so the two cannot drift apart: the router
// gives every operation's path, method, summary and access; the fragments in api/openapi/
// (compiled in) give its query parameters, request body and responses.
#pragma once

#include "api/router.h"

#include <nlohmann/json.hpp>

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

}  // namespace gpurent::http
