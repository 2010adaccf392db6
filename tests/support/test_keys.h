// SSH key pairs made by the real ssh-keygen once per test run, shared by every test process
// of the run: RSA 3072/4096 keys take seconds to make under load, and many tests need one.
#pragma once

#include <string>
#include <vector>

namespace gpurent::testing {

// The private key file of the pair `name` made by `ssh-keygen -q -N '' -f PATH args...`
// (the public half is PATH + ".pub"). The same name and arguments give the same pair for
// the whole run: CTest points GPURENT_TEST_CACHE at a folder in the build tree; a binary run
// by hand makes its keys once in a folder of its own, removed at exit. Safe to call from
// several processes and threads at once. Callers must not modify the files (copy them).
std::string ssh_key_pair(const std::string& name, const std::vector<std::string>& args);

}  // namespace gpurent::testing
