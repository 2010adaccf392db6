// Fuzz target: the agent enrolment request (POST /agent/v1/enroll), the one request the agent
// listener takes from a client it does not know yet. The input is the request body, read as
// the route reads it: parsed without exceptions as api/agent_listener.cpp does (anything but
// an object is 400 invalid_json there), its fields read as AgentModule::enroll
// (api/modules/agent_module.cpp) reads them, and the CSR signed by the platform's own
// certificate authority (core/certificate_authority.h), a throwaway one made for the run.
//
// The parse never throws. The fields are refused only with invalid_request naming one of
// them. The CSR is either refused with CsrRejected, which the route answers 400 naming
// csr_pem (printable, as the contract's JSON must be), or signed: the certificate parses,
// verifies under the CA's key, names the node and no one else, carries the CSR's own public
// key, and is valid from a few minutes back for the validity asked.
#include "core/certificate_authority.h"
#include "core/clock.h"
#include "core/error.h"
#include "fuzz/http_refusal.h"

#include "api/json_body.h"

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/objects.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace {

using gpurent::CertificateAuthority;
using gpurent::Error;
using nlohmann::json;

constexpr std::chrono::seconds kValidity{90 * 24 * 3600};
const std::string kNodeId = "nod_4Fz8Qp2Lx7Vb1Nc6Rt3Wy9";

// A CA in a folder of its own, removed when the run ends.
struct Authority {
  std::filesystem::path dir = std::filesystem::temp_directory_path() /
                              ("gpurent-agent-enroll-fuzz-" + std::to_string(::getpid()));
  gpurent::SystemClock clock;
  std::optional<CertificateAuthority> ca;

  Authority() { ca.emplace(CertificateAuthority::load_or_create(dir, "fuzz CA", clock)); }
  ~Authority() {
    ca.reset();
    std::error_code ignored;
    std::filesystem::remove_all(dir, ignored);
  }
};

const CertificateAuthority& authority() {
  static Authority a;
  return *a.ca;
}

struct Enrolment {
  std::string token;
  std::string csr_pem;
};

// The fields, as AgentModule::enroll reads them; nullopt when refused.
std::optional<Enrolment> read_fields(const json& body) {
  try {
    gpurent::http::JsonObjectReader in(body);
    Enrolment e;
    e.token = in.required_string("enrollment_token", 200);
    e.csr_pem = in.required_string("csr_pem", 16 * 1024);
    in.optional_value("inventory");
    in.finish();
    return e;
  } catch (const Error& e) {
    gpurent::fuzz::check_refusal(e, {gpurent::ErrorCode::kInvalidRequest});
    auto field = e.details().value("field", std::string());
    if (field != "enrollment_token" && field != "csr_pem" && !body.contains(field)) abort();
    return std::nullopt;
  }
}

template <typename T, void (*Free)(T*)>
struct Deleter {
  void operator()(T* p) const { Free(p); }
};
using Bio = std::unique_ptr<BIO, Deleter<BIO, BIO_free_all>>;
using Cert = std::unique_ptr<X509, Deleter<X509, X509_free>>;
using Req = std::unique_ptr<X509_REQ, Deleter<X509_REQ, X509_REQ_free>>;

Cert read_cert(const std::string& pem) {
  Bio bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  return Cert(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
}

std::string common_name(X509* cert) {
  X509_NAME* name = X509_get_subject_name(cert);
  int at = X509_NAME_get_index_by_NID(name, NID_commonName, -1);
  if (at < 0 || X509_NAME_get_index_by_NID(name, NID_commonName, at) >= 0) return "";
  ASN1_STRING* data = X509_NAME_ENTRY_get_data(X509_NAME_get_entry(name, at));
  return std::string(reinterpret_cast<const char*>(ASN1_STRING_get0_data(data)),
                     static_cast<std::size_t>(ASN1_STRING_length(data)));
}

void check_issued(const gpurent::IssuedCertificate& issued, const std::string& csr_pem) {
  Cert cert = read_cert(issued.certificate_pem);
  Cert ca = read_cert(authority().certificate_pem());
  if (!cert || !ca) abort();
  if (X509_verify(cert.get(), X509_get0_pubkey(ca.get())) != 1) abort();
  if (X509_NAME_cmp(X509_get_issuer_name(cert.get()), X509_get_subject_name(ca.get())) != 0) {
    abort();
  }
  if (common_name(cert.get()) != kNodeId) abort();
  Bio bio(BIO_new_mem_buf(csr_pem.data(), static_cast<int>(csr_pem.size())));
  Req req(PEM_read_bio_X509_REQ(bio.get(), nullptr, nullptr, nullptr));
  if (!req || EVP_PKEY_eq(X509_REQ_get0_pubkey(req.get()), X509_get0_pubkey(cert.get())) != 1) {
    abort();
  }
  // Valid from a few minutes back (clocks differ) to `validity` from now.
  auto now = std::chrono::system_clock::now();
  if (issued.not_before > now || issued.not_before < now - std::chrono::minutes(10)) abort();
  auto left = issued.not_after - now;
  if (left > kValidity || left < kValidity - std::chrono::minutes(5)) abort();
  if (issued.serial.empty() || issued.sha256_fingerprint.size() != 64) abort();
}

void check(std::string_view body) {
  json parsed;
  try {
    parsed = json::parse(body, nullptr, false);
  } catch (...) {
    abort();  // the listener does not catch here: it would end the connection's handler
  }
  if (parsed.is_discarded() || !parsed.is_object()) return;  // 400 invalid_json
  auto fields = read_fields(parsed);
  if (!fields) return;
  try {
    check_issued(authority().sign_client_csr(fields->csr_pem, kNodeId, kValidity), fields->csr_pem);
  } catch (const gpurent::CsrRejected& e) {
    gpurent::fuzz::check_field_refusal(Error::invalid_field("csr_pem", e.what()), "csr_pem");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    check(std::string_view(reinterpret_cast<const char*>(data), size));
  } catch (...) {
    abort();  // anything but a refusal would be answered 500
  }
  return 0;
}
