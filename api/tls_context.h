// The public listener's TLS settings (Config's tls_certificate and tls_key): what a server
// facing browsers, CI runners and the CLI offers, built with OpenSSL alone so that it is
// checked without a network (api/tests/tls_context_test.cpp).
#pragma once

#include <openssl/ssl.h>

#include <chrono>
#include <memory>
#include <string>

namespace gpurent::http {

struct SslCtxFree {
  void operator()(SSL_CTX* ctx) const { SSL_CTX_free(ctx); }
};
using SslCtxPtr = std::unique_ptr<SSL_CTX, SslCtxFree>;

// A server context from PEM files: the certificate followed by its chain, and its private
// key. TLS 1.2 and 1.3 only; for 1.2, ECDHE key exchange with AES-GCM or ChaCha20-Poly1305
// alone (forward secrecy and AEAD, as current browser and curl versions all offer); no
// renegotiation, no compression; ALPN answers http/1.1. Throws ConfigError naming the file
// and what is wrong with it (unreadable, not PEM, key not the certificate's, expired).
SslCtxPtr make_server_tls_context(const std::string& certificate_file, const std::string& key_file);

// When the context's certificate stops being valid (its notAfter), for the expiry metric.
std::chrono::system_clock::time_point certificate_not_after(SSL_CTX* ctx);

}  // namespace gpurent::http
