// A message from the other side that this side refuses: malformed JSON, a wrong type, a
// value out of range, an unknown member, an oversized field. `path` names where, as
// "heartbeat.gpus[3].temperature_c"; the receiver logs it and answers an error message,
// never crashes.
#pragma once

#include <stdexcept>
#include <string>

namespace gpurent::agent_proto {

class ProtocolError : public std::runtime_error {
 public:
  ProtocolError(std::string path, const std::string& reason)
      : std::runtime_error(path + ": " + reason), path_(std::move(path)) {}
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace gpurent::agent_proto
