// ssh_key_pair: a folder per pair, made aside and renamed into place, so concurrent makers
// of the same pair never see half a key and the first one to finish wins.
#include "tests/support/test_keys.h"

#include "core/subprocess.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <stdexcept>

namespace gpurent::testing {
namespace {

namespace fs = std::filesystem;

// FNV-1a: a stable name for the argument list, the same in every process.
std::string args_digest(const std::vector<std::string>& args) {
  std::uint64_t h = 1469598103934665603ULL;
  for (const auto& a : args) {
    for (unsigned char c : a + '\0') {
      h ^= c;
      h *= 1099511628211ULL;
    }
  }
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
  return hex;
}

// A per-process folder when no run-wide one is given; removed at exit.
class OwnFolder {
 public:
  OwnFolder() {
    std::string pattern = (fs::temp_directory_path() / "gpurent-test-keys-XXXXXX").string();
    if (!mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp failed");
    path_ = pattern;
  }
  ~OwnFolder() {
    std::error_code ignored;
    fs::remove_all(path_, ignored);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

fs::path cache_dir() {
  if (const char* dir = std::getenv("GPURENT_TEST_CACHE"); dir && *dir) {
    fs::path keys = fs::path(dir) / "ssh-keys";
    fs::create_directories(keys);
    return keys;
  }
  static OwnFolder own;
  return own.path();
}

std::mutex g_mutex;

}  // namespace

std::string ssh_key_pair(const std::string& name, const std::vector<std::string>& args) {
  std::lock_guard lock(g_mutex);
  fs::path dir = cache_dir();
  fs::path pair = dir / (name + "-" + args_digest(args));
  fs::path key = pair / "key";
  if (fs::exists(key.string() + ".pub")) return key.string();

  std::string scratch = (dir / (".making-" + name + "-XXXXXX")).string();
  if (!mkdtemp(scratch.data())) throw std::runtime_error("mkdtemp failed in " + dir.string());
  std::vector<std::string> argv{"ssh-keygen", "-q", "-N", "", "-f", scratch + "/key"};
  argv.insert(argv.end(), args.begin(), args.end());
  auto made = run_subprocess(argv);
  if (made.exit_code != 0) {
    fs::remove_all(scratch);
    throw std::runtime_error("ssh-keygen failed for " + name + ": " + made.output);
  }
  chmod(scratch.c_str(), 0755);
  if (::rename(scratch.c_str(), pair.c_str()) != 0) {
    // Another process made the same pair first; use theirs.
    fs::remove_all(scratch);
    if (!fs::exists(key.string() + ".pub")) {
      throw std::runtime_error("could not place the key pair " + pair.string());
    }
  }
  return key.string();
}

}  // namespace gpurent::testing
