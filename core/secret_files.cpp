// POSIX files for private keys: rename(2) for atomic replacement, flock(2) between replicas.
#include "core/secret_files.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <stdexcept>

namespace gpurent {

std::string read_whole_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path.string());
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

void write_file_atomically(const std::filesystem::path& path, const std::string& text,
                           mode_t mode) {
  std::filesystem::path tmp = path;
  tmp += ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  if (fd < 0) throw std::runtime_error("cannot write " + tmp.string());
  // The mode of a file that existed already (a leftover .tmp) is set too.
  bool written = ::fchmod(fd, mode) == 0 &&
                 ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ::close(fd);
  if (!written) throw std::runtime_error("cannot write " + tmp.string());
  std::filesystem::rename(tmp, path);
}

void require_owner_only(const std::filesystem::path& path, const std::string& what) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) throw std::runtime_error("cannot stat " + path.string());
  if ((st.st_mode & 077) != 0) {
    throw std::runtime_error(what + " " + path.string() +
                             " is readable by others; chmod 600 it before starting");
  }
}

FolderLock::FolderLock(const std::filesystem::path& dir)
    : fd_(::open((dir / ".lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600)) {
  if (fd_ < 0 || ::flock(fd_, LOCK_EX) != 0) {
    if (fd_ >= 0) ::close(fd_);
    throw std::runtime_error("cannot lock the folder " + dir.string());
  }
}

FolderLock::~FolderLock() {
  ::close(fd_);  // releases the flock
}

}  // namespace gpurent
