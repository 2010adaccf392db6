// Checks a response the server sent against the OpenAPI document it serves: the operation
// its method and path name, the response its status selects, and the body against that
// response's JSON schema. Stricter than JSON Schema in one way: an object may hold only the
// properties its schema lists (with allOf, any of its branches), unless the schema says
// `additionalProperties` — so the document must name every field the server returns.
#pragma once

#include <nlohmann/json.hpp>

#include <map>
#include <mutex>
#include <regex>
#include <string>
#include <vector>

namespace gpurent::testing {

class ContractCheck {
 public:
  explicit ContractCheck(nlohmann::json document);

  // What disagrees, one line each; empty when the response agrees or the path is not in
  // the document (test-only routes, static files).
  std::vector<std::string> response(const std::string& method, const std::string& target,
                                    int status, const std::string& content_type,
                                    const std::string& body) const;

  // `value` against `schema` (which may be a $ref into the document); `where` names the
  // value in messages ("$", "$.items[0]").
  std::vector<std::string> value(const nlohmann::json& schema, const nlohmann::json& value,
                                 const std::string& where = "$") const;

 private:
  const nlohmann::json* operation(const std::string& method, const std::string& path) const;
  // `open`: properties other schemas of an allOf list are not flagged here (the allOf
  // checks the union of its branches' properties once).
  void check(const nlohmann::json& schema, const nlohmann::json& v, const std::string& where,
             std::vector<std::string>& out, int depth, bool open = false) const;
  const nlohmann::json& resolve(const nlohmann::json& schema) const;

  const std::regex& pattern(const std::string& text) const;

  nlohmann::json doc_;
  // Compiled once: a sanitizer-built std::regex takes milliseconds to compile, and every
  // response of the suite passes through here.
  // Responses may be checked from several threads at once (tests that send concurrently).
  mutable std::mutex patterns_mutex_;
  mutable std::map<std::string, std::regex> patterns_;
};

}  // namespace gpurent::testing
