// Parses and validates the OpenSSH public keys customers register for their engineers.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace gpurent::identity {

// Limits on what a customer may paste; larger input is refused before it is parsed.
inline constexpr std::size_t kMaxSshPublicKeyTextBytes = 16 * 1024;
inline constexpr std::size_t kMaxSshPublicKeyCommentBytes = 255;
// RSA below this is refused (NIST SP 800-57: 3072 bits for security beyond 2030).
inline constexpr int kMinRsaBits = 3072;
// OpenSSH itself refuses larger RSA moduli (SSHBUF_MAX_BIGNUM).
inline constexpr int kMaxRsaBits = 16384;

struct SshPublicKey {
  std::string type;     // "ssh-ed25519", "ecdsa-sha2-nistp256", ..., as in the key's wire blob
  std::string blob;     // the raw decoded wire-format bytes
  std::string comment;  // may be empty
  int bits = 0;         // 256 for ed25519/sk-ed25519, 256/384/521 for ecdsa, modulus bits for RSA
  std::string fingerprint;  // "SHA256:" + unpadded base64 of SHA-256(blob), as `ssh-keygen -lf`
  // "type base64(blob)[ comment]": one line, single spaces, as an authorized_keys entry.
  std::string canonical() const;
};

// Parses one OpenSSH public key line ("type base64 [comment]"). Accepts ssh-ed25519,
// ecdsa-sha2-nistp256/384/521, sk-ssh-ed25519@openssh.com, sk-ecdsa-sha2-nistp256@openssh.com
// and ssh-rsa of at least kMinRsaBits. Throws gpurent::Error (kInvalidRequest, field
// "public_key") with a sentence saying what is wrong; the error never repeats key material.
SshPublicKey parse_ssh_public_key(std::string_view text);

// Standard base64 with '=' padding, as OpenSSH writes key and certificate blobs.
std::string ssh_base64(std::string_view data);
// "SHA256:" and the blob's digest in base64 without padding, as `ssh-keygen -l` prints it.
std::string ssh_fingerprint(std::string_view blob);

}  // namespace gpurent::identity
