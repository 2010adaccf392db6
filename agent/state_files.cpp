// Atomic replacement of state files.
#include "agent/state_files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace gpurent::agent {

namespace {

[[noreturn]] void fail_at(const std::string& what, const std::filesystem::path& path) {
  throw StateError(what + " " + path.string() + ": " + std::strerror(errno));
}

}  // namespace

void write_file_atomic(const std::filesystem::path& path, const std::string& content, mode_t mode) {
  std::filesystem::path tmp = path;
  tmp += ".tmp";
  // O_EXCL is not used: a temporary left by a crash is ours to replace.
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  if (fd < 0) fail_at("cannot create", tmp);
  // The mode of an existing temporary is not changed by open.
  if (::fchmod(fd, mode) != 0) {
    ::close(fd);
    fail_at("cannot set the mode of", tmp);
  }
  std::size_t written = 0;
  while (written < content.size()) {
    ssize_t n = ::write(fd, content.data() + written, content.size() - written);
    if (n < 0) {
      if (errno == EINTR) continue;
      ::close(fd);
      fail_at("cannot write", tmp);
    }
    written += static_cast<std::size_t>(n);
  }
  // Durable before the rename, so the name never points at a file the disk has not got.
  if (::fsync(fd) != 0) {
    ::close(fd);
    fail_at("cannot sync", tmp);
  }
  ::close(fd);
  if (::rename(tmp.c_str(), path.c_str()) != 0) fail_at("cannot rename into", path);
}

std::string read_state_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail_at("cannot read", path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace gpurent::agent
