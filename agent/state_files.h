// The agent's state folder: what enrolment leaves there and the task journal, each file
// replaced whole (write, fsync, rename) so a crash leaves the old or the new, never half.
#pragma once

#include <sys/types.h>
#include <filesystem>
#include <stdexcept>
#include <string>

namespace gpurent::agent {

class StateError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct StatePaths {
  std::filesystem::path dir;

  std::filesystem::path key() const { return dir / "agent.key"; }          // 0600
  std::filesystem::path certificate() const { return dir / "agent.crt"; }  // the client's
  std::filesystem::path ca() const { return dir / "ca.crt"; }              // trusted alone
  std::filesystem::path node() const { return dir / "node.json"; }         // node id, URL
  std::filesystem::path task_journal() const { return dir / "tasks.json"; }
};

// Writes `path` through a temporary file beside it, with `mode`; throws StateError.
void write_file_atomic(const std::filesystem::path& path, const std::string& content, mode_t mode);
// The whole file; throws StateError naming it when it cannot be read.
std::string read_state_file(const std::filesystem::path& path);

}  // namespace gpurent::agent
