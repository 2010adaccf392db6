// The agents' certificate authority over OpenSSL 3: key and certificate files, CSR checks,
// and signing with the extensions the CA decides.
#include "core/certificate_authority.h"

#include "core/secret_files.h"

#include "core/crypto.h"

#include <arpa/inet.h>
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <sys/stat.h>

#include <stdexcept>

namespace gpurent {
// Named, not anonymous: CertificateAuthority::State holds keys and certificates with these
// deleters, and GCC refuses a type with linkage holding one without (-Wsubobject-linkage)
// once this file is compiled in a batch with others.
namespace certificate_authority_deleters {
struct KeyFree {
  void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
};
struct X509Free {
  void operator()(X509* p) const { X509_free(p); }
};
}  // namespace certificate_authority_deleters

namespace {

namespace fs = std::filesystem;
using certificate_authority_deleters::KeyFree;
using certificate_authority_deleters::X509Free;

constexpr std::size_t kMaxCsrBytes = 16 * 1024;
// A certificate is valid from a little before its issue, so an agent whose clock runs a few
// minutes behind the control plane's can use it at once.
constexpr auto kBackdate = std::chrono::minutes(5);
constexpr auto kCaValidity = std::chrono::hours(24 * 365 * 10);

struct BioFree {
  void operator()(BIO* p) const { BIO_free(p); }
};
struct ReqFree {
  void operator()(X509_REQ* p) const { X509_REQ_free(p); }
};
struct BnFree {
  void operator()(BIGNUM* p) const { BN_free(p); }
};
using Bio = std::unique_ptr<BIO, BioFree>;
using Key = std::unique_ptr<EVP_PKEY, KeyFree>;
using Cert = std::unique_ptr<X509, X509Free>;
using Req = std::unique_ptr<X509_REQ, ReqFree>;
using Bn = std::unique_ptr<BIGNUM, BnFree>;

[[noreturn]] void fail(const std::string& what) {
  unsigned long code = ERR_get_error();
  char text[256] = "no OpenSSL error";
  if (code != 0) ERR_error_string_n(code, text, sizeof text);
  ERR_clear_error();
  throw std::runtime_error(what + ": " + text);
}

Bio memory_bio(std::string_view text) {
  Bio bio(BIO_new_mem_buf(text.data(), static_cast<int>(text.size())));
  if (!bio) fail("BIO_new_mem_buf");
  return bio;
}

std::string bio_text(BIO* bio) {
  char* data = nullptr;
  long n = BIO_get_mem_data(bio, &data);
  return std::string(data, static_cast<std::size_t>(n));
}

Key new_ec_key() {
  Key key(EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-256"));
  if (!key) fail("EC key generation");
  return key;
}

std::string key_pem(EVP_PKEY* key) {
  Bio bio(BIO_new(BIO_s_mem()));
  if (!PEM_write_bio_PrivateKey(bio.get(), key, nullptr, nullptr, 0, nullptr, nullptr)) {
    fail("PEM_write_bio_PrivateKey");
  }
  return bio_text(bio.get());
}

std::string cert_pem(X509* cert) {
  Bio bio(BIO_new(BIO_s_mem()));
  if (!PEM_write_bio_X509(bio.get(), cert)) fail("PEM_write_bio_X509");
  return bio_text(bio.get());
}

Timestamp timestamp_of(const ASN1_TIME* t) {
  struct tm tm {};
  if (ASN1_TIME_to_tm(t, &tm) != 1) fail("ASN1_TIME_to_tm");
  return std::chrono::time_point_cast<std::chrono::microseconds>(
      std::chrono::system_clock::from_time_t(timegm(&tm)));
}

void add_extension(X509* cert, X509* issuer, int nid, const std::string& value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str());
  if (!ext) fail("extension " + value);
  int ok = X509_add_ext(cert, ext, -1);
  X509_EXTENSION_free(ext);
  if (!ok) fail("X509_add_ext");
}

void set_name(X509_NAME* name, const std::string& common_name, const std::string& org) {
  auto add = [&](const char* field, const std::string& value) {
    if (!X509_NAME_add_entry_by_txt(name, field, MBSTRING_UTF8,
                                    reinterpret_cast<const unsigned char*>(value.c_str()), -1, -1,
                                    0)) {
      fail(std::string("name field ") + field);
    }
  };
  add("O", org);
  add("CN", common_name);
}

// A new certificate for `subject_key`, named `common_name`, valid from now - backdate to
// now + validity, with a random 128-bit serial, signed by `issuer_key` (self-signed when
// issuer is null). Extensions are added by the caller before signing.
Cert new_certificate(EVP_PKEY* subject_key, const std::string& common_name, Timestamp now,
                     std::chrono::seconds validity) {
  Cert cert(X509_new());
  if (!cert) fail("X509_new");
  X509_set_version(cert.get(), 2);  // v3
  auto bytes = crypto::random_bytes(16);
  bytes[0] &= 0x7f;  // positive, as RFC 5280 asks
  bytes[0] |= 0x01;  // never a leading zero byte: the serial keeps its 16 bytes
  Bn serial(BN_bin2bn(bytes.data(), static_cast<int>(bytes.size()), nullptr));
  if (!serial || !BN_to_ASN1_INTEGER(serial.get(), X509_get_serialNumber(cert.get()))) {
    fail("serial number");
  }
  std::time_t start = std::chrono::system_clock::to_time_t(now - kBackdate);
  std::time_t end = std::chrono::system_clock::to_time_t(now + validity);
  if (!ASN1_TIME_set(X509_getm_notBefore(cert.get()), start) ||
      !ASN1_TIME_set(X509_getm_notAfter(cert.get()), end)) {
    fail("validity");
  }
  if (!X509_set_pubkey(cert.get(), subject_key)) fail("X509_set_pubkey");
  set_name(X509_get_subject_name(cert.get()), common_name, "gpurent");
  return cert;
}

IssuedCertificate issued(X509* cert) {
  IssuedCertificate out;
  out.certificate_pem = cert_pem(cert);
  Bn serial(ASN1_INTEGER_to_BN(X509_get0_serialNumber(cert), nullptr));
  char* hex = BN_bn2hex(serial.get());
  out.serial = hex;
  OPENSSL_free(hex);
  for (auto& c : out.serial) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  unsigned char* der = nullptr;
  int n = i2d_X509(cert, &der);
  if (n <= 0) fail("i2d_X509");
  out.sha256_fingerprint = crypto::sha256_hex(std::string_view(reinterpret_cast<char*>(der), n));
  OPENSSL_free(der);
  out.not_before = timestamp_of(X509_get0_notBefore(cert));
  out.not_after = timestamp_of(X509_get0_notAfter(cert));
  return out;
}

// Which CSR keys the CA signs: what TLS 1.3 clients use, at their usual strengths.
void check_key(EVP_PKEY* key) {
  switch (EVP_PKEY_get_base_id(key)) {
    case EVP_PKEY_ED25519:
      return;
    case EVP_PKEY_RSA:
      if (EVP_PKEY_get_bits(key) < 2048) throw CsrRejected("RSA keys must have 2048 bits or more");
      return;
    case EVP_PKEY_EC: {
      char group[64] = "";
      std::size_t len = 0;
      EVP_PKEY_get_utf8_string_param(key, "group", group, sizeof group, &len);
      std::string name(group, len);
      if (name == "prime256v1" || name == "secp384r1") return;
      throw CsrRejected("EC keys must be on P-256 or P-384, not " +
                        (name.empty() ? std::string("an unnamed curve") : name));
    }
    default:
      throw CsrRejected("the key must be ECDSA P-256/P-384, Ed25519 or RSA");
  }
}

}  // namespace

struct CertificateAuthority::State {
  const Clock* clock = nullptr;
  Key key;
  Cert cert;
  std::string cert_pem;
};

CertificateAuthority::CertificateAuthority(std::unique_ptr<State> state)
    : state_(std::move(state)) {}
CertificateAuthority::CertificateAuthority(CertificateAuthority&&) noexcept = default;
CertificateAuthority& CertificateAuthority::operator=(CertificateAuthority&&) noexcept = default;
CertificateAuthority::~CertificateAuthority() = default;

CertificateAuthority CertificateAuthority::load_or_create(const fs::path& dir,
                                                          const std::string& name,
                                                          const Clock& clock) {
  auto state = std::make_unique<State>();
  state->clock = &clock;
  fs::create_directories(dir);
  // Replicas sharing the folder may start together: one makes the CA while the others wait
  // on the lock, then load what it made.
  FolderLock lock(dir);
  fs::path key_path = dir / "ca.key";
  fs::path cert_path = dir / "ca.crt";
  bool have_key = fs::exists(key_path);
  bool have_cert = fs::exists(cert_path);
  if (have_key != have_cert) {
    throw std::runtime_error("the CA folder " + dir.string() + " holds " +
                             (have_key ? "ca.key without ca.crt" : "ca.crt without ca.key") +
                             "; restore the missing file or remove both to make a new CA");
  }
  if (!have_key) {
    ::chmod(dir.c_str(), 0700);
    state->key = new_ec_key();
    state->cert = new_certificate(state->key.get(), name, clock.now(), kCaValidity);
    X509_set_issuer_name(state->cert.get(), X509_get_subject_name(state->cert.get()));
    add_extension(state->cert.get(), state->cert.get(), NID_basic_constraints,
                  "critical,CA:TRUE,pathlen:0");
    add_extension(state->cert.get(), state->cert.get(), NID_key_usage,
                  "critical,keyCertSign,cRLSign");
    add_extension(state->cert.get(), state->cert.get(), NID_subject_key_identifier, "hash");
    if (!X509_sign(state->cert.get(), state->key.get(), EVP_sha256())) fail("signing the CA");
    write_file_atomically(key_path, key_pem(state->key.get()), 0600);
    write_file_atomically(cert_path, cert_pem(state->cert.get()), 0644);
  } else {
    require_owner_only(key_path, "the CA key");
    std::string key_text = read_whole_file(key_path);
    auto key_bio = memory_bio(key_text);
    state->key.reset(PEM_read_bio_PrivateKey(key_bio.get(), nullptr, nullptr, nullptr));
    if (!state->key) fail("reading " + key_path.string());
    std::string cert_text = read_whole_file(cert_path);
    auto cert_bio = memory_bio(cert_text);
    state->cert.reset(PEM_read_bio_X509(cert_bio.get(), nullptr, nullptr, nullptr));
    if (!state->cert) fail("reading " + cert_path.string());
    if (X509_check_private_key(state->cert.get(), state->key.get()) != 1) {
      ERR_clear_error();
      throw std::runtime_error("ca.key and ca.crt in " + dir.string() + " do not match");
    }
  }
  state->cert_pem = cert_pem(state->cert.get());
  return CertificateAuthority(std::move(state));
}

const std::string& CertificateAuthority::certificate_pem() const {
  return state_->cert_pem;
}

IssuedCertificate CertificateAuthority::sign_client_csr(std::string_view csr_pem,
                                                        const std::string& node_id,
                                                        std::chrono::seconds validity) const {
  if (csr_pem.size() > kMaxCsrBytes) throw CsrRejected("the CSR is larger than 16 KiB");
  if (csr_pem.find("-----BEGIN CERTIFICATE REQUEST-----") == std::string_view::npos) {
    throw CsrRejected("not a PEM certificate request (BEGIN CERTIFICATE REQUEST)");
  }
  auto bio = memory_bio(csr_pem);
  Req req(PEM_read_bio_X509_REQ(bio.get(), nullptr, nullptr, nullptr));
  if (!req) {
    ERR_clear_error();
    throw CsrRejected("the certificate request does not parse");
  }
  EVP_PKEY* key = X509_REQ_get0_pubkey(req.get());
  if (!key) {
    ERR_clear_error();
    throw CsrRejected("the certificate request carries no public key");
  }
  if (X509_REQ_verify(req.get(), key) != 1) {
    ERR_clear_error();
    throw CsrRejected("the certificate request's signature does not verify");
  }
  check_key(key);
  Cert cert = new_certificate(key, node_id, state_->clock->now(), validity);
  X509_set_issuer_name(cert.get(), X509_get_subject_name(state_->cert.get()));
  add_extension(cert.get(), state_->cert.get(), NID_basic_constraints, "critical,CA:FALSE");
  add_extension(cert.get(), state_->cert.get(), NID_key_usage, "critical,digitalSignature");
  add_extension(cert.get(), state_->cert.get(), NID_ext_key_usage, "clientAuth");
  add_extension(cert.get(), state_->cert.get(), NID_authority_key_identifier, "keyid:always");
  if (!X509_sign(cert.get(), state_->key.get(), EVP_sha256())) fail("signing a client certificate");
  return issued(cert.get());
}

IssuedKeyPair CertificateAuthority::issue_server_certificate(const std::vector<std::string>& hosts,
                                                             std::chrono::seconds validity) const {
  if (hosts.empty()) throw std::invalid_argument("a server certificate names at least one host");
  Key key = new_ec_key();
  Cert cert = new_certificate(key.get(), hosts.front(), state_->clock->now(), validity);
  X509_set_issuer_name(cert.get(), X509_get_subject_name(state_->cert.get()));
  std::string names;
  for (const auto& host : hosts) {
    unsigned char addr[16];
    bool ip =
        inet_pton(AF_INET, host.c_str(), addr) == 1 || inet_pton(AF_INET6, host.c_str(), addr) == 1;
    if (!names.empty()) names += ',';
    names += ip ? "IP:" : "DNS:";
    names += host;
  }
  add_extension(cert.get(), state_->cert.get(), NID_basic_constraints, "critical,CA:FALSE");
  add_extension(cert.get(), state_->cert.get(), NID_key_usage, "critical,digitalSignature");
  add_extension(cert.get(), state_->cert.get(), NID_ext_key_usage, "serverAuth");
  add_extension(cert.get(), state_->cert.get(), NID_subject_alt_name, names);
  add_extension(cert.get(), state_->cert.get(), NID_authority_key_identifier, "keyid:always");
  if (!X509_sign(cert.get(), state_->key.get(), EVP_sha256())) fail("signing a server certificate");
  return {issued(cert.get()), key_pem(key.get())};
}

}  // namespace gpurent
