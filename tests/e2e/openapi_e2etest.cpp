// The served /v1/openapi.json against the server that serves it: the router and the
// document agree in both directions, every operation documents its success response, and a
// standard validator (Redocly CLI, from npm) finds no problem. That every response matches
// its schema is checked on every response of the ApiTest suites (tests/support/api_fixture.h).
#include "core/subprocess.h"
#include "tests/support/api_fixture.h"
#include "tests/support/paths.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <set>

namespace gpurent::testing {
namespace {

using Json = nlohmann::json;

class OpenApiE2E : public ApiTest {
 protected:
  Json document() {
    auto r = get("/v1/openapi.json", {});
    EXPECT_EQ(r.status, 200);
    return r.json();
  }
};

TEST_F(OpenApiE2E, TheRouterAndTheDocumentAgree) {
  auto r = get("/v1/test/openapi-check", {});
  ASSERT_EQ(r.status, 200) << r.body;
  auto disagreements = r.json()["disagreements"];
  EXPECT_TRUE(disagreements.empty()) << disagreements.dump(2);
}

TEST_F(OpenApiE2E, EveryOperationDescribesItsSuccessAndItsBody) {
  Json doc = document();
  int operations = 0;
  for (const auto& [path, ops] : doc["paths"].items()) {
    for (const auto& [method, op] : ops.items()) {
      ++operations;
      const std::string name = method + " " + path;
      bool success = false;
      for (const auto& [status, response] : op["responses"].items()) {
        if (status[0] != '2') continue;
        success = true;
        // A success with a body names its media type and, for JSON, its schema.
        if (status != "204" && response.contains("content")) {
          for (const auto& [media, content] : response["content"].items()) {
            EXPECT_TRUE(content.contains("schema")) << name << " " << status << " " << media;
          }
        }
      }
      EXPECT_TRUE(success) << name << " documents no success response";
      EXPECT_FALSE(op["responses"].contains("2XX")) << name << " has only the generic 2XX";
      if (op.contains("requestBody")) {
        for (const auto& [media, content] : op["requestBody"]["content"].items()) {
          const auto& schema = content["schema"];
          if (media == "application/json" && schema.value("type", "") == "object") {
            // The server refuses unknown fields (API.md): the document says so.
            EXPECT_EQ(schema.value("additionalProperties", true), false) << name;
          }
        }
      }
    }
  }
  EXPECT_GT(operations, 60);
}

// API.md lets fields be added to responses: a schema only responses use never forbids
// them (the suite's checker still fails a field the document does not name).
TEST_F(OpenApiE2E, ResponsesLeaveRoomForAddedFields) {
  Json doc = document();
  const auto& schemas = doc["components"]["schemas"];
  // The schemas request bodies use, directly or through other schemas, may be closed.
  std::set<std::string> requests;
  std::function<void(const Json&)> collect = [&](const Json& node) {
    if (node.is_object()) {
      for (const auto& [key, value] : node.items()) {
        if (key == "$ref") {
          auto name = value.get<std::string>().substr(std::string("#/components/schemas/").size());
          if (requests.insert(name).second) collect(schemas[name]);
        } else {
          collect(value);
        }
      }
    } else if (node.is_array()) {
      for (const auto& item : node) collect(item);
    }
  };
  for (const auto& [path, ops] : doc["paths"].items()) {
    for (const auto& [method, op] : ops.items()) {
      if (op.contains("requestBody")) collect(op["requestBody"]);
    }
  }
  std::function<void(const Json&, const std::string&, std::set<std::string>&)> open =
      [&](const Json& node, const std::string& where, std::set<std::string>& seen) {
        if (node.is_object()) {
          EXPECT_NE(node.value("additionalProperties", Json(true)), Json(false)) << where;
          for (const auto& [key, value] : node.items()) {
            if (key == "$ref") {
              auto name =
                  value.get<std::string>().substr(std::string("#/components/schemas/").size());
              if (!requests.count(name) && seen.insert(name).second) {
                open(schemas[name], "schema " + name, seen);
              }
            } else {
              open(value, where, seen);
            }
          }
        } else if (node.is_array()) {
          for (const auto& item : node) open(item, where, seen);
        }
      };
  std::set<std::string> seen;
  for (const auto& [path, ops] : doc["paths"].items()) {
    for (const auto& [method, op] : ops.items()) {
      open(op["responses"], method + " " + path, seen);
    }
  }
  EXPECT_GT(seen.size(), 20u);
}

TEST_F(OpenApiE2E, TheDocumentPassesRedoclyLint) {
  const auto cli =
      std::filesystem::path(source_dir()) / "web/tests/node_modules/@redocly/cli/bin/cli.js";
  ASSERT_TRUE(std::filesystem::exists(cli))
      << cli << " is missing: scripts/bootstrap installs it (npm ci --prefix web/tests)";
  auto dir =
      std::filesystem::temp_directory_path() / ("gpurent-openapi-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto file = dir / "openapi.json";
  std::ofstream(file) << get("/v1/openapi.json", {}).body;
  auto result = run_subprocess({"node", cli.string(), "lint", file.string(), "--config",
                                source_dir() + "/api/redocly.yaml", "--format", "stylish"});
  std::filesystem::remove_all(dir);
  EXPECT_EQ(result.exit_code, 0) << result.output;
}

}  // namespace
}  // namespace gpurent::testing
