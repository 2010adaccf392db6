// Finding a request's access line in gpurentd's JSON log: tests that scan the log for what
// must never be there first prove that it holds the lines they scan.
#pragma once

#include "tests/support/http_client.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

namespace gpurent::testing {

// A request a test sent, to find its access line in the server's log.
struct Sent {
  std::string method;
  std::string target;
  HttpResult result;
};

// Whether `logs` (JSON lines) hold the access line of every request in `sent`: its request
// id, and a message that starts with its method, target and status.
inline bool access_lines_logged(const std::string& logs, const std::vector<Sent>& sent) {
  std::vector<bool> found(sent.size(), false);
  std::istringstream lines(logs);
  for (std::string line; std::getline(lines, line);) {
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (!j.is_object() || !j["request_id"].is_string() || !j["msg"].is_string()) continue;
    for (std::size_t i = 0; i < sent.size(); ++i) {
      const Sent& s = sent[i];
      std::string access = s.method + " " + s.target + " " + std::to_string(s.result.status) + " ";
      found[i] = found[i] || (j["request_id"] == s.result.header("x-request-id") &&
                              j["msg"].get<std::string>().rfind(access, 0) == 0);
    }
  }
  return std::find(found.begin(), found.end(), false) == found.end();
}

}  // namespace gpurent::testing
