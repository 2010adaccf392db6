// `gpurent ssh`: a fresh ed25519 key made by the real ssh-keygen, a certificate for it from
// the API for this rental, the rental's served known_hosts, and the real ssh run with them.
#pragma once

#include "cli/commands.h"

#include <string>
#include <vector>

namespace gpurent::cli {

int run_ssh(CommandContext& ctx);

// The ssh command line for a rental's `ssh` details and the files in `dir`, with `extra`
// (options and a remote command) after the destination, where OpenSSH reads both.
std::vector<std::string> ssh_argv(const nlohmann::json& ssh, const std::string& dir,
                                  const std::vector<std::string>& extra);

// One argument quoted for a POSIX shell when it needs it.
std::string shell_quote(const std::string& arg);

}  // namespace gpurent::cli
