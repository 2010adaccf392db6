// The two certificate authorities' keys, backed up under a passphrase (docs/DEPLOYMENT.md,
// Backups): the agents' CA (agent_pki_dir: every node's client certificate chains to it) and
// the SSH CAs (ssh_ca_dir: every engineer's certificate and every node's host certificate
// are signed by them). Losing either cuts off every node or every engineer; a database
// backup does not hold them.
//
// The file: the line "gpurent key backup 1 scrypt ln=16", then base64 of salt (16 bytes) ||
// AES-256-GCM (nonce || ciphertext || tag) of a JSON list of the files, under a key derived
// from the passphrase with scrypt (N = 2^ln, r = 8, p = 1); the first line is the cipher's
// additional data, so a changed header fails like a changed body.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace gpurent::keys {

struct KeyFile {
  std::string folder;   // "agent_pki" or "ssh_ca"
  std::string name;     // a plain file name, no slash
  std::string content;  // as on disk
};

// A wrong passphrase, a damaged or altered file, or a folder in the way of a restore.
class KeyBackupError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Every regular file of the two folders (the lock files aside). Throws KeyBackupError when a
// folder is missing or holds no key: a backup of nothing is refused.
std::vector<KeyFile> collect(const std::string& agent_pki_dir, const std::string& ssh_ca_dir);

// The backup file's text. The passphrase must be at least 12 bytes (KeyBackupError).
// `log2_n`: scrypt's cost, 10 to 20; 16 (64 MiB, about half a second here) unless a test
// needs it cheap.
std::string seal(const std::vector<KeyFile>& files, std::string_view passphrase, int log2_n = 16);

// The files back; KeyBackupError when the passphrase is wrong or the text was changed.
std::vector<KeyFile> open(std::string_view text, std::string_view passphrase);

// Writes the files into the folders (made 0700 when missing; each file 0600, written whole
// then renamed into place). A file already there with other content is refused, naming it,
// unless `replace`: restoring over a CA that has signed since would cut off what it signed.
// Returns how many files were written (an identical file is left as it is).
int restore(const std::vector<KeyFile>& files, const std::string& agent_pki_dir,
            const std::string& ssh_ca_dir, bool replace);

}  // namespace gpurent::keys
