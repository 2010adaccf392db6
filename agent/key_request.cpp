// EC P-256 key and CSR through OpenSSL 3's EVP and X509_REQ interfaces.
#include "agent/key_request.h"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <memory>

namespace gpurent::agent {

namespace {

template <auto Free>
struct Deleter {
  template <typename T>
  void operator()(T* p) const {
    Free(p);
  }
};
using Key = std::unique_ptr<EVP_PKEY, Deleter<EVP_PKEY_free>>;
using Request = std::unique_ptr<X509_REQ, Deleter<X509_REQ_free>>;
using Bio = std::unique_ptr<BIO, Deleter<BIO_free>>;

[[noreturn]] void fail(const std::string& what) {
  unsigned long code = ERR_get_error();
  char reason[256] = "unknown error";
  if (code != 0) ERR_error_string_n(code, reason, sizeof(reason));
  ERR_clear_error();
  throw KeyError(what + ": " + reason);
}

template <typename Write>
std::string to_pem(Write write, const std::string& what) {
  Bio bio(BIO_new(BIO_s_mem()));
  if (!bio || !write(bio.get())) fail("cannot write the " + what);
  char* data = nullptr;
  long size = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<std::size_t>(size));
}

}  // namespace

KeyAndRequest make_key_and_request(const std::string& common_name) {
  Key key(EVP_EC_gen("P-256"));
  if (!key) fail("cannot make an EC P-256 key");
  Request req(X509_REQ_new());
  if (!req || !X509_REQ_set_version(req.get(), 0)) fail("cannot make a CSR");
  X509_NAME* name = X509_REQ_get_subject_name(req.get());
  if (!X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8,
                                  reinterpret_cast<const unsigned char*>(common_name.c_str()), -1,
                                  -1, 0)) {
    fail("cannot name the CSR's subject");
  }
  if (!X509_REQ_set_pubkey(req.get(), key.get())) fail("cannot put the key in the CSR");
  if (X509_REQ_sign(req.get(), key.get(), EVP_sha256()) <= 0) fail("cannot sign the CSR");
  return {
      .key_pem = to_pem(
          [&](BIO* b) {
            return PEM_write_bio_PrivateKey(b, key.get(), nullptr, nullptr, 0, nullptr, nullptr) ==
                   1;
          },
          "private key"),
      .csr_pem = to_pem([&](BIO* b) { return PEM_write_bio_X509_REQ(b, req.get()) == 1; }, "CSR")};
}

}  // namespace gpurent::agent
