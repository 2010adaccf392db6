#include "api/tls_context.h"

#include "core/error.h"

#include <openssl/asn1.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <cstring>
#include <ctime>
#include <fstream>

namespace gpurent::http {

namespace {

// The TLS 1.2 suites offered: ECDHE (forward secrecy) with an AEAD cipher, ECDSA and RSA
// certificates alike, strongest first. TLS 1.3's own suites are all AEAD and left as
// OpenSSL sets them.
constexpr const char* kTls12Ciphers =
    "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:"
    "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:"
    "ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305";

// OpenSSL's last error, as text, and the queue emptied.
std::string openssl_error() {
  unsigned long code = ERR_get_error();
  std::string text;
  if (code != 0) {
    char buf[256];
    ERR_error_string_n(code, buf, sizeof buf);
    text = buf;
  }
  ERR_clear_error();
  return text.empty() ? "unknown OpenSSL error" : text;
}

void require_readable(const std::string& what, const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    throw ConfigError("config " + what + ": " + path + " cannot be read: " + std::strerror(errno));
  }
}

// ALPN: HTTP/1.1 is all this listener speaks; a client offering only h2 gets no protocol
// and falls back (RFC 7301 lets the server ignore what it does not support).
int select_alpn(SSL*, const unsigned char** out, unsigned char* outlen, const unsigned char* in,
                unsigned int inlen, void*) {
  static const unsigned char kHttp11[] = {8, 'h', 't', 't', 'p', '/', '1', '.', '1'};
  unsigned char* selected = nullptr;
  if (SSL_select_next_proto(&selected, outlen, kHttp11, sizeof kHttp11, in, inlen) !=
      OPENSSL_NPN_NEGOTIATED) {
    return SSL_TLSEXT_ERR_NOACK;
  }
  *out = selected;
  return SSL_TLSEXT_ERR_OK;
}

}  // namespace

SslCtxPtr make_server_tls_context(const std::string& certificate_file,
                                  const std::string& key_file) {
  require_readable("tls_certificate", certificate_file);
  require_readable("tls_key", key_file);
  ERR_clear_error();
  SslCtxPtr ctx(SSL_CTX_new(TLS_server_method()));
  if (!ctx) throw ConfigError("TLS: cannot make a context: " + openssl_error());
  SSL_CTX* c = ctx.get();
  SSL_CTX_set_min_proto_version(c, TLS1_2_VERSION);
  // Every suite offered is strong, so the client's order decides (it knows whether it has
  // AES instructions).
  SSL_CTX_set_options(c, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION);
  if (SSL_CTX_set_cipher_list(c, kTls12Ciphers) != 1) {
    throw ConfigError("TLS: cipher list refused: " + openssl_error());
  }
  // Idle keep-alive connections hold no record buffers.
  SSL_CTX_set_mode(c, SSL_MODE_RELEASE_BUFFERS);
  SSL_CTX_set_alpn_select_cb(c, select_alpn, nullptr);
  if (SSL_CTX_use_certificate_chain_file(c, certificate_file.c_str()) != 1) {
    throw ConfigError("config tls_certificate: " + certificate_file +
                      " holds no usable PEM certificate: " + openssl_error());
  }
  X509* cert = SSL_CTX_get0_certificate(c);
  std::unique_ptr<BIO, decltype(&BIO_free)> key_bio(BIO_new_file(key_file.c_str(), "r"), BIO_free);
  std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)> key(
      key_bio ? PEM_read_bio_PrivateKey(key_bio.get(), nullptr, nullptr, nullptr) : nullptr,
      EVP_PKEY_free);
  if (!key) {
    throw ConfigError("config tls_key: " + key_file +
                      " holds no usable PEM private key: " + openssl_error());
  }
  if (X509_check_private_key(cert, key.get()) != 1) {
    ERR_clear_error();
    throw ConfigError("config tls_key: " + key_file + " is not the key of " + certificate_file);
  }
  if (SSL_CTX_use_PrivateKey(c, key.get()) != 1) {
    throw ConfigError("config tls_key: " + key_file + " cannot be used: " + openssl_error());
  }
  if (X509_cmp_current_time(X509_get0_notAfter(cert)) <= 0) {
    throw ConfigError("config tls_certificate: " + certificate_file + " has expired");
  }
  return ctx;
}

std::chrono::system_clock::time_point certificate_not_after(SSL_CTX* ctx) {
  X509* cert = SSL_CTX_get0_certificate(ctx);
  if (!cert) return {};
  std::tm tm{};
  if (ASN1_TIME_to_tm(X509_get0_notAfter(cert), &tm) != 1) return {};
  return std::chrono::system_clock::from_time_t(timegm(&tm));
}

}  // namespace gpurent::http
