// Strict OpenSSH public key parsing: the text line, base64, and the wire format of each type
// (RFC 4253 §6.6, RFC 5656 §3.1, RFC 8709, OpenSSH PROTOCOL.u2f).
#include "identity/ssh_public_key.h"

#include "core/crypto.h"
#include "core/error.h"

#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/obj_mac.h>

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <vector>

namespace gpurent::identity {
namespace {

constexpr std::string_view kField = "public_key";
constexpr std::string_view kCertSuffix = "-cert-v01@openssh.com";
constexpr std::string_view kWhitespace = " \t\r\n\v\f";
constexpr std::string_view kSeparators = " \t";

[[noreturn]] void reject(std::string_view reason) {
  throw Error::invalid_field(kField, reason);
}

// ---- Key types ----

enum class KeyKind { kEd25519, kEcdsa, kSkEd25519, kSkEcdsa, kRsa };

struct KeyType {
  std::string_view name;
  KeyKind kind;
  std::string_view curve;  // the curve identifier inside ECDSA blobs
  int curve_nid;           // the same curve for OpenSSL
  int bits;                // fixed size; 0 for RSA, whose size comes from the modulus
};

constexpr std::array<KeyType, 7> kKeyTypes{{
    {"ssh-ed25519", KeyKind::kEd25519, "", NID_undef, 256},
    {"ecdsa-sha2-nistp256", KeyKind::kEcdsa, "nistp256", NID_X9_62_prime256v1, 256},
    {"ecdsa-sha2-nistp384", KeyKind::kEcdsa, "nistp384", NID_secp384r1, 384},
    {"ecdsa-sha2-nistp521", KeyKind::kEcdsa, "nistp521", NID_secp521r1, 521},
    {"sk-ssh-ed25519@openssh.com", KeyKind::kSkEd25519, "", NID_undef, 256},
    {"sk-ecdsa-sha2-nistp256@openssh.com", KeyKind::kSkEcdsa, "nistp256", NID_X9_62_prime256v1,
     256},
    {"ssh-rsa", KeyKind::kRsa, "", NID_undef, 0},
}};

constexpr std::string_view kSupportedTypes =
    "ssh-ed25519, ecdsa-sha2-nistp256, ecdsa-sha2-nistp384, ecdsa-sha2-nistp521, "
    "sk-ssh-ed25519@openssh.com, sk-ecdsa-sha2-nistp256@openssh.com or ssh-rsa of at least "
    "3072 bits";

// The authorized_keys options sshd(8) knows, space-separated; a line starting with one is not
// a bare key.
constexpr std::string_view kAuthorizedKeysOptions =
    " agent-forwarding cert-authority command environment expiry-time from no-agent-forwarding"
    " no-port-forwarding no-pty no-touch-required no-user-rc no-x11-forwarding permitlisten"
    " permitopen port-forwarding principals pty restrict tunnel user-rc verify-required"
    " x11-forwarding ";

const KeyType* find_key_type(std::string_view name) {
  for (const auto& t : kKeyTypes) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

// Any name OpenSSH would read as a key type, accepted here or not; used to tell options and
// second keys apart from comments.
bool is_key_type_name(std::string_view token) {
  return find_key_type(token) != nullptr || token == "ssh-dss" || token.ends_with(kCertSuffix);
}

bool is_option_token(std::string_view token) {
  if (token.find_first_of("=,\"") != std::string_view::npos) return true;
  std::string word = " ";
  for (char c : token) word += (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
  word += " ";
  return kAuthorizedKeysOptions.find(word) != std::string_view::npos;
}

// A type name is repeated in an error only when it cannot be anything else: short and made
// of the characters key type names use. Key material never fits (base64 has '+', '/', '=').
std::string quoted_if_plain(std::string_view name) {
  if (name.empty() || name.size() > 64) return "";
  for (char c : name) {
    bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                 c == '-' || c == '.' || c == '@' || c == '_';
    if (!plain) return "";
  }
  return " '" + std::string(name) + "'";
}

// ---- Text helpers ----

std::string_view trim(std::string_view s, std::string_view chars) {
  auto first = s.find_first_not_of(chars);
  if (first == std::string_view::npos) return {};
  auto last = s.find_last_not_of(chars);
  return s.substr(first, last - first + 1);
}

std::vector<std::string_view> split_tokens(std::string_view s) {
  std::vector<std::string_view> tokens;
  std::size_t pos = 0;
  while (pos < s.size()) {
    auto start = s.find_first_not_of(kSeparators, pos);
    if (start == std::string_view::npos) break;
    auto end = s.find_first_of(kSeparators, start);
    if (end == std::string_view::npos) end = s.size();
    tokens.push_back(s.substr(start, end - start));
    pos = end;
  }
  return tokens;
}

// Valid UTF-8 (no overlong forms, surrogates or values past U+10FFFF) without control
// characters: C0, DEL, C1, and the bidirectional controls that make a comment display as
// something other than what it is.
bool is_printable_utf8(std::string_view s) {
  static constexpr std::uint32_t kMinForLength[] = {0, 0, 0x80, 0x800, 0x10000};
  std::size_t i = 0;
  while (i < s.size()) {
    auto lead = static_cast<unsigned char>(s[i]);
    std::uint32_t cp = 0;
    std::size_t len = 0;
    if (lead < 0x80) {
      cp = lead;
      len = 1;
    } else if ((lead & 0xE0) == 0xC0) {
      cp = lead & 0x1F;
      len = 2;
    } else if ((lead & 0xF0) == 0xE0) {
      cp = lead & 0x0F;
      len = 3;
    } else if ((lead & 0xF8) == 0xF0) {
      cp = lead & 0x07;
      len = 4;
    } else {
      return false;
    }
    if (len > s.size() - i) return false;
    for (std::size_t k = 1; k < len; ++k) {
      auto cont = static_cast<unsigned char>(s[i + k]);
      if ((cont & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (cont & 0x3F);
    }
    if (cp < kMinForLength[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    if (cp < 0x20 || (cp >= 0x7F && cp <= 0x9F)) return false;
    if (cp == 0x061C || cp == 0x200E || cp == 0x200F || (cp >= 0x202A && cp <= 0x202E) ||
        (cp >= 0x2066 && cp <= 0x2069)) {
      return false;
    }
    i += len;
  }
  return true;
}

// ---- Base64 ----

int base64_value(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

// Standard base64 with '=' padding, strictly: no whitespace or other characters, padding
// only at the end and only as much as needed, and zero bits in the unused part of the last
// character, so every byte string has exactly one accepted encoding (as OpenSSH's b64_pton).
std::optional<std::string> decode_base64_strict(std::string_view in) {
  if (in.empty() || in.size() % 4 != 0) return std::nullopt;
  std::size_t pad = 0;
  if (in.back() == '=') pad = in[in.size() - 2] == '=' ? 2 : 1;
  std::string out;
  out.reserve(in.size() / 4 * 3);
  for (std::size_t i = 0; i < in.size(); i += 4) {
    bool last = i + 4 == in.size();
    std::size_t data_chars = last ? 4 - pad : 4;
    std::uint32_t group = 0;
    for (std::size_t j = 0; j < 4; ++j) {
      int v = 0;
      if (j < data_chars) {
        v = base64_value(in[i + j]);
        if (v < 0) return std::nullopt;
      }
      group = (group << 6) | static_cast<std::uint32_t>(v);
    }
    if (pad == 2 && last && (group & 0xFFFF) != 0) return std::nullopt;
    if (pad == 1 && last && (group & 0xFF) != 0) return std::nullopt;
    out.push_back(static_cast<char>(group >> 16));
    if (data_chars >= 3) out.push_back(static_cast<char>((group >> 8) & 0xFF));
    if (data_chars == 4) out.push_back(static_cast<char>(group & 0xFF));
  }
  return out;
}

// ---- Wire format ----

// Reads the uint32-length-prefixed strings of an SSH wire blob (RFC 4251 §5).
class WireReader {
 public:
  explicit WireReader(std::string_view data) : rest_(data) {}

  std::string_view string() {
    if (rest_.size() < 4) reject("has key data that ends early (truncated)");
    std::uint32_t len = 0;
    for (int i = 0; i < 4; ++i) len = (len << 8) | static_cast<unsigned char>(rest_[i]);
    rest_.remove_prefix(4);
    if (len > rest_.size()) reject("has key data that ends early (truncated)");
    auto s = rest_.substr(0, len);
    rest_.remove_prefix(len);
    return s;
  }

  void expect_end() const {
    if (!rest_.empty()) reject("has unexpected bytes after the key data");
  }

 private:
  std::string_view rest_;
};

// The magnitude of a positive mpint (RFC 4251 §5) without its sign byte; rejects zero,
// negative values and needless leading zero bytes.
std::string_view positive_mpint(std::string_view m) {
  constexpr std::string_view kBad = "has an RSA value that is not a valid positive integer";
  if (m.empty()) reject(kBad);
  auto first = static_cast<unsigned char>(m[0]);
  if (first & 0x80) reject(kBad);
  if (first == 0) {
    if (m.size() == 1 || !(static_cast<unsigned char>(m[1]) & 0x80)) reject(kBad);
    m.remove_prefix(1);
  }
  return m;
}

int bit_length(std::string_view magnitude) {
  auto top = static_cast<unsigned char>(magnitude[0]);
  int top_bits = 0;
  while (top) {
    ++top_bits;
    top >>= 1;
  }
  return static_cast<int>((magnitude.size() - 1) * 8) + top_bits;
}

// The point is uncompressed (0x04 || x || y), has coordinates below the field prime and lies
// on the curve: OpenSSH refuses anything else, so such a key could never log in.
void check_ec_point(const KeyType& type, std::string_view point) {
  constexpr std::string_view kBad =
      "has an ECDSA public key that is not a valid uncompressed point on its curve";
  auto coordinate_bytes = static_cast<std::size_t>((type.bits + 7) / 8);
  if (point.size() != 1 + 2 * coordinate_bytes || static_cast<unsigned char>(point[0]) != 0x04) {
    reject(kBad);
  }
  std::unique_ptr<EC_GROUP, decltype(&EC_GROUP_free)> group(
      EC_GROUP_new_by_curve_name(type.curve_nid), &EC_GROUP_free);
  if (!group) throw std::runtime_error("EC_GROUP_new_by_curve_name failed");
  std::unique_ptr<EC_POINT, decltype(&EC_POINT_free)> p(EC_POINT_new(group.get()), &EC_POINT_free);
  if (!p) throw std::runtime_error("EC_POINT_new failed");
  bool valid =
      EC_POINT_oct2point(group.get(), p.get(), reinterpret_cast<const unsigned char*>(point.data()),
                         point.size(), nullptr) == 1 &&
      EC_POINT_is_at_infinity(group.get(), p.get()) == 0 &&
      EC_POINT_is_on_curve(group.get(), p.get(), nullptr) == 1;
  ERR_clear_error();  // a refused point leaves errors on this thread's OpenSSL queue
  if (!valid) reject(kBad);
}

void check_sk_application(std::string_view application) {
  if (application.empty() || application.find('\0') != std::string_view::npos) {
    reject("has a security-key application string that is empty or invalid");
  }
}

// Checks the blob against its type and returns the key size in bits.
int parse_blob(const KeyType& type, std::string_view blob) {
  WireReader reader(blob);
  auto blob_type = reader.string();
  if (blob_type != type.name) {
    auto inner = quoted_if_plain(blob_type);
    reject("says its type is '" + std::string(type.name) + "' but its key data is " +
           (inner.empty() ? std::string("of another type") : "of type" + inner));
  }
  int bits = type.bits;
  switch (type.kind) {
    case KeyKind::kEd25519:
    case KeyKind::kSkEd25519:
      if (reader.string().size() != 32) reject("has an Ed25519 public key that is not 32 bytes");
      if (type.kind == KeyKind::kSkEd25519) check_sk_application(reader.string());
      break;
    case KeyKind::kEcdsa:
    case KeyKind::kSkEcdsa:
      if (reader.string() != type.curve) {
        reject("has key data for a different curve than its type '" + std::string(type.name) + "'");
      }
      check_ec_point(type, reader.string());
      if (type.kind == KeyKind::kSkEcdsa) check_sk_application(reader.string());
      break;
    case KeyKind::kRsa: {
      auto e = positive_mpint(reader.string());
      auto n = positive_mpint(reader.string());
      bool e_odd = static_cast<unsigned char>(e.back()) & 1;
      bool e_small = e.size() == 1 && static_cast<unsigned char>(e[0]) < 3;
      if (!e_odd || e_small) reject("has an RSA public exponent that is not odd and at least 3");
      if (!(static_cast<unsigned char>(n.back()) & 1)) reject("has an RSA modulus that is even");
      bits = bit_length(n);
      if (bits > kMaxRsaBits) {
        reject("is an RSA key larger than " + std::to_string(kMaxRsaBits) +
               " bits, which OpenSSH does not support");
      }
      if (bits < kMinRsaBits) {
        reject("is a " + std::to_string(bits) + "-bit RSA key; RSA keys must be at least " +
               std::to_string(kMinRsaBits) + " bits (or use ssh-keygen -t ed25519)");
      }
      break;
    }
  }
  reader.expect_end();
  return bits;
}

// ---- Text that is not a one-line public key ----

bool looks_like_private_key(std::string_view text) {
  // Every PEM private key label ends so: OPENSSH, RSA, EC, DSA, plain and ENCRYPTED PKCS#8.
  return text.find("PRIVATE KEY-----") != std::string_view::npos ||
         text.find("PuTTY-User-Key-File") != std::string_view::npos;
}

void reject_other_formats(std::string_view text) {
  if (text.find("BEGIN SSH2 PUBLIC KEY") != std::string_view::npos) {
    reject(
        "is in the SSH2 (RFC 4716) format; convert it with ssh-keygen -i -f FILE and paste "
        "the one-line result");
  }
  if (text.starts_with("-----BEGIN ") && text.find("PUBLIC KEY-----") != std::string_view::npos) {
    reject(
        "is a PEM public key; convert it with ssh-keygen -i -m PKCS8 -f FILE and paste the "
        "one-line result");
  }
}

// The first token is not a supported type: say what the line is instead.
[[noreturn]] void reject_type(const std::vector<std::string_view>& tokens) {
  auto type = tokens[0];
  if (type == "ssh-dss") {
    reject("is a DSA (ssh-dss) key, which is no longer secure; use ssh-keygen -t ed25519");
  }
  if (type.ends_with(kCertSuffix)) {
    reject("is an SSH certificate; paste the plain public key (the .pub file) instead");
  }
  bool key_later = false;
  for (std::size_t i = 1; i < tokens.size() && !key_later; ++i) {
    key_later = is_key_type_name(tokens[i]);
  }
  if (key_later || is_option_token(type)) {
    reject(
        "starts with authorized_keys options; paste only the key (type, key data and optional "
        "comment)");
  }
  if (type.starts_with("AAAA")) reject("must start with the key type, e.g. ssh-ed25519");
  reject("has unsupported key type" + quoted_if_plain(type) + "; use " +
         std::string(kSupportedTypes));
}

void check_comment(std::string_view comment) {
  if (comment.size() > kMaxSshPublicKeyCommentBytes) {
    reject("has a comment longer than " + std::to_string(kMaxSshPublicKeyCommentBytes) + " bytes");
  }
  if (!is_printable_utf8(comment)) {
    reject("has a comment with control characters or invalid UTF-8; use printable text only");
  }
  // A second key pasted on the same line would otherwise pass as the first key's comment.
  auto tokens = split_tokens(comment);
  for (std::size_t i = 0; i + 1 < tokens.size(); ++i) {
    if (is_key_type_name(tokens[i]) && tokens[i + 1].starts_with("AAAA")) {
      reject("contains more than one key; paste a single public key");
    }
  }
}

}  // namespace

std::string ssh_base64(std::string_view data) {
  return crypto::base64(data);
}

std::string ssh_fingerprint(std::string_view blob) {
  std::string hex = crypto::sha256_hex(blob);
  std::string digest;
  digest.reserve(hex.size() / 2);
  auto nibble = [](char c) { return c <= '9' ? c - '0' : c - 'a' + 10; };
  for (std::size_t i = 0; i + 1 < hex.size(); i += 2) {
    digest.push_back(static_cast<char>((nibble(hex[i]) << 4) | nibble(hex[i + 1])));
  }
  std::string b64 = ssh_base64(digest);
  while (!b64.empty() && b64.back() == '=') b64.pop_back();
  return "SHA256:" + b64;
}

std::string SshPublicKey::canonical() const {
  std::string line = type + " " + ssh_base64(blob);
  if (!comment.empty()) line += " " + comment;
  return line;
}

SshPublicKey parse_ssh_public_key(std::string_view text) {
  // Before anything else, and whatever the size: the one mistake that leaks a secret.
  if (looks_like_private_key(text)) {
    reject(
        "is a private key, which must stay secret; paste the public key (the contents of the "
        ".pub file) instead");
  }
  if (text.size() > kMaxSshPublicKeyTextBytes) {
    reject("is longer than 16 KiB; paste a single public key");
  }
  auto line = trim(text, kWhitespace);
  if (line.empty()) reject("is empty; paste a public key (the contents of the .pub file)");
  reject_other_formats(line);
  if (line.find_first_of("\r\n") != std::string_view::npos) {
    reject("must be a single public key on one line");
  }

  auto tokens = split_tokens(line);
  const KeyType* type = find_key_type(tokens[0]);
  if (!type) reject_type(tokens);
  if (tokens.size() < 2) reject("has no key data after the key type");
  auto decoded = decode_base64_strict(tokens[1]);
  if (!decoded) reject("has key data that is not valid base64");

  SshPublicKey key;
  key.type = std::string(type->name);
  key.bits = parse_blob(*type, *decoded);
  key.blob = std::move(*decoded);
  auto base64_end = static_cast<std::size_t>(tokens[1].data() + tokens[1].size() - line.data());
  auto comment = trim(line.substr(base64_end), kWhitespace);
  check_comment(comment);
  key.comment = std::string(comment);
  key.fingerprint = ssh_fingerprint(key.blob);
  return key;
}

}  // namespace gpurent::identity
