// The OpenAPI document states the limits of core/limits.h, and no other values: every
// request field and query parameter named for one of them carries its minimum and maximum.
// The CLI and the panel leave the check to the server and its document, so a limit changed
// in the header and not in api/openapi/ would have clients told one range and held to another.
#include "core/limits.h"
#include "api/openapi.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <functional>
#include <map>
#include <optional>
#include <string>

namespace gpurent::http {
namespace limits_test {

struct Range {
  std::optional<int> minimum;
  int maximum;
};

// The fields each limit applies to, in requests (paths: bodies and query parameters).
const std::map<std::string, Range>& expected() {
  static const std::map<std::string, Range> fields = {
      {"days", {limits::kMinRentalDays, limits::kMaxRentalDays}},
      {"max_days", {std::nullopt, limits::kMaxGuardrailDays}},
      {"expires_in_days", {std::nullopt, limits::kMaxTokenExpiryDays}},
  };
  return fields;
}

struct Seen {
  std::string where;
  nlohmann::json schema;
};

// Every schema of a field of `expected()` under `node`, with where it was found.
void collect(const nlohmann::json& node, const std::string& where,
             std::multimap<std::string, Seen>& out) {
  if (node.is_array()) {
    for (std::size_t i = 0; i < node.size(); ++i) {
      collect(node[i], where + "[" + std::to_string(i) + "]", out);
    }
    return;
  }
  if (!node.is_object()) return;
  // A query parameter: {"name": "days", "in": "query", "schema": {...}}.
  if (node.contains("name") && node.contains("schema") && node["name"].is_string() &&
      expected().count(node["name"].get<std::string>())) {
    out.emplace(node["name"].get<std::string>(), Seen{where, node["schema"]});
  }
  if (auto p = node.find("properties"); p != node.end() && p->is_object()) {
    for (const auto& [name, schema] : p->items()) {
      if (expected().count(name)) out.emplace(name, Seen{where + "." + name, schema});
    }
  }
  for (const auto& [key, value] : node.items()) collect(value, where + "/" + key, out);
}

TEST(LimitsInTheDocument, EveryRequestFieldOfALimitStatesTheLimitsHeadersRange) {
  std::multimap<std::string, Seen> seen;
  for (const auto& fragment : embedded_openapi_fragments()) {
    auto paths = fragment.content.find("paths");
    if (paths == fragment.content.end()) continue;
    for (const auto& [path, operations] : paths->items()) {
      for (const auto& [method, op] : operations.items()) {
        // What a client sends; answers may carry a `days` that is a count, not a request.
        for (const char* part : {"parameters", "requestBody"}) {
          if (op.contains(part)) collect(op[part], fragment.name + " " + method + " " + path, seen);
        }
      }
    }
  }
  // Booking, quote, extend, the offers' and availability's query, the advisor; the token's
  // and the two guardrail updates: the walk must find them, or it proves nothing.
  EXPECT_GE(seen.count("days"), 5u);
  EXPECT_GE(seen.count("max_days"), 2u);
  EXPECT_GE(seen.count("expires_in_days"), 1u);
  for (const auto& [name, s] : seen) {
    // The availability calendar's `days` is its window, not a rental's length.
    Range want = expected().at(name);
    if (name == "days" && s.where.find("/v1/availability") != std::string::npos) {
      want = {limits::kMinRentalDays, limits::kMaxAvailabilityDays};
    }
    ASSERT_TRUE(s.schema.contains("maximum")) << s.where;
    EXPECT_EQ(s.schema["maximum"], want.maximum) << s.where;
    if (want.minimum) {
      ASSERT_TRUE(s.schema.contains("minimum")) << s.where;
      EXPECT_EQ(s.schema["minimum"], *want.minimum) << s.where;
    }
  }
}

}  // namespace limits_test
}  // namespace gpurent::http
