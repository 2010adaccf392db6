// `gpurent-agent enroll`: trades the node's single-use enrolment token and a fresh CSR for a
// client certificate, and keeps what the channel needs in the state folder.
#pragma once

#include "agent/server_url.h"

#include <filesystem>
#include <stdexcept>
#include <string>

namespace gpurent::agent {

// Enrolment did not happen; one line for the operator (the server's own message when it
// refused: a used or unknown token is a 401).
class EnrollError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct EnrollOptions {
  ServerUrl url;
  std::string token;                // gpe_…
  std::filesystem::path ca_file;    // the agents' CA, trusted alone for the server
  std::filesystem::path state_dir;  // made 0700 when missing
};

// Writes agent.key (0600), agent.crt, ca.crt and node.json into the state folder and returns
// the node id. Throws EnrollError.
std::string enroll(const EnrollOptions& options);

}  // namespace gpurent::agent
