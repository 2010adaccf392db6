// The SSH CA against the real ssh-keygen: every key type the registry accepts is signed
// into a certificate `ssh-keygen -L` reads (it checks the CA's signature) with the key id,
// principals, validity, critical options and extensions asked for; a tampered certificate
// is refused; the CA keys persist with owner-only permissions.
#include "identity/ssh_certificate_authority.h"

#include "core/crypto.h"
#include "core/sql.h"
#include "core/subprocess.h"
#include "tests/support/test_keys.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <sys/stat.h>

#include <algorithm>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace gpurent::identity::ssh_certificate_authority_test {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

// 2026-12-02T00:00:00Z and a day later.
const Timestamp kStart = timestamp_from_micros(1'796'169'600'000'000);
const Timestamp kEnd = kStart + std::chrono::hours(24);

std::string read_text(const fs::path& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string wire_string(std::string_view s) {
  std::string out;
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<char>(s.size() >> shift));
  return out.append(s);
}

class SshCertificateAuthorityTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "gpurent-ssh-ca-XXXXXX").string();
    dir_ = mkdtemp(pattern.data());
    ca_.emplace(SshCertificateAuthority::load_or_create(dir_ / "ca"));
  }
  void TearDown() override { fs::remove_all(dir_); }

  SshPublicKey key_of(const std::string& name, const std::vector<std::string>& args) {
    return parse_ssh_public_key(read_text(testing::ssh_key_pair(name, args) + ".pub"));
  }
  // What `ssh-keygen -L` prints of `certificate`, in UTC; its exit code through `status`.
  std::string listing(const std::string& certificate, int* status = nullptr) {
    fs::path path = dir_ / ("cert" + std::to_string(++n_) + "-cert.pub");
    std::ofstream(path) << certificate << "\n";
    auto r = run_subprocess({"env", "TZ=UTC", "ssh-keygen", "-L", "-f", path.string()});
    if (status) *status = r.exit_code;
    return r.output;
  }
  static std::string fingerprint_of(const std::string& public_line) {
    return parse_ssh_public_key(public_line).fingerprint;
  }

  fs::path dir_;
  int n_ = 0;
  std::optional<SshCertificateAuthority> ca_;
};

TEST_F(SshCertificateAuthorityTest, EveryAcceptedKeyTypeBecomesAUserCertificateSshKeygenReads) {
  // A security key's public half cannot be made without the key: built as its blob.
  std::string sk_blob = wire_string("sk-ssh-ed25519@openssh.com") +
                        wire_string(std::string(32, '\x42')) + wire_string("ssh:");
  std::vector<std::pair<SshPublicKey, std::string>> keys = {
      {key_of("cert-ed25519", {"-t", "ed25519"}), "ssh-ed25519-cert-v01@openssh.com"},
      {key_of("cert-ecdsa256", {"-t", "ecdsa", "-b", "256"}),
       "ecdsa-sha2-nistp256-cert-v01@openssh.com"},
      {key_of("cert-ecdsa384", {"-t", "ecdsa", "-b", "384"}),
       "ecdsa-sha2-nistp384-cert-v01@openssh.com"},
      {key_of("cert-ecdsa521", {"-t", "ecdsa", "-b", "521"}),
       "ecdsa-sha2-nistp521-cert-v01@openssh.com"},
      {key_of("rsa-3072", {"-t", "rsa", "-b", "3072"}), "ssh-rsa-cert-v01@openssh.com"},
      {parse_ssh_public_key("sk-ssh-ed25519@openssh.com " + ssh_base64(sk_blob)),
       "sk-ssh-ed25519-cert-v01@openssh.com"},
  };
  std::uint64_t serial = 41;
  for (const auto& [key, cert_type] : keys) {
    SCOPED_TRACE(key.type);
    std::string cert = ca_->sign(key, {.type = SshCertificateType::kUser,
                                       .serial = ++serial,
                                       .key_id = "rental=rnt_abc user=usr_def",
                                       .principals = {"rnt_abc"},
                                       .valid_after = kStart,
                                       .valid_before = kEnd});
    EXPECT_EQ(cert.rfind(cert_type + " ", 0), 0u) << cert;
    int status = -1;
    std::string shown = listing(cert, &status);
    ASSERT_EQ(status, 0) << shown;
    EXPECT_THAT(shown, HasSubstr("Type: " + cert_type + " user certificate"));
    EXPECT_THAT(shown, HasSubstr(key.fingerprint)) << "the certified key";
    EXPECT_THAT(shown,
                HasSubstr("Signing CA: ED25519 " + fingerprint_of(ca_->user_ca_public_key()) +
                          " (using ssh-ed25519)"));
    EXPECT_THAT(shown, HasSubstr("Key ID: \"rental=rnt_abc user=usr_def\""));
    EXPECT_THAT(shown, HasSubstr("Serial: " + std::to_string(serial)));
    EXPECT_THAT(shown, HasSubstr("Valid: from 2026-12-02T00:00:00 to 2026-12-03T00:00:00"));
    EXPECT_THAT(shown, HasSubstr("Principals: \n                rnt_abc\n"));
    EXPECT_THAT(shown, HasSubstr("Critical Options: (none)"));
    EXPECT_THAT(shown, HasSubstr("Extensions: \n                permit-X11-forwarding\n"
                                 "                permit-agent-forwarding\n"
                                 "                permit-port-forwarding\n"
                                 "                permit-pty\n"
                                 "                permit-user-rc\n"));
  }
}

TEST_F(SshCertificateAuthorityTest, HostCertificatesNameTheHostAndComeFromTheHostCa) {
  auto host_key = key_of("cert-host-ed25519", {"-t", "ed25519"});
  std::string cert = ca_->sign(host_key, {.type = SshCertificateType::kHost,
                                          .serial = 7,
                                          .key_id = "node=nod_abc",
                                          .principals = {"gpu-a1.example.net", "10.0.0.7"},
                                          .valid_after = kStart,
                                          .valid_before = kEnd});
  int status = -1;
  std::string shown = listing(cert, &status);
  ASSERT_EQ(status, 0) << shown;
  EXPECT_THAT(shown, HasSubstr("Type: ssh-ed25519-cert-v01@openssh.com host certificate"));
  EXPECT_THAT(shown, HasSubstr("Signing CA: ED25519 " + fingerprint_of(ca_->host_ca_public_key())));
  EXPECT_THAT(shown, HasSubstr("Principals: \n                gpu-a1.example.net\n"
                               "                10.0.0.7\n"));
  EXPECT_THAT(shown, HasSubstr("Extensions: (none)"));
  EXPECT_NE(ca_->host_ca_public_key(), ca_->user_ca_public_key()) << "two keys, two roles";
}

TEST_F(SshCertificateAuthorityTest, AProbeCertificateForcesItsCommandAndGrantsNoExtensions) {
  auto key = key_of("cert-ed25519", {"-t", "ed25519"});
  std::string cert =
      ca_->sign(key, {.type = SshCertificateType::kUser,
                      .serial = 9,
                      .key_id = "gpurent-probe rental=rnt_abc node=nod_def",
                      .principals = {"gpurent-probe-rnt_abc"},
                      .valid_after = kStart,
                      .valid_before = kStart + std::chrono::seconds(120),
                      .critical_options = {{std::string(kForceCommand), "/bin/true"}},
                      .extensions = SshCertificateExtensions::kNone});
  int status = -1;
  std::string shown = listing(cert, &status);
  ASSERT_EQ(status, 0) << shown;
  EXPECT_THAT(shown, HasSubstr("Type: ssh-ed25519-cert-v01@openssh.com user certificate"));
  EXPECT_THAT(shown, HasSubstr("Valid: from 2026-12-02T00:00:00 to 2026-12-02T00:02:00"));
  EXPECT_THAT(shown, HasSubstr("Principals: \n                gpurent-probe-rnt_abc\n"));
  EXPECT_THAT(shown, HasSubstr("Critical Options: \n                force-command /bin/true\n"));
  EXPECT_THAT(shown, HasSubstr("Extensions: (none)"));
}

TEST_F(SshCertificateAuthorityTest, CriticalOptionsAreEncodedInNameOrder) {
  auto key = key_of("cert-ed25519", {"-t", "ed25519"});
  // Given out of order: the certificate lists them sorted, each value whole (spaces, commas).
  std::string cert = ca_->sign(
      key, {.serial = 10,
            .key_id = "rental=rnt_abc",
            .principals = {"rnt_abc"},
            .valid_after = kStart,
            .valid_before = kEnd,
            .critical_options = {{std::string(kSourceAddress), "10.0.0.0/8,192.0.2.7/32"},
                                 {std::string(kForceCommand), "/usr/bin/env printf ok"}}});
  int status = -1;
  std::string shown = listing(cert, &status);
  ASSERT_EQ(status, 0) << shown;
  EXPECT_THAT(shown, HasSubstr("Critical Options: \n"
                               "                force-command /usr/bin/env printf ok\n"
                               "                source-address 10.0.0.0/8,192.0.2.7/32\n"));
  EXPECT_THAT(shown, HasSubstr("Extensions: \n                permit-X11-forwarding\n"))
      << "the interactive set by default";
}

TEST_F(SshCertificateAuthorityTest, ATamperedCertificateIsRefused) {
  auto key = key_of("cert-ed25519", {"-t", "ed25519"});
  std::string cert = ca_->sign(key, {.serial = 1,
                                     .key_id = "rental=rnt_abc user=usr_def",
                                     .principals = {"rnt_abc"},
                                     .valid_after = kStart,
                                     .valid_before = kEnd});
  // Another principal written over the signed one: same length, so only the signature
  // can tell.
  std::istringstream words(cert);
  std::string type, b64;
  words >> type >> b64;
  std::string decoded;
  {
    // Decoding through OpenSSL's EVP, as the test needs no strictness.
    std::string out(b64.size(), '\0');
    int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                            reinterpret_cast<const unsigned char*>(b64.data()),
                            static_cast<int>(b64.size()));
    ASSERT_GT(n, 0);
    out.resize(static_cast<std::size_t>(n) - std::count(b64.end() - 2, b64.end(), '='));
    decoded = out;
  }
  int untouched = -1;
  listing(type + " " + ssh_base64(decoded), &untouched);
  ASSERT_EQ(untouched, 0) << "decoded and encoded again, the certificate still reads";
  auto at = decoded.find("rnt_abc");
  ASSERT_NE(at, std::string::npos);
  decoded.replace(at, 7, "rnt_xyz");
  int status = -1;
  std::string shown = listing(type + " " + ssh_base64(decoded), &status);
  EXPECT_NE(status, 0) << shown;
  EXPECT_EQ(shown.find("rnt_xyz"), std::string::npos) << shown;
}

TEST_F(SshCertificateAuthorityTest, TheKeysPersistForTheirOwnerOnly) {
  auto again = SshCertificateAuthority::load_or_create(dir_ / "ca");
  EXPECT_EQ(again.user_ca_public_key(), ca_->user_ca_public_key());
  EXPECT_EQ(again.host_ca_public_key(), ca_->host_ca_public_key());
  EXPECT_EQ(ca_->user_ca_public_key().rfind("ssh-ed25519 ", 0), 0u);
  for (const char* name : {"ssh_user_ca", "ssh_host_ca"}) {
    struct stat st {};
    ASSERT_EQ(::stat((dir_ / "ca" / name).c_str(), &st), 0) << name;
    EXPECT_EQ(st.st_mode & 0777, 0600u) << name;
  }
  struct stat st {};
  ASSERT_EQ(::stat((dir_ / "ca").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  fs::permissions(dir_ / "ca" / "ssh_host_ca", fs::perms::group_read, fs::perm_options::add);
  EXPECT_THROW(SshCertificateAuthority::load_or_create(dir_ / "ca"), std::runtime_error);
}

TEST_F(SshCertificateAuthorityTest, RequestsOutsideTheFormatAreRefused) {
  auto key = key_of("cert-ed25519", {"-t", "ed25519"});
  SshCertificateRequest good{.serial = 1,
                             .key_id = "rental=rnt_abc",
                             .principals = {"rnt_abc"},
                             .valid_after = kStart,
                             .valid_before = kEnd};
  EXPECT_NO_THROW(ca_->sign(key, good));
  auto bad = good;
  bad.principals.clear();
  EXPECT_THROW(ca_->sign(key, bad), std::invalid_argument);
  bad = good;
  bad.valid_before = bad.valid_after;
  EXPECT_THROW(ca_->sign(key, bad), std::invalid_argument);
  for (const std::string& principal :
       std::vector<std::string>{"", "two words", "a,b", std::string(256, 'p'), "tab\there"}) {
    bad = good;
    bad.principals = {principal};
    EXPECT_THROW(ca_->sign(key, bad), std::invalid_argument) << principal;
  }
  bad = good;
  bad.key_id = "line\nbreak";
  EXPECT_THROW(ca_->sign(key, bad), std::invalid_argument);
  using Options = std::vector<std::pair<std::string, std::string>>;
  for (const Options& options :
       std::vector<Options>{{{"permit-pty", ""}},
                            {{"no-such-option", "x"}},
                            {{"force-command", "/bin/true"}, {"force-command", "/bin/false"}},
                            {{"force-command", ""}},
                            {{"force-command", "/bin/true\n"}},
                            {{"source-address", std::string(1025, '1')}}}) {
    bad = good;
    bad.critical_options = options;
    EXPECT_THROW(ca_->sign(key, bad), std::invalid_argument) << options.front().first;
  }
  bad = good;
  bad.type = SshCertificateType::kHost;
  bad.critical_options = {{"force-command", "/bin/true"}};
  EXPECT_THROW(ca_->sign(key, bad), std::invalid_argument) << "host certificates have none";
}

}  // namespace gpurent::identity::ssh_certificate_authority_test
