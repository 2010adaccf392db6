// Runs an external program (initdb, pg_ctl) and captures its output, optionally as another user.
#pragma once

#include <sys/types.h>
#include <optional>
#include <string>
#include <vector>

namespace gpurent {

struct RunAs {
  uid_t uid;
  gid_t gid;
};

struct SubprocessResult {
  int exit_code = -1;  // -1 when killed by a signal or not started
  std::string output;  // stdout and stderr together
};

// Runs argv[0] (looked up on PATH when it has no '/') to completion. When run_as is set,
// the child drops to that user and group before exec. Throws only when fork fails.
SubprocessResult run_subprocess(const std::vector<std::string>& argv,
                                const std::optional<RunAs>& run_as = std::nullopt,
                                const std::string& working_dir = "");

}  // namespace gpurent
