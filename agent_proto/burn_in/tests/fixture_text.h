// Reads a burn-in fixture (fixtures/<tool>/<file>) from the source tree.
#pragma once

#include "tests/support/paths.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace gpurent::burn_in::testing {

inline std::filesystem::path fixture_dir(const std::string& tool) {
  return std::filesystem::path(gpurent::testing::source_dir()) /
         "agent_proto/burn_in/tests/fixtures" / tool;
}

inline std::string read_fixture(const std::string& tool, const std::string& name) {
  std::ifstream in(fixture_dir(tool) / name, std::ios::binary);
  EXPECT_TRUE(in) << "missing fixture " << tool << "/" << name;
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

}  // namespace gpurent::burn_in::testing
