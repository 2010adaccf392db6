// Where the source tree and the built gpurentd, gpurent-agent and gpurent-fleetsim are, for
// tests that read fixtures or start them. Defined in one generated source file
// (tests/support/CMakeLists.txt), so the absolute paths of a checkout reach no other
// translation unit and ccache hits across checkouts.
#pragma once

#include <string>

namespace gpurent::testing {

// The repository root, without a trailing slash.
const std::string& source_dir();
// The gpurentd binary of this build.
const std::string& gpurentd_path();
// The gpurent-agent binary of this build.
const std::string& agent_path();
// The gpurent-fleetsim binary of this build.
const std::string& fleetsim_path();

}  // namespace gpurent::testing
