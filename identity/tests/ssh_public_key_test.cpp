// Tests parse_ssh_public_key against keys and fingerprints from the real ssh-keygen, and every
// kind of input it must refuse: private keys, options, bad base64, malformed wire data.
#include "identity/ssh_public_key.h"

#include "core/crypto.h"
#include "core/error.h"
#include "core/subprocess.h"
#include "tests/support/test_keys.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>

namespace gpurent::identity {
namespace ssh_public_key_test {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

// ---- Helpers: files, processes, wire format ----

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

void write_file(const std::string& path, const std::string& content) {
  std::ofstream(path, std::ios::binary) << content;
}

std::string base64(std::string_view data) {
  std::string out(4 * ((data.size() + 2) / 3) + 1, '\0');
  int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(data.data()),
                          static_cast<int>(data.size()));
  out.resize(static_cast<std::size_t>(n));
  return out;
}

std::string random_string(std::size_t n) {
  auto bytes = crypto::random_bytes(n);
  return std::string(bytes.begin(), bytes.end());
}

// An SSH wire string: uint32 big-endian length, then the bytes.
std::string ssh_string(std::string_view s) {
  auto n = static_cast<std::uint32_t>(s.size());
  std::string out{static_cast<char>(n >> 24), static_cast<char>(n >> 16), static_cast<char>(n >> 8),
                  static_cast<char>(n)};
  out.append(s);
  return out;
}

// Splits a wire blob into its strings (the test's own reader, independent of the parser's).
std::vector<std::string> wire_strings(std::string_view blob) {
  std::vector<std::string> out;
  while (blob.size() >= 4) {
    std::uint32_t n = 0;
    for (int i = 0; i < 4; ++i) n = (n << 8) | static_cast<unsigned char>(blob[i]);
    blob.remove_prefix(4);
    if (n > blob.size()) break;
    out.emplace_back(blob.substr(0, n));
    blob.remove_prefix(n);
  }
  return out;
}

std::string trim_newline(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
  return s;
}

// A fresh uncompressed point on `curve` ("P-256", "P-384"), from OpenSSL.
std::string ec_point(const char* curve) {
  EVP_PKEY* pkey = EVP_EC_gen(curve);
  if (!pkey) throw std::runtime_error("EVP_EC_gen failed");
  unsigned char buf[256];
  std::size_t len = 0;
  int ok = EVP_PKEY_get_octet_string_param(pkey, OSSL_PKEY_PARAM_ENCODED_PUBLIC_KEY, buf,
                                           sizeof buf, &len);
  EVP_PKEY_free(pkey);
  if (ok != 1) throw std::runtime_error("EVP_PKEY_get_octet_string_param failed");
  return std::string(reinterpret_cast<char*>(buf), len);
}

// What `ssh-keygen -lf FILE` prints: "BITS SHA256:... COMMENT (TYPE)".
struct Listed {
  int exit_code = -1;
  int bits = 0;
  std::string fingerprint;
  std::string comment;
  std::string type;
};

Listed ssh_keygen_list(const std::string& path) {
  auto result = run_subprocess({"/usr/bin/ssh-keygen", "-lf", path});
  Listed listed;
  listed.exit_code = result.exit_code;
  if (result.exit_code != 0) return listed;
  std::string line = trim_newline(result.output);
  std::istringstream in(line);
  in >> listed.bits >> listed.fingerprint;
  auto open = line.rfind(" (");
  auto fp_end = line.find(listed.fingerprint) + listed.fingerprint.size();
  if (open == std::string::npos || line.back() != ')' || open < fp_end) {
    ADD_FAILURE() << "unexpected ssh-keygen -l output: " << result.output;
    return listed;
  }
  listed.type = line.substr(open + 2, line.size() - open - 3);
  listed.comment = open > fp_end ? line.substr(fp_end + 1, open - fp_end - 1) : "";
  if (listed.comment == "no comment") listed.comment.clear();
  return listed;
}

// Keys made with the real ssh-keygen (once per test run, see tests/support/test_keys.h), and
// a folder removed at exit for the copies and files a test writes.
class KeyFolder {
 public:
  static KeyFolder& instance() {
    static KeyFolder folder;
    return folder;
  }

  // The private key file `name`, made by `ssh-keygen -q -N '' -f PATH args...`.
  std::string private_key(const std::string& name, const std::vector<std::string>& args) {
    return gpurent::testing::ssh_key_pair(name, args);
  }

  // The public key file of `name` (made as by private_key).
  std::string public_key(const std::string& name, const std::vector<std::string>& args) {
    return private_key(name, args) + ".pub";
  }

  // A copy of private key `name` rewritten by `ssh-keygen -p` in another format
  // (-m PEM / PKCS8) and optionally under a passphrase.
  std::string converted(const std::string& name, const std::vector<std::string>& args,
                        const std::string& format, const std::string& passphrase = "") {
    std::string copy = dir_ + "/" + name + "_" + format + (passphrase.empty() ? "" : "_enc");
    std::filesystem::copy_file(private_key(name, args), copy,
                               std::filesystem::copy_options::overwrite_existing);
    auto result = run_subprocess(
        {"/usr/bin/ssh-keygen", "-p", "-q", "-P", "", "-N", passphrase, "-m", format, "-f", copy});
    if (result.exit_code != 0) throw std::runtime_error("ssh-keygen -p failed: " + result.output);
    return copy;
  }

  // Writes `content` to a file in the folder and returns its path.
  std::string write(const std::string& name, const std::string& content) {
    std::string path = dir_ + "/" + name;
    write_file(path, content);
    return path;
  }

 private:
  KeyFolder() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "gpurent_ssh_key_test_XXXXXX");
    if (!mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
    dir_ = tmpl;
  }
  ~KeyFolder() {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }

  std::string dir_;
};

const std::string kExponent65537("\x01\x00\x01", 3);

const std::vector<std::string> kEd25519 = {"-t", "ed25519", "-C", "alice@laptop"};
const std::vector<std::string> kEcdsa256 = {"-t", "ecdsa", "-b", "256", "-C", "ec256"};
const std::vector<std::string> kEcdsa384 = {"-t", "ecdsa", "-b", "384", "-C", "ec384"};
const std::vector<std::string> kEcdsa521 = {"-t", "ecdsa", "-b", "521", "-C", "ec521"};
const std::vector<std::string> kRsa3072 = {"-t", "rsa", "-b", "3072", "-C", "rsa 3072 key"};
const std::vector<std::string> kRsa4096 = {"-t", "rsa", "-b", "4096", "-C", "rsa4096"};
const std::vector<std::string> kRsa2048 = {"-t", "rsa", "-b", "2048", "-C", "rsa2048"};

std::string key_line(const std::string& name, const std::vector<std::string>& args) {
  return read_file(KeyFolder::instance().public_key(name, args));
}

// The ed25519 key's blob, for tests that alter it.
std::string ed25519_blob() {
  return parse_ssh_public_key(key_line("ed25519", kEd25519)).blob;
}

// Parses `text`, expects the refusal, and returns the error for further checks.
Error expect_rejected(std::string_view text, std::string_view reason_part) {
  try {
    auto key = parse_ssh_public_key(text);
    ADD_FAILURE() << "accepted: " << key.canonical();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidRequest);
    EXPECT_EQ(e.details().value("field", ""), "public_key");
    EXPECT_THAT(e.details().value("reason", ""), HasSubstr(std::string(reason_part)));
    EXPECT_THAT(e.what(), HasSubstr(std::string(reason_part)));
    return e;
  }
  return Error(ErrorCode::kInternal, "not rejected");
}

// Parses the .pub file and checks every field against what ssh-keygen -lf says of it.
void expect_matches_ssh_keygen(const std::string& pub_path, const std::string& type,
                               int expected_bits) {
  SCOPED_TRACE(pub_path);
  std::string text = read_file(pub_path);
  auto key = parse_ssh_public_key(text);
  auto listed = ssh_keygen_list(pub_path);
  ASSERT_EQ(listed.exit_code, 0);
  EXPECT_EQ(key.type, type);
  EXPECT_EQ(key.bits, expected_bits);
  EXPECT_EQ(key.bits, listed.bits);
  EXPECT_EQ(key.fingerprint, listed.fingerprint);
  EXPECT_EQ(key.comment, listed.comment);
  EXPECT_EQ(key.canonical(), trim_newline(text));
}

// ---- Keys ssh-keygen makes ----

TEST(SshPublicKey, ParsesEd25519LikeSshKeygen) {
  expect_matches_ssh_keygen(KeyFolder::instance().public_key("ed25519", kEd25519), "ssh-ed25519",
                            256);
  auto key = parse_ssh_public_key(key_line("ed25519", kEd25519));
  EXPECT_EQ(key.comment, "alice@laptop");
  EXPECT_EQ(key.fingerprint.rfind("SHA256:", 0), 0u);
  EXPECT_EQ(key.fingerprint.size(), 7u + 43u);  // 32 bytes in unpadded base64
}

TEST(SshPublicKey, ParsesEcdsaOfEachCurveLikeSshKeygen) {
  auto& keys = KeyFolder::instance();
  expect_matches_ssh_keygen(keys.public_key("ecdsa256", kEcdsa256), "ecdsa-sha2-nistp256", 256);
  expect_matches_ssh_keygen(keys.public_key("ecdsa384", kEcdsa384), "ecdsa-sha2-nistp384", 384);
  expect_matches_ssh_keygen(keys.public_key("ecdsa521", kEcdsa521), "ecdsa-sha2-nistp521", 521);
}

TEST(SshPublicKey, ParsesRsa3072And4096LikeSshKeygen) {
  auto& keys = KeyFolder::instance();
  expect_matches_ssh_keygen(keys.public_key("rsa3072", kRsa3072), "ssh-rsa", 3072);
  expect_matches_ssh_keygen(keys.public_key("rsa4096", kRsa4096), "ssh-rsa", 4096);
  EXPECT_EQ(parse_ssh_public_key(key_line("rsa3072", kRsa3072)).comment, "rsa 3072 key");
}

TEST(SshPublicKey, RejectsRsaBelow3072BitsSayingTheMinimum) {
  auto e = expect_rejected(key_line("rsa2048", kRsa2048), "at least 3072 bits");
  EXPECT_THAT(e.what(), HasSubstr("2048-bit"));
}

TEST(SshPublicKey, RsaBitsAreTheModulusBitLengthAsSshKeygenCountsThem) {
  // Moduli of odd sizes (not real RSA keys, but ssh-keygen -l only reads them) check the
  // bit count and the limits at their edges.
  auto& keys = KeyFolder::instance();
  auto rsa_line = [](int bits) {
    std::string n = random_string(static_cast<std::size_t>((bits + 7) / 8));
    int top_bits = bits % 8 == 0 ? 8 : bits % 8;
    n[0] = static_cast<char>((static_cast<unsigned char>(n[0]) | 0x80) >> (8 - top_bits));
    n.back() = static_cast<char>(n.back() | 1);
    if (static_cast<unsigned char>(n[0]) & 0x80) n.insert(n.begin(), '\0');
    return "ssh-rsa " + base64(ssh_string("ssh-rsa") + ssh_string(kExponent65537) + ssh_string(n));
  };
  for (int bits : {3072, 3073, 3079, 3080, 8191, 16384}) {
    SCOPED_TRACE(bits);
    auto path = keys.write("rsa_fake_" + std::to_string(bits) + ".pub", rsa_line(bits) + "\n");
    expect_matches_ssh_keygen(path, "ssh-rsa", bits);
  }
  expect_rejected(rsa_line(3071), "3071-bit RSA key");
  expect_rejected(rsa_line(16385), "larger than 16384 bits");
}

// ---- Security keys, built by hand (generating them needs hardware) ----

TEST(SshPublicKey, ParsesSecurityKeyEd25519LikeSshKeygen) {
  std::string blob =
      ssh_string("sk-ssh-ed25519@openssh.com") + ssh_string(random_string(32)) + ssh_string("ssh:");
  auto path = KeyFolder::instance().write(
      "sk_ed25519.pub", "sk-ssh-ed25519@openssh.com " + base64(blob) + " yubikey 5\n");
  expect_matches_ssh_keygen(path, "sk-ssh-ed25519@openssh.com", 256);
  EXPECT_EQ(ssh_keygen_list(path).type, "ED25519-SK");
  EXPECT_EQ(parse_ssh_public_key(read_file(path)).blob, blob);
}

TEST(SshPublicKey, ParsesSecurityKeyEcdsaLikeSshKeygen) {
  std::string point = ec_point("P-256");
  ASSERT_EQ(point.size(), 65u);
  std::string blob = ssh_string("sk-ecdsa-sha2-nistp256@openssh.com") + ssh_string("nistp256") +
                     ssh_string(point) + ssh_string("ssh:");
  auto path = KeyFolder::instance().write(
      "sk_ecdsa.pub", "sk-ecdsa-sha2-nistp256@openssh.com " + base64(blob) + "\n");
  expect_matches_ssh_keygen(path, "sk-ecdsa-sha2-nistp256@openssh.com", 256);
  EXPECT_EQ(ssh_keygen_list(path).type, "ECDSA-SK");
  EXPECT_EQ(parse_ssh_public_key(read_file(path)).comment, "");
}

TEST(SshPublicKey, RejectsSecurityKeysWithoutAnApplication) {
  std::string pk = random_string(32);
  expect_rejected("sk-ssh-ed25519@openssh.com " +
                      base64(ssh_string("sk-ssh-ed25519@openssh.com") + ssh_string(pk)),
                  "truncated");
  expect_rejected("sk-ssh-ed25519@openssh.com " + base64(ssh_string("sk-ssh-ed25519@openssh.com") +
                                                         ssh_string(pk) + ssh_string("")),
                  "application");
  expect_rejected("sk-ssh-ed25519@openssh.com " +
                      base64(ssh_string("sk-ssh-ed25519@openssh.com") + ssh_string(pk) +
                             ssh_string(std::string("ssh:\0x", 6))),
                  "application");
  expect_rejected("sk-ecdsa-sha2-nistp256@openssh.com " +
                      base64(ssh_string("sk-ecdsa-sha2-nistp256@openssh.com") +
                             ssh_string("nistp256") + ssh_string(ec_point("P-256"))),
                  "truncated");
}

// ---- ECDSA points and curves ----

TEST(SshPublicKey, RejectsPointsOffTheCurveAsSshKeygenDoes) {
  auto& keys = KeyFolder::instance();
  std::string off_curve = "\x04" + random_string(64);
  for (std::string type : {"ecdsa-sha2-nistp256", "sk-ecdsa-sha2-nistp256@openssh.com"}) {
    SCOPED_TRACE(type);
    std::string blob = ssh_string(type) + ssh_string("nistp256") + ssh_string(off_curve);
    if (type.starts_with("sk-")) blob += ssh_string("ssh:");
    std::string line = type + " " + base64(blob);
    expect_rejected(line, "not a valid uncompressed point");
    EXPECT_NE(ssh_keygen_list(keys.write("off_curve.pub", line + "\n")).exit_code, 0);
  }
}

TEST(SshPublicKey, RejectsCompressedOrMisSizedPoints) {
  std::string point = ec_point("P-256");
  auto line = [](const std::string& p) {
    return "ecdsa-sha2-nistp256 " +
           base64(ssh_string("ecdsa-sha2-nistp256") + ssh_string("nistp256") + ssh_string(p));
  };
  EXPECT_NO_THROW(parse_ssh_public_key(line(point)));
  std::string compressed = point.substr(0, 33);
  compressed[0] = static_cast<char>(0x02 + (point[64] & 1));
  expect_rejected(line(compressed), "uncompressed point");
  std::string wrong_prefix = point;
  wrong_prefix[0] = 0x06;  // the "hybrid" encoding OpenSSH does not accept
  expect_rejected(line(wrong_prefix), "uncompressed point");
  expect_rejected(line(point.substr(0, 64)), "uncompressed point");
  expect_rejected(line(point + std::string(1, '\0')), "uncompressed point");
  expect_rejected(line(std::string(1, '\0')), "uncompressed point");  // the point at infinity
  expect_rejected(line(ec_point("P-384")), "uncompressed point");
}

TEST(SshPublicKey, RejectsACurveIdentifierThatDoesNotMatchTheType) {
  std::string blob =
      ssh_string("ecdsa-sha2-nistp256") + ssh_string("nistp384") + ssh_string(ec_point("P-384"));
  expect_rejected("ecdsa-sha2-nistp256 " + base64(blob), "different curve");
  blob = ssh_string("sk-ecdsa-sha2-nistp256@openssh.com") + ssh_string("nistp521") +
         ssh_string(ec_point("P-256")) + ssh_string("ssh:");
  expect_rejected("sk-ecdsa-sha2-nistp256@openssh.com " + base64(blob), "different curve");
}

TEST(SshPublicKey, RejectsEd25519KeysOfTheWrongLength) {
  for (std::size_t n : {0, 31, 33, 64}) {
    SCOPED_TRACE(n);
    expect_rejected(
        "ssh-ed25519 " + base64(ssh_string("ssh-ed25519") + ssh_string(random_string(n))),
        "not 32 bytes");
  }
}

// ---- RSA wire rules ----

TEST(SshPublicKey, RejectsMalformedRsaIntegers) {
  auto fields = wire_strings(parse_ssh_public_key(key_line("rsa3072", kRsa3072)).blob);
  ASSERT_EQ(fields.size(), 3u);
  const std::string& e = fields[1];
  const std::string& n = fields[2];
  ASSERT_EQ(n[0], '\0');  // the modulus's top bit is set, so it carries a sign byte
  auto line = [](const std::string& e, const std::string& n) {
    return "ssh-rsa " + base64(ssh_string("ssh-rsa") + ssh_string(e) + ssh_string(n));
  };
  EXPECT_EQ(parse_ssh_public_key(line(e, n)).bits, 3072);

  expect_rejected(line(e, n.substr(1)), "not a valid positive integer");  // negative
  expect_rejected(line(e, std::string(1, '\0') + n), "not a valid positive integer");
  expect_rejected(line(std::string(1, '\0') + e, n), "not a valid positive integer");
  expect_rejected(line("", n), "not a valid positive integer");
  expect_rejected(line(e, ""), "not a valid positive integer");
  expect_rejected(line(std::string(1, '\0'), n), "not a valid positive integer");  // zero
  expect_rejected(line(std::string("\x01\x00\x00", 3), n), "odd and at least 3");  // even
  expect_rejected(line("\x01", n), "odd and at least 3");
  expect_rejected(line("\x02", n), "odd and at least 3");
  EXPECT_NO_THROW(parse_ssh_public_key(line("\x03", n)));
  std::string even_n = n;
  even_n.back() = static_cast<char>(even_n.back() & ~1);
  expect_rejected(line(e, even_n), "modulus that is even");
}

// ---- Private keys ----

// The refusal names the problem and repeats nothing of what was pasted.
void expect_private_key_refused(const std::string& text) {
  auto e = expect_rejected(text, "is a private key");
  std::string message = e.what();
  std::string details = e.details().dump();
  EXPECT_THAT(message, HasSubstr("paste the public key"));
  EXPECT_THAT(message, HasSubstr(".pub"));
  EXPECT_THAT(message, Not(HasSubstr("BEGIN")));
  EXPECT_THAT(details, Not(HasSubstr("BEGIN")));
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.find("-----") != std::string::npos || line.find(':') != std::string::npos) continue;
    for (std::size_t i = 0; i + 8 <= line.size(); ++i) {
      auto chunk = line.substr(i, 8);
      ASSERT_THAT(message, Not(HasSubstr(chunk)));
      ASSERT_THAT(details, Not(HasSubstr(chunk)));
    }
  }
}

TEST(SshPublicKey, RejectsPrivateKeysOfEveryFormatWithoutEchoingThem) {
  auto& keys = KeyFolder::instance();
  struct Case {
    std::string path;
    std::string header;
  };
  std::vector<Case> cases{
      {keys.private_key("ed25519", kEd25519), "-----BEGIN OPENSSH PRIVATE KEY-----"},
      {keys.private_key("ecdsa256", kEcdsa256), "-----BEGIN OPENSSH PRIVATE KEY-----"},
      {keys.converted("rsa3072", kRsa3072, "PEM"), "-----BEGIN RSA PRIVATE KEY-----"},
      {keys.converted("ecdsa256", kEcdsa256, "PEM"), "-----BEGIN EC PRIVATE KEY-----"},
      {keys.converted("ecdsa384", kEcdsa384, "PKCS8"), "-----BEGIN PRIVATE KEY-----"},
      {keys.converted("ecdsa256", kEcdsa256, "PKCS8", "hunter2hunter2"),
       "-----BEGIN ENCRYPTED PRIVATE KEY-----"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.header);
    std::string text = read_file(c.path);
    ASSERT_EQ(text.rfind(c.header, 0), 0u) << "ssh-keygen wrote another format";
    expect_private_key_refused(text);
    expect_private_key_refused("  \n" + text);
    expect_private_key_refused(text + key_line("ed25519", kEd25519));
    expect_private_key_refused(text.substr(0, text.size() / 2));  // a partial paste
  }
}

TEST(SshPublicKey, RejectsPuttyPrivateKeysWithoutEchoingThem) {
  std::string pub = base64(ed25519_blob());
  for (std::string version : {"2", "3"}) {
    std::string text = "PuTTY-User-Key-File-" + version +
                       ": ssh-ed25519\nEncryption: none\nComment: eddsa-key-20240101\n"
                       "Public-Lines: 2\n" +
                       pub.substr(0, 64) + "\n" + pub.substr(64) + "\nPrivate-Lines: 1\n" +
                       base64(ssh_string(random_string(32))) +
                       "\nPrivate-MAC: " + crypto::sha256_hex(random_string(16)) + "\n";
    expect_private_key_refused(text);
  }
}

// ---- Text and blob disagree, or the blob is malformed ----

TEST(SshPublicKey, RejectsATypeThatDoesNotMatchTheBlob) {
  auto ecdsa = parse_ssh_public_key(key_line("ecdsa256", kEcdsa256));
  auto e = expect_rejected("ssh-ed25519 " + base64(ecdsa.blob), "key data is of type");
  EXPECT_THAT(e.what(), AllOf(HasSubstr("'ssh-ed25519'"), HasSubstr("'ecdsa-sha2-nistp256'")));
  expect_rejected("ecdsa-sha2-nistp384 " + base64(ecdsa.blob), "key data is of type");
  expect_rejected("ssh-rsa " + base64(ed25519_blob()), "key data is of type");
  expect_rejected("sk-ssh-ed25519@openssh.com " + base64(ed25519_blob() + ssh_string("ssh:")),
                  "key data is of type");
  // A blob type that is not a plain name is not repeated.
  auto odd = expect_rejected(
      "ssh-ed25519 " + base64(ssh_string("x+y/z==\x01") + ssh_string(random_string(32))),
      "key data is of another type");
  EXPECT_THAT(odd.what(), Not(HasSubstr("x+y")));
}

TEST(SshPublicKey, RejectsTruncatedBlobs) {
  std::string blob = ed25519_blob();
  for (std::size_t keep : {blob.size() - 1, blob.size() - 20, std::size_t{15}, std::size_t{3}}) {
    SCOPED_TRACE(keep);
    expect_rejected("ssh-ed25519 " + base64(blob.substr(0, keep)), "truncated");
  }
  // A length prefix larger than what follows.
  std::string lying = blob;
  lying[4 + 11 + 3] = 33;
  expect_rejected("ssh-ed25519 " + base64(lying), "truncated");
  lying[4 + 11] = '\xff';
  expect_rejected("ssh-ed25519 " + base64(lying), "truncated");
}

TEST(SshPublicKey, RejectsTrailingBytesAfterTheKey) {
  std::string blob = ed25519_blob();
  expect_rejected("ssh-ed25519 " + base64(blob + std::string(1, '\0')), "unexpected bytes");
  expect_rejected("ssh-ed25519 " + base64(blob + ssh_string("")), "unexpected bytes");
  auto rsa = parse_ssh_public_key(key_line("rsa3072", kRsa3072));
  expect_rejected("ssh-rsa " + base64(rsa.blob + ssh_string(kExponent65537)), "unexpected bytes");
}

// Flips the lowest bit of the base64 character at `pos` (in value space, not ASCII).
std::string flip_low_bit(std::string b64, std::size_t pos) {
  static constexpr std::string_view kAlphabet =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  b64[pos] = kAlphabet[kAlphabet.find(b64[pos]) ^ 1];
  return b64;
}

TEST(SshPublicKey, RejectsBadBase64) {
  // ecdsa-sha2-nistp256 blobs are 104 bytes: base64 ending in one "=".
  std::string b64 = base64(parse_ssh_public_key(key_line("ecdsa256", kEcdsa256)).blob);
  ASSERT_TRUE(b64.ends_with("=") && !b64.ends_with("=="));
  const std::string type = "ecdsa-sha2-nistp256 ";
  EXPECT_NO_THROW(parse_ssh_public_key(type + b64));
  auto with = [&](std::size_t pos, std::string_view replacement) {
    std::string s = b64;
    s.replace(pos, 1, replacement);
    return type + s;
  };
  for (std::string_view bad : {"*", "-", "_", "!", ".", "\x01", "\xc3\xa9", "="}) {
    SCOPED_TRACE(::testing::PrintToString(std::string(bad)));
    expect_rejected(with(40, bad), "not valid base64");
  }
  expect_rejected(type + b64.substr(0, b64.size() - 1), "not valid base64");  // padding missing
  expect_rejected(type + b64 + "=", "not valid base64");
  expect_rejected(type + b64 + "==", "not valid base64");
  expect_rejected(type + b64 + "AAAA", "not valid base64");  // data after the padding
  expect_rejected(type + b64.substr(0, b64.size() - 4), "truncated");
  expect_rejected(type + "=", "not valid base64");
  expect_rejected(type + "====", "not valid base64");
  // The unused low bits of the last character: set, they would be a second spelling of the
  // same bytes, which a lax decoder accepts.
  expect_rejected(type + flip_low_bit(b64, b64.size() - 2), "not valid base64");

  // ecdsa-sha2-nistp384 blobs are 136 bytes: base64 ending in "==".
  std::string b64_384 = base64(parse_ssh_public_key(key_line("ecdsa384", kEcdsa384)).blob);
  ASSERT_TRUE(b64_384.ends_with("=="));
  EXPECT_NO_THROW(parse_ssh_public_key("ecdsa-sha2-nistp384 " + b64_384));
  expect_rejected("ecdsa-sha2-nistp384 " + flip_low_bit(b64_384, b64_384.size() - 3),
                  "not valid base64");
  expect_rejected("ecdsa-sha2-nistp384 " + b64_384.substr(0, b64_384.size() - 1) + "A",
                  "not valid base64");
}

// ---- The shape of the line ----

TEST(SshPublicKey, RejectsAuthorizedKeysOptionsBeforeTheKey) {
  std::string key = trim_newline(key_line("ed25519", kEd25519));
  for (std::string options :
       {"restrict,command=\"x\"", "command=\"echo hello world\"", "no-pty", "restrict",
        "from=\"10.0.0.0/8\",no-agent-forwarding", "NO-PTY", "environment=\"A=b\""}) {
    SCOPED_TRACE(options);
    auto e = expect_rejected(options + " " + key, "paste only the key");
    EXPECT_THAT(e.what(), HasSubstr("authorized_keys options"));
  }
  // Options before a refused type are still reported as options.
  expect_rejected("restrict ssh-dss AAAAB3NzaC1kc3M=", "paste only the key");
}

TEST(SshPublicKey, RejectsMoreThanOneKey) {
  std::string a = trim_newline(key_line("ed25519", kEd25519));
  std::string b = trim_newline(key_line("ecdsa256", kEcdsa256));
  expect_rejected(a + "\n" + b + "\n", "single public key on one line");
  expect_rejected(a + "\r\n" + b, "single public key on one line");
  expect_rejected(a + "\r" + b, "single public key on one line");
  expect_rejected(a + "\n\n" + a, "single public key on one line");
  expect_rejected(a + " " + b, "more than one key");
  auto no_comment = parse_ssh_public_key(a);
  no_comment.comment.clear();
  expect_rejected(no_comment.canonical() + " " + b, "more than one key");
  // A comment that merely mentions a type is fine.
  EXPECT_EQ(parse_ssh_public_key(no_comment.canonical() + " ssh-ed25519 key for bob").comment,
            "ssh-ed25519 key for bob");
}

TEST(SshPublicKey, LimitsInputTo16KiB) {
  std::string key = trim_newline(key_line("ed25519", kEd25519));
  std::string padded = key + std::string(kMaxSshPublicKeyTextBytes - key.size(), ' ');
  ASSERT_EQ(padded.size(), 16u * 1024);
  EXPECT_EQ(parse_ssh_public_key(padded).canonical(), key);
  expect_rejected(padded + " ", "longer than 16 KiB");
  expect_rejected(std::string(1 << 20, 'A'), "longer than 16 KiB");
}

TEST(SshPublicKey, RejectsEmptyInput) {
  for (std::string text : {"", " ", "\n", "\r\n", " \t\n\n  "}) {
    expect_rejected(text, "is empty");
  }
}

TEST(SshPublicKey, AcceptsSurroundingWhitespaceAndATrailingNewline) {
  std::string key = trim_newline(key_line("ed25519", kEd25519));
  auto fields = parse_ssh_public_key(key);
  for (std::string text :
       {key + "\n", key + "\r\n", "  " + key + "  \n", "\t" + key + "\t", "\n" + key + "\n\n"}) {
    auto parsed = parse_ssh_public_key(text);
    EXPECT_EQ(parsed.canonical(), key);
    EXPECT_EQ(parsed.fingerprint, fields.fingerprint);
  }
  std::string b64 = base64(fields.blob);
  auto spaced = parse_ssh_public_key("ssh-ed25519 \t " + b64 + "\t  alice   at   laptop  ");
  EXPECT_EQ(spaced.comment, "alice   at   laptop");
  EXPECT_EQ(spaced.canonical(), "ssh-ed25519 " + b64 + " alice   at   laptop");
}

TEST(SshPublicKey, RejectsMissingKeyData) {
  expect_rejected("ssh-ed25519", "no key data");
  expect_rejected("ssh-ed25519 \t ", "no key data");
  expect_rejected(base64(ed25519_blob()) + " alice", "must start with the key type");
}

// ---- Comments ----

TEST(SshPublicKey, AcceptsPrintableUtf8Comments) {
  std::string b64 = base64(ed25519_blob());
  for (std::string comment :
       {"alice@laptop", "Zo\xc3\xab's laptop \xe2\x9c\x93", "\xe6\x97\xa5\xe6\x9c\xac",
        "\xf0\x9f\x94\x91 key", "a \"quoted\" b"}) {
    EXPECT_EQ(parse_ssh_public_key("ssh-ed25519 " + b64 + " " + comment).comment, comment);
  }
  EXPECT_EQ(parse_ssh_public_key("ssh-ed25519 " + b64).comment, "");
}

TEST(SshPublicKey, LimitsCommentsTo255Bytes) {
  std::string b64 = base64(ed25519_blob());
  std::string longest(255, 'c');
  EXPECT_EQ(parse_ssh_public_key("ssh-ed25519 " + b64 + " " + longest).comment, longest);
  expect_rejected("ssh-ed25519 " + b64 + " " + longest + "c", "longer than 255 bytes");
  // Bytes, not characters: 128 two-byte characters are 256 bytes.
  std::string wide;
  for (int i = 0; i < 128; ++i) wide += "\xc3\xa9";
  expect_rejected("ssh-ed25519 " + b64 + " " + wide, "longer than 255 bytes");
}

TEST(SshPublicKey, RejectsCommentsWithControlCharactersOrInvalidUtf8) {
  std::string b64 = base64(ed25519_blob());
  for (std::string comment : {
           std::string("a\x01"
                       "b"),
           std::string("red \x1b[31mtext"),
           std::string("tab\tinside"),
           std::string("del\x7f"),
           std::string("nul\0x", 5),
           std::string("bell\a"),
           std::string("vt\vinside"),
           std::string("c1 \xc2\x85 next line"),
           std::string("rtl \xe2\x80\xae override"),
           std::string("isolate \xe2\x81\xa6 x"),
           std::string("bad \xff byte"),
           std::string("overlong \xc0\xaf slash"),
           std::string("surrogate \xed\xa0\x80"),
           std::string("cut \xe2\x9c"),
           std::string("too big \xf4\x90\x80\x80"),
       }) {
    SCOPED_TRACE(::testing::PrintToString(comment));
    expect_rejected("ssh-ed25519 " + b64 + " " + comment, "printable text only");
  }
}

// ---- Refused types ----

TEST(SshPublicKey, RejectsDsaKeys) {
  std::string line = key_line("dsa", {"-t", "dsa", "-C", "old"});
  ASSERT_EQ(line.rfind("ssh-dss ", 0), 0u);
  expect_rejected(line, "DSA (ssh-dss)");
}

TEST(SshPublicKey, RejectsCertificates) {
  auto& keys = KeyFolder::instance();
  std::string ca = keys.private_key("ca", {"-t", "ed25519", "-C", "ca"});
  std::string pub = keys.public_key("ed25519", kEd25519);
  std::string user_pub = keys.write("user.pub", read_file(pub));
  auto signed_ = run_subprocess(
      {"/usr/bin/ssh-keygen", "-q", "-s", ca, "-I", "alice", "-n", "alice", user_pub});
  ASSERT_EQ(signed_.exit_code, 0) << signed_.output;
  std::string cert = read_file(user_pub.substr(0, user_pub.size() - 4) + "-cert.pub");
  ASSERT_EQ(cert.rfind("ssh-ed25519-cert-v01@openssh.com ", 0), 0u);
  expect_rejected(cert, "is an SSH certificate");
  for (std::string type :
       {"ssh-rsa-cert-v01@openssh.com", "ecdsa-sha2-nistp256-cert-v01@openssh.com",
        "sk-ssh-ed25519-cert-v01@openssh.com"}) {
    expect_rejected(type + " AAAA", "is an SSH certificate");
  }
}

TEST(SshPublicKey, RejectsUnknownTypesNamingThemOnlyWhenPlain) {
  std::string b64 = base64(ed25519_blob());
  for (std::string type : {"ssh-foo", "SSH-ED25519", "rsa-sha2-512", "ecdsa-sha2-nistp224",
                           "ssh-ed448", "ssh-xmss@openssh.com"}) {
    SCOPED_TRACE(type);
    auto e = expect_rejected(type + " " + b64, "unsupported key type '" + type + "'");
    EXPECT_THAT(e.what(), HasSubstr("ssh-ed25519, ecdsa-sha2-nistp256"));
  }
  auto e = expect_rejected("ssh+secret/material " + b64, "unsupported key type;");
  EXPECT_THAT(e.what(), Not(HasSubstr("secret")));
  e = expect_rejected(std::string(100, 'x') + " " + b64, "unsupported key type;");
  EXPECT_THAT(e.what(), Not(HasSubstr("xxxxxxxx")));
}

TEST(SshPublicKey, RejectsOtherPublicKeyFormatsWithAConversionHint) {
  std::string b64 = base64(ed25519_blob());
  expect_rejected("---- BEGIN SSH2 PUBLIC KEY ----\nComment: \"x\"\n" + b64 +
                      "\n---- END SSH2 PUBLIC KEY ----\n",
                  "ssh-keygen -i -f FILE");
  expect_rejected("-----BEGIN PUBLIC KEY-----\nMCowBQYDK2VwAyEA\n-----END PUBLIC KEY-----\n",
                  "ssh-keygen -i -m PKCS8");
}

// ---- Round trip and errors ----

TEST(SshPublicKey, CanonicalRoundTrips) {
  for (const auto& [name, args] :
       std::vector<std::pair<std::string, std::vector<std::string>>>{{"ed25519", kEd25519},
                                                                     {"ecdsa256", kEcdsa256},
                                                                     {"ecdsa384", kEcdsa384},
                                                                     {"ecdsa521", kEcdsa521},
                                                                     {"rsa3072", kRsa3072}}) {
    SCOPED_TRACE(name);
    std::string text = key_line(name, args);
    auto key = parse_ssh_public_key(text);
    EXPECT_EQ(key.canonical(), trim_newline(text));
    auto again = parse_ssh_public_key(key.canonical());
    EXPECT_EQ(again.type, key.type);
    EXPECT_EQ(again.blob, key.blob);
    EXPECT_EQ(again.comment, key.comment);
    EXPECT_EQ(again.bits, key.bits);
    EXPECT_EQ(again.fingerprint, key.fingerprint);
    EXPECT_EQ(again.canonical(), key.canonical());
  }
  auto bare = parse_ssh_public_key(key_line("ed25519", kEd25519));
  bare.comment.clear();
  EXPECT_FALSE(bare.canonical().ends_with(" "));
  EXPECT_EQ(parse_ssh_public_key(bare.canonical()).comment, "");
}

TEST(SshPublicKey, ErrorsAreInvalidRequestOnThePublicKeyField) {
  auto e = expect_rejected("ssh-dss AAAA", "DSA");
  auto json = e.to_json();
  EXPECT_EQ(json["error"]["code"], "invalid_request");
  EXPECT_EQ(json["error"]["details"]["field"], "public_key");
  EXPECT_THAT(json["error"]["message"].get<std::string>(),
              HasSubstr("Field 'public_key' is a DSA"));
}

// Random damage to valid lines must end in a clean accept or a clean Error, never anything
// else (the sanitizer build checks the memory side).
TEST(SshPublicKey, SurvivesRandomlyDamagedInput) {
  std::vector<std::string> lines{trim_newline(key_line("ed25519", kEd25519)),
                                 trim_newline(key_line("ecdsa521", kEcdsa521)),
                                 trim_newline(key_line("rsa3072", kRsa3072))};
  std::vector<std::string> blobs;
  for (const auto& line : lines) blobs.push_back(parse_ssh_public_key(line).blob);
  std::mt19937 rng(20240601);
  for (int i = 0; i < 3000; ++i) {
    std::size_t which = rng() % lines.size();
    std::string text;
    if (i % 2 == 0) {  // damage the text
      text = lines[which];
      for (int k = 0, n = 1 + static_cast<int>(rng() % 4); k < n; ++k) {
        text[rng() % text.size()] = static_cast<char>(rng());
      }
    } else {  // damage the blob and encode it properly
      std::string blob = blobs[which];
      for (int k = 0, n = 1 + static_cast<int>(rng() % 4); k < n; ++k) {
        blob[rng() % blob.size()] = static_cast<char>(rng());
      }
      if (rng() % 3 == 0) blob.resize(rng() % blob.size());
      text = lines[which].substr(0, lines[which].find(' ')) + " " + base64(blob);
    }
    try {
      auto key = parse_ssh_public_key(text);
      EXPECT_EQ(parse_ssh_public_key(key.canonical()).blob, key.blob);
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidRequest);
    }
  }
}

}  // namespace ssh_public_key_test
}  // namespace gpurent::identity
