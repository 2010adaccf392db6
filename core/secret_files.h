// Files that hold the platform's private keys (the agents' CA, the SSH CA): read whole,
// written so that no reader sees half a file and a key is never readable by others even for a
// moment, refused when others can read them, and a folder lock for replicas that start
// together and would otherwise each make a key.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <string>

namespace gpurent {

// The whole file; std::runtime_error when it cannot be read.
std::string read_whole_file(const std::filesystem::path& path);

// Writes under a temporary name with `mode` from the start, then renames over `path`.
void write_file_atomically(const std::filesystem::path& path, const std::string& text, mode_t mode);

// std::runtime_error naming `what` when group or others may read or write the file, as
// OpenSSH refuses a private key with open permissions.
void require_owner_only(const std::filesystem::path& path, const std::string& what);

// An exclusive flock on `dir/.lock` (made 0600), held while the object lives.
class FolderLock {
 public:
  explicit FolderLock(const std::filesystem::path& dir);
  ~FolderLock();
  FolderLock(const FolderLock&) = delete;
  FolderLock& operator=(const FolderLock&) = delete;

 private:
  int fd_ = -1;
};

}  // namespace gpurent
