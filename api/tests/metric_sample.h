// Reading one sample out of a /metrics text, for the tests of what the collectors write.
#pragma once

#include <gtest/gtest.h>

#include <optional>
#include <sstream>
#include <string>

namespace gpurent::metric_sample {

// The value of the one sample line that starts with `series` followed by a space; a second
// such line fails the test.
inline std::optional<std::string> sample(const std::string& text, const std::string& series) {
  std::istringstream in(text);
  std::optional<std::string> found;
  for (std::string line; std::getline(in, line);) {
    if (line.size() > series.size() && line.compare(0, series.size(), series) == 0 &&
        line[series.size()] == ' ') {
      EXPECT_FALSE(found) << "two samples for " << series;
      found = line.substr(series.size() + 1);
    }
  }
  return found;
}

}  // namespace gpurent::metric_sample
