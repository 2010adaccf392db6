// Tests the agents' certificate authority against the real `openssl` command: the CA it
// makes, the client certificates it signs from CSRs that `openssl req` wrote, the server
// certificate it issues, its files' permissions, and the CSRs it must refuse.
#include "core/certificate_authority.h"

#include "core/subprocess.h"

#include <gtest/gtest.h>

#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace gpurent {
namespace certificate_authority_test {

namespace fs = std::filesystem;
using std::chrono::hours;

class CertificateAuthorityTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "gpurent-ca-XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string openssl(const std::vector<std::string>& args) {
    std::vector<std::string> argv{"openssl"};
    argv.insert(argv.end(), args.begin(), args.end());
    auto r = run_subprocess(argv);
    EXPECT_EQ(r.exit_code, 0) << r.output;
    return r.output;
  }
  std::string write(const std::string& name, const std::string& text) {
    std::string path = (dir_ / name).string();
    std::ofstream(path) << text;
    return path;
  }
  static std::string read(const fs::path& path) {
    std::ifstream in(path);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
  }
  // A CSR as an agent makes one: `openssl req` with a fresh key of `key_args`.
  std::string csr(const std::vector<std::string>& key_args, const std::string& subject) {
    std::string key = (dir_ / ("k" + std::to_string(++n_))).string();
    std::string out = (dir_ / ("r" + std::to_string(n_) + ".csr")).string();
    std::vector<std::string> args{"req",  "-new", "-nodes", "-keyout", key,
                                  "-out", out,    "-subj",  subject};
    args.insert(args.end(), key_args.begin(), key_args.end());
    openssl(args);
    return read(out);
  }
  CertificateAuthority ca() {
    return CertificateAuthority::load_or_create(dir_ / "pki", "gpurent agents CA", clock_);
  }

  fs::path dir_;
  SystemClock clock_;
  int n_ = 0;
};

TEST_F(CertificateAuthorityTest, SignsAnAgentsCsrAsTheNodesClientCertificate) {
  auto authority = ca();
  std::string request =
      csr({"-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256"}, "/CN=whatever-the-agent-says");
  auto issued = authority.sign_client_csr(request, "nod_abc123", hours(24 * 365));
  std::string ca_path = write("ca.pem", authority.certificate_pem());
  std::string cert_path = write("node.pem", issued.certificate_pem);

  EXPECT_NE(
      openssl({"verify", "-CAfile", ca_path, "-purpose", "sslclient", cert_path}).find(": OK"),
      std::string::npos);
  std::string text =
      openssl({"x509", "-in", cert_path, "-noout", "-subject", "-serial", "-fingerprint", "-sha256",
               "-ext", "basicConstraints,keyUsage,extendedKeyUsage"});
  EXPECT_NE(text.find("CN = nod_abc123"), std::string::npos) << text;
  EXPECT_EQ(text.find("whatever-the-agent-says"), std::string::npos) << "the CA names the node";
  EXPECT_NE(text.find("CA:FALSE"), std::string::npos) << text;
  EXPECT_NE(text.find("TLS Web Client Authentication"), std::string::npos) << text;
  EXPECT_EQ(text.find("TLS Web Server Authentication"), std::string::npos) << text;
  // The serial and fingerprint it reports are the certificate's.
  std::string serial = issued.serial;
  for (auto& c : serial) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  EXPECT_NE(text.find("serial=" + serial), std::string::npos) << text;
  EXPECT_EQ(issued.sha256_fingerprint.size(), 64u);
  EXPECT_LE(issued.not_before, clock_.now());
  EXPECT_GT(issued.not_after, clock_.now() + hours(24 * 364));
  // Serials are unique.
  EXPECT_NE(authority.sign_client_csr(request, "nod_abc123", hours(1)).serial, issued.serial);
}

TEST_F(CertificateAuthorityTest, SignsEveryKeyTypeAnAgentMayUse) {
  auto authority = ca();
  std::string ca_path = write("ca.pem", authority.certificate_pem());
  for (const auto& key : std::vector<std::vector<std::string>>{
           {"-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-384"},
           {"-newkey", "ed25519"},
           {"-newkey", "rsa:2048"}}) {
    auto issued = authority.sign_client_csr(csr(key, "/CN=agent"), "nod_k", hours(1));
    std::string cert_path = write("c" + std::to_string(n_) + ".pem", issued.certificate_pem);
    EXPECT_NE(openssl({"verify", "-CAfile", ca_path, cert_path}).find(": OK"), std::string::npos)
        << key[1];
  }
}

TEST_F(CertificateAuthorityTest, RefusesWhatIsNotASoundCsr) {
  auto authority = ca();
  std::string good = csr({"-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256"}, "/CN=a");
  // One byte of the signed body changed: the signature no longer verifies.
  std::string der_path = (dir_ / "r.der").string();
  openssl({"req", "-in", write("good.csr", good), "-outform", "DER", "-out", der_path});
  std::string der = read(der_path);
  der[der.size() / 3] ^= 0x01;
  std::ofstream(der_path, std::ios::binary | std::ios::trunc) << der;
  auto tampered = run_subprocess({"openssl", "req", "-inform", "DER", "-in", der_path});
  std::string private_key = read(dir_ / "k1");
  struct Case {
    std::string what;
    std::string text;
  };
  std::vector<Case> cases = {
      {"empty", ""},
      {"garbage", "hello"},
      {"a private key", private_key},
      {"the CA's certificate", authority.certificate_pem()},
      {"cut in half", good.substr(0, good.size() / 2)},
      {"a header and nothing else",
       "-----BEGIN CERTIFICATE REQUEST-----\n-----END CERTIFICATE REQUEST-----\n"},
      {"base64 garbage inside",
       "-----BEGIN CERTIFICATE REQUEST-----\n!!!!\n-----END CERTIFICATE REQUEST-----\n"},
      {"a giant blob", "-----BEGIN CERTIFICATE REQUEST-----\n" + std::string(20000, 'A') +
                           "\n-----END CERTIFICATE REQUEST-----\n"},
      {"an RSA key of 1024 bits", csr({"-newkey", "rsa:1024"}, "/CN=a")},
      {"an EC key on secp256k1",
       csr({"-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:secp256k1"}, "/CN=a")},
  };
  if (tampered.exit_code == 0) cases.push_back({"a tampered signature", tampered.output});
  for (const auto& c : cases) {
    EXPECT_THROW(authority.sign_client_csr(c.text, "nod_x", hours(1)), CsrRejected) << c.what;
  }
}

TEST_F(CertificateAuthorityTest, IssuesTheListenersServerCertificate) {
  auto authority = ca();
  auto pair = authority.issue_server_certificate({"agents.example.com", "127.0.0.1"}, hours(24));
  std::string ca_path = write("ca.pem", authority.certificate_pem());
  std::string cert_path = write("server.pem", pair.certificate.certificate_pem);
  EXPECT_NE(openssl({"verify", "-CAfile", ca_path, "-purpose", "sslserver", "-verify_hostname",
                     "agents.example.com", cert_path})
                .find(": OK"),
            std::string::npos);
  std::string text = openssl({"x509", "-in", cert_path, "-noout", "-ext", "subjectAltName"});
  EXPECT_NE(text.find("DNS:agents.example.com"), std::string::npos) << text;
  EXPECT_NE(text.find("IP Address:127.0.0.1"), std::string::npos) << text;
  std::string key_path = write("server.key", pair.private_key_pem);
  EXPECT_EQ(openssl({"pkey", "-in", key_path, "-pubout"}),
            openssl({"x509", "-in", cert_path, "-noout", "-pubkey"}))
      << "the key is the certificate's";
}

TEST_F(CertificateAuthorityTest, KeepsItsKeyPrivateAndItsIdentityAcrossRestarts) {
  std::string first = ca().certificate_pem();
  struct stat st {};
  ASSERT_EQ(::stat((dir_ / "pki").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  ASSERT_EQ(::stat((dir_ / "pki" / "ca.key").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  std::string text = openssl({"x509", "-in", (dir_ / "pki" / "ca.crt").string(), "-noout",
                              "-subject", "-ext", "basicConstraints"});
  EXPECT_NE(text.find("CN = gpurent agents CA"), std::string::npos) << text;
  EXPECT_NE(text.find("CA:TRUE"), std::string::npos) << text;

  EXPECT_EQ(ca().certificate_pem(), first) << "a restart loads the same CA";

  ::chmod((dir_ / "pki" / "ca.key").c_str(), 0640);
  EXPECT_THROW(ca(), std::runtime_error) << "a key others can read is refused";
  ::chmod((dir_ / "pki" / "ca.key").c_str(), 0600);
  fs::remove(dir_ / "pki" / "ca.crt");
  EXPECT_THROW(ca(), std::runtime_error) << "a key without its certificate is refused";
}

// Replicas sharing the folder start together: one CA comes out, and every one of them has it.
TEST_F(CertificateAuthorityTest, ReplicasStartingTogetherShareOneCa) {
  constexpr int kReplicas = 6;
  std::vector<std::string> seen(kReplicas);
  std::vector<std::thread> threads;
  for (int i = 0; i < kReplicas; ++i) {
    threads.emplace_back([&, i] { seen[i] = ca().certificate_pem(); });
  }
  for (auto& t : threads) t.join();
  for (const auto& pem : seen) EXPECT_EQ(pem, seen.front());
  EXPECT_EQ(ca().certificate_pem(), seen.front());
}

}  // namespace certificate_authority_test
}  // namespace gpurent
