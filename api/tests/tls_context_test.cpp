// make_server_tls_context on certificates made here: what the context offers, and each way
// an operator's files can be wrong, refused with the file and the reason.
#include "api/tls_context.h"

#include "core/error.h"

#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

namespace gpurent::http {
namespace {

namespace fs = std::filesystem;

// A self-signed P-256 certificate valid from `from` to `to` seconds around now, and its key,
// written as PEM to `dir`/NAME.crt and NAME.key.
void make_certificate(const fs::path& dir, const std::string& name, long from, long to) {
  EVP_PKEY* key = EVP_EC_gen("P-256");
  ASSERT_NE(key, nullptr);
  X509* cert = X509_new();
  X509_set_version(cert, 2);
  ASN1_INTEGER_set(X509_get_serialNumber(cert), 1);
  X509_gmtime_adj(X509_getm_notBefore(cert), from);
  X509_gmtime_adj(X509_getm_notAfter(cert), to);
  X509_set_pubkey(cert, key);
  X509_NAME* subject = X509_get_subject_name(cert);
  X509_NAME_add_entry_by_txt(subject, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>(name.c_str()), -1, -1, 0);
  X509_set_issuer_name(cert, subject);
  ASSERT_GT(X509_sign(cert, key, EVP_sha256()), 0);
  FILE* out = std::fopen((dir / (name + ".crt")).c_str(), "w");
  PEM_write_X509(out, cert);
  std::fclose(out);
  out = std::fopen((dir / (name + ".key")).c_str(), "w");
  PEM_write_PrivateKey(out, key, nullptr, nullptr, 0, nullptr, nullptr);
  std::fclose(out);
  X509_free(cert);
  EVP_PKEY_free(key);
}

class TlsContextTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("gpurent-tls-" + std::to_string(getpid()));
    fs::create_directories(dir_);
    make_certificate(dir_, "good", -60, 86400);
    make_certificate(dir_, "other", -60, 86400);
    make_certificate(dir_, "expired", -86400, -60);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& file) const { return (dir_ / file).string(); }

  // The message make_server_tls_context refuses with; empty when it accepts.
  std::string refusal(const std::string& cert, const std::string& key) {
    try {
      make_server_tls_context(path(cert), path(key));
      return "";
    } catch (const ConfigError& e) {
      return e.what();
    }
  }

  fs::path dir_;
};

TEST_F(TlsContextTest, OffersTls12AndUpWithForwardSecretAeadSuitesOnly) {
  SslCtxPtr ctx = make_server_tls_context(path("good.crt"), path("good.key"));
  EXPECT_EQ(SSL_CTX_get_min_proto_version(ctx.get()), TLS1_2_VERSION);
  EXPECT_TRUE(SSL_CTX_get_options(ctx.get()) & SSL_OP_NO_RENEGOTIATION);
  EXPECT_TRUE(SSL_CTX_get_options(ctx.get()) & SSL_OP_NO_COMPRESSION);
  STACK_OF(SSL_CIPHER)* ciphers = SSL_CTX_get_ciphers(ctx.get());
  ASSERT_NE(ciphers, nullptr);
  int tls12 = 0;
  for (int i = 0; i < sk_SSL_CIPHER_num(ciphers); ++i) {
    const SSL_CIPHER* c = sk_SSL_CIPHER_value(ciphers, i);
    std::string name = SSL_CIPHER_get_name(c);
    if (name.rfind("TLS_", 0) == 0) continue;  // TLS 1.3's own suites, all AEAD
    ++tls12;
    EXPECT_EQ(name.rfind("ECDHE-", 0), 0u) << name << ": no forward secrecy";
    EXPECT_TRUE(SSL_CIPHER_is_aead(c)) << name << ": not AEAD";
  }
  EXPECT_EQ(tls12, 6);
}

TEST_F(TlsContextTest, TheCertificatesExpiryIsReadForTheMetric) {
  SslCtxPtr ctx = make_server_tls_context(path("good.crt"), path("good.key"));
  auto left = certificate_not_after(ctx.get()) - std::chrono::system_clock::now();
  EXPECT_GT(left, std::chrono::hours(23));
  EXPECT_LE(left, std::chrono::hours(24));
}

TEST_F(TlsContextTest, EveryWayTheFilesCanBeWrongIsRefusedWithTheFileAndTheReason) {
  std::ofstream(path("junk.pem")) << "not a certificate\n";
  struct Case {
    std::string cert, key, expected;
  };
  for (const Case& c : {
           Case{"missing.crt", "good.key", "missing.crt cannot be read"},
           Case{"good.crt", "missing.key", "missing.key cannot be read"},
           Case{"junk.pem", "good.key", "junk.pem holds no usable PEM certificate"},
           Case{"good.crt", "junk.pem", "junk.pem holds no usable PEM private key"},
           Case{"good.key", "good.key", "good.key holds no usable PEM certificate"},
           Case{"good.crt", "other.key", "other.key is not the key of"},
           Case{"expired.crt", "expired.key", "expired.crt has expired"},
       }) {
    std::string why = refusal(c.cert, c.key);
    EXPECT_NE(why.find(c.expected), std::string::npos)
        << c.cert << " + " << c.key << ": " << (why.empty() ? "accepted" : why);
  }
  EXPECT_EQ(refusal("good.crt", "good.key"), "");
}

}  // namespace
}  // namespace gpurent::http
