// The node's sshd host keys for the hello: the public halves sshd keeps beside its private
// keys (`ssh_host_ed25519_key.pub`, …). The platform shows their fingerprints with each
// rental, so engineers check the host they reach instead of trusting it on first use.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace gpurent::agent {

// The first line of every `ssh_host_*_key.pub` in `dir` (by file name) that a hello may
// carry (agent_proto::valid_ssh_host_key), at most agent_proto::kMaxSshHostKeys of them.
// Files that cannot be read or do not qualify are left out with a warning; a missing
// folder gives none.
std::vector<std::string> read_ssh_host_keys(const std::filesystem::path& dir);

}  // namespace gpurent::agent
