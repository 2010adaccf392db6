// read_ssh_host_keys: a directory listing, first lines, the protocol's own check.
#include "agent/host_keys.h"

#include "agent_proto/messages.h"
#include "core/log.h"

#include <algorithm>
#include <fstream>

namespace gpurent::agent {

namespace fs = std::filesystem;

std::vector<std::string> read_ssh_host_keys(const fs::path& dir) {
  std::vector<fs::path> files;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    std::string name = entry.path().filename().string();
    if (name.rfind("ssh_host_", 0) == 0 && name.size() > 12 &&
        name.compare(name.size() - 8, 8, "_key.pub") == 0) {
      files.push_back(entry.path());
    }
  }
  std::sort(files.begin(), files.end());
  std::vector<std::string> out;
  for (const auto& file : files) {
    std::ifstream in(file);
    std::string line;
    std::getline(in, line);
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
    if (!agent_proto::valid_ssh_host_key(line)) {
      log::warn("{} is not an SSH host key the platform takes; left out of the hello",
                file.string());
      continue;
    }
    if (out.size() == agent_proto::kMaxSshHostKeys) {
      log::warn("more than {} SSH host keys; {} left out", agent_proto::kMaxSshHostKeys,
                file.string());
      continue;
    }
    out.push_back(line);
  }
  return out;
}

}  // namespace gpurent::agent
