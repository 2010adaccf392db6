// OpenSSH certificates (PROTOCOL.certkeys) over OpenSSL's Ed25519: the wire encoding of
// RFC 4251 §5, the certificate's fields in their order, and an Ed25519 signature over them.
#include "identity/ssh_certificate_authority.h"

#include "core/crypto.h"
#include "core/secret_files.h"

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <sys/stat.h>

#include <algorithm>
#include <stdexcept>

namespace gpurent::identity {
namespace fs = std::filesystem;
// Named, not anonymous: the CA's State holds it, and the library's files compile in batches.
namespace ssh_certificate_authority_keys {
struct PkeyFree {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
using Pkey = std::unique_ptr<EVP_PKEY, PkeyFree>;
}  // namespace ssh_certificate_authority_keys
using ssh_certificate_authority_keys::Pkey;

namespace {
struct BioFree {
  void operator()(BIO* b) const { BIO_free(b); }
};
using Bio = std::unique_ptr<BIO, BioFree>;
struct MdCtxFree {
  void operator()(EVP_MD_CTX* c) const { EVP_MD_CTX_free(c); }
};

[[noreturn]] void fail(const std::string& what) {
  char text[256] = "no OpenSSL error";
  if (unsigned long e = ERR_get_error()) ERR_error_string_n(e, text, sizeof text);
  ERR_clear_error();
  throw std::runtime_error(what + ": " + text);
}

// RFC 4251 §5: big-endian integers, strings as a uint32 length and the bytes.
class Wire {
 public:
  void u32(std::uint32_t v) {
    for (int shift = 24; shift >= 0; shift -= 8) out_.push_back(static_cast<char>(v >> shift));
  }
  void u64(std::uint64_t v) {
    for (int shift = 56; shift >= 0; shift -= 8) out_.push_back(static_cast<char>(v >> shift));
  }
  void string(std::string_view s) {
    u32(static_cast<std::uint32_t>(s.size()));
    out_.append(s);
  }
  void raw(std::string_view s) { out_.append(s); }
  const std::string& bytes() const { return out_; }

 private:
  std::string out_;
};

// The key's blob without its leading type string: the fields a certificate repeats.
std::string_view key_fields(const SshPublicKey& key) {
  std::string_view blob = key.blob;
  std::size_t skip = 4 + key.type.size();
  if (blob.size() < skip) throw std::invalid_argument("the key's blob is shorter than its type");
  return blob.substr(skip);
}

std::string raw_public_key(EVP_PKEY* key) {
  std::string raw(32, '\0');
  std::size_t n = raw.size();
  if (EVP_PKEY_get_raw_public_key(key, reinterpret_cast<unsigned char*>(raw.data()), &n) != 1 ||
      n != 32) {
    fail("reading an Ed25519 public key");
  }
  return raw;
}

std::string ed25519_blob(EVP_PKEY* key) {
  Wire w;
  w.string("ssh-ed25519");
  w.string(raw_public_key(key));
  return w.bytes();
}

std::string ed25519_sign(EVP_PKEY* key, std::string_view data) {
  std::unique_ptr<EVP_MD_CTX, MdCtxFree> ctx(EVP_MD_CTX_new());
  if (!ctx || EVP_DigestSignInit(ctx.get(), nullptr, nullptr, nullptr, key) != 1) {
    fail("starting an Ed25519 signature");
  }
  std::string sig(64, '\0');
  std::size_t n = sig.size();
  if (EVP_DigestSign(ctx.get(), reinterpret_cast<unsigned char*>(sig.data()), &n,
                     reinterpret_cast<const unsigned char*>(data.data()), data.size()) != 1 ||
      n != 64) {
    fail("signing with Ed25519");
  }
  return sig;
}

// The key at `path`, made (0600, written under a temporary name and renamed) when absent.
Pkey load_or_make_key(const fs::path& path) {
  if (!fs::exists(path)) {
    Pkey key(EVP_PKEY_Q_keygen(nullptr, nullptr, "ED25519"));
    if (!key) fail("making an Ed25519 key");
    Bio bio(BIO_new(BIO_s_mem()));
    if (!bio ||
        !PEM_write_bio_PrivateKey(bio.get(), key.get(), nullptr, nullptr, 0, nullptr, nullptr)) {
      fail("writing an Ed25519 key");
    }
    char* data = nullptr;
    long n = BIO_get_mem_data(bio.get(), &data);
    write_file_atomically(path, std::string(data, static_cast<std::size_t>(n)), 0600);
    return key;
  }
  require_owner_only(path, "the platform key");
  std::string text = read_whole_file(path);
  Bio bio(BIO_new_mem_buf(text.data(), static_cast<int>(text.size())));
  Pkey key(bio ? PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr) : nullptr);
  if (!key) fail("reading " + path.string());
  if (EVP_PKEY_get_base_id(key.get()) != EVP_PKEY_ED25519) {
    throw std::runtime_error("the SSH CA key " + path.string() + " is not an Ed25519 key");
  }
  return key;
}

void check_text(std::string_view what, std::string_view text, bool spaces) {
  if (text.empty() || text.size() > 255) {
    throw std::invalid_argument(std::string(what) + " must be 1 to 255 bytes");
  }
  for (char c : text) {
    bool printable = c > ' ' && c < 0x7f && c != ',';
    if (!printable && !(spaces && c == ' ')) {
      throw std::invalid_argument(std::string(what) + " must be printable ASCII");
    }
  }
}

// The critical options in name order, each name's value wrapped in a string of its own
// (PROTOCOL.certkeys: "data" is itself a string for force-command and source-address).
std::string critical_options_of(const SshCertificateRequest& request) {
  auto options = request.critical_options;
  if (!options.empty() && request.type != SshCertificateType::kUser) {
    throw std::invalid_argument("only user certificates carry critical options");
  }
  std::sort(options.begin(), options.end());
  Wire out;
  for (std::size_t i = 0; i < options.size(); ++i) {
    const auto& [name, value] = options[i];
    if (name != kForceCommand && name != kSourceAddress) {
      throw std::invalid_argument("unknown critical option " + name);
    }
    if (i > 0 && options[i - 1].first == name) {
      throw std::invalid_argument("the critical option " + name + " is given twice");
    }
    bool printable =
        !value.empty() && value.size() <= 1024 &&
        std::all_of(value.begin(), value.end(), [](char c) { return c >= ' ' && c < 0x7f; });
    if (!printable) {
      throw std::invalid_argument("the critical option " + name +
                                  " needs a value of 1 to 1024 printable ASCII bytes");
    }
    Wire data;
    data.string(value);
    out.string(name);
    out.string(data.bytes());
  }
  return out.bytes();
}

std::uint64_t seconds_of(Timestamp t) {
  auto s = std::chrono::duration_cast<std::chrono::seconds>(t.time_since_epoch()).count();
  return s < 0 ? 0 : static_cast<std::uint64_t>(s);
}

}  // namespace

struct SshCertificateAuthority::State {
  Pkey user_key;
  Pkey host_key;
  Pkey report_key;
  std::string user_public;
  std::string host_public;
  std::string report_public_pem;
  std::string report_key_id;
};

SshCertificateAuthority::SshCertificateAuthority(std::unique_ptr<State> state)
    : state_(std::move(state)) {}
SshCertificateAuthority::SshCertificateAuthority(SshCertificateAuthority&&) noexcept = default;
SshCertificateAuthority& SshCertificateAuthority::operator=(SshCertificateAuthority&&) noexcept =
    default;
SshCertificateAuthority::~SshCertificateAuthority() = default;

SshCertificateAuthority SshCertificateAuthority::load_or_create(const fs::path& dir) {
  bool made = !fs::exists(dir);
  fs::create_directories(dir);
  if (made) ::chmod(dir.c_str(), 0700);
  FolderLock lock(dir);  // replicas starting together make one pair
  auto state = std::make_unique<State>();
  state->user_key = load_or_make_key(dir / "ssh_user_ca");
  state->host_key = load_or_make_key(dir / "ssh_host_ca");
  state->report_key = load_or_make_key(dir / "report_signing");
  {
    Bio bio(BIO_new(BIO_s_mem()));
    if (!bio || !PEM_write_bio_PUBKEY(bio.get(), state->report_key.get())) {
      fail("writing the report signing key's public half");
    }
    char* data = nullptr;
    long n = BIO_get_mem_data(bio.get(), &data);
    state->report_public_pem.assign(data, static_cast<std::size_t>(n));
    state->report_key_id =
        "gpurent-report-" +
        crypto::sha256_hex(raw_public_key(state->report_key.get())).substr(0, 16);
  }
  state->user_public =
      "ssh-ed25519 " + ssh_base64(ed25519_blob(state->user_key.get())) + " gpurent-user-ca";
  state->host_public =
      "ssh-ed25519 " + ssh_base64(ed25519_blob(state->host_key.get())) + " gpurent-host-ca";
  return SshCertificateAuthority(std::move(state));
}

std::string SshCertificateAuthority::sign_report(std::string_view bytes) const {
  return ed25519_sign(state_->report_key.get(), bytes);
}

const std::string& SshCertificateAuthority::report_public_key_pem() const {
  return state_->report_public_pem;
}

const std::string& SshCertificateAuthority::report_key_id() const {
  return state_->report_key_id;
}

const std::string& SshCertificateAuthority::user_ca_public_key() const {
  return state_->user_public;
}

const std::string& SshCertificateAuthority::host_ca_public_key() const {
  return state_->host_public;
}

std::string SshCertificateAuthority::sign(const SshPublicKey& key,
                                          const SshCertificateRequest& request) const {
  if (request.principals.empty()) throw std::invalid_argument("a certificate needs a principal");
  if (request.valid_after >= request.valid_before) {
    throw std::invalid_argument("valid_after must be before valid_before");
  }
  check_text("the key id", request.key_id, /*spaces=*/true);
  for (const auto& p : request.principals) check_text("a principal", p, /*spaces=*/false);
  bool user = request.type == SshCertificateType::kUser;
  EVP_PKEY* ca = user ? state_->user_key.get() : state_->host_key.get();
  std::string cert_type = key.type;
  // "sk-ssh-ed25519@openssh.com" → "sk-ssh-ed25519-cert-v01@openssh.com".
  if (auto at = cert_type.find('@'); at != std::string::npos) {
    cert_type.insert(at, "-cert-v01");
  } else {
    cert_type += "-cert-v01@openssh.com";
  }

  Wire principals;
  for (const auto& p : request.principals) principals.string(p);
  std::string critical_options = critical_options_of(request);
  Wire extensions;  // name and empty data, in lexical order
  if (user && request.extensions == SshCertificateExtensions::kInteractive) {
    std::vector<std::string_view> names(kUserCertificateExtensions.begin(),
                                        kUserCertificateExtensions.end());
    std::sort(names.begin(), names.end());
    for (auto name : names) {
      extensions.string(name);
      extensions.string("");
    }
  }
  auto nonce = crypto::random_bytes(32);
  Wire cert;
  cert.string(cert_type);
  cert.string(std::string_view(reinterpret_cast<const char*>(nonce.data()), nonce.size()));
  cert.raw(key_fields(key));
  cert.u64(request.serial);
  cert.u32(static_cast<std::uint32_t>(request.type));
  cert.string(request.key_id);
  cert.string(principals.bytes());
  cert.u64(seconds_of(request.valid_after));
  cert.u64(seconds_of(request.valid_before));
  cert.string(critical_options);
  cert.string(extensions.bytes());
  cert.string("");  // reserved
  cert.string(ed25519_blob(ca));
  Wire signature;
  signature.string("ssh-ed25519");
  signature.string(ed25519_sign(ca, cert.bytes()));
  cert.string(signature.bytes());
  return cert_type + " " + ssh_base64(cert.bytes()) + " " + request.key_id;
}

}  // namespace gpurent::identity
