// The agent's key and certificate signing request, made in-process with OpenSSL: the private
// key never leaves this process except into the state folder.
#pragma once

#include <stdexcept>
#include <string>

namespace gpurent::agent {

class KeyError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct KeyAndRequest {
  std::string key_pem;  // PKCS#8, unencrypted: the state folder's mode protects it
  std::string csr_pem;
};

// A fresh EC P-256 key and a CSR for it, signed with it, with `common_name` as the subject
// (the control plane names the node in the certificate itself; the subject is a courtesy).
// Throws KeyError with OpenSSL's reason.
KeyAndRequest make_key_and_request(const std::string& common_name);

}  // namespace gpurent::agent
