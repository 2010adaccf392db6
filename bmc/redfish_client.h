// A blocking Redfish client for a site's BMC: reads systems and their power state and asks for
// resets (ComputerSystem.Reset) with HTTP Basic credentials over TLS, every exchange within one
// timeout, failures typed so that callers can decide what to retry.
#pragma once

#include "bmc/redfish.h"

#include <chrono>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace gpurent::bmc {

struct RedfishClientOptions {
  // "https://host[:port]" (a name, an IPv4 address or a bracketed IPv6 one); no path.
  std::string base_url;
  // "http://…" only with this set: tests against a local responder, never a real BMC.
  bool allow_plain_http = false;
  std::string username;
  std::string password;  // HTTP Basic; never logged, never in an error message
  // How the BMC's certificate is trusted, one of:
  //  - ca_file: a PEM file of the CA that signed it; the host name is checked too;
  //  - pinned_sha256: the SHA-256 fingerprint of the certificate itself (64 hex digits,
  //    colons allowed), for the self-signed certificate most BMCs have; nothing else checked;
  //  - neither: the system's CA store and the host name.
  std::string ca_file;
  std::string pinned_sha256;
  // Each exchange (resolving, connecting, TLS, request and response) ends within this.
  std::chrono::milliseconds timeout = std::chrono::seconds(10);
};

enum class RedfishFailureKind {
  kUnreachable,  // no connection: refused, reset, no route, the name did not resolve
  kTimeout,      // no answer within the timeout
  kUntrusted,    // TLS failed: the certificate is not the pinned one, or not signed by the CA
  kAuth,         // 401 or 403: the credentials are wrong or lack the privilege
  kRefused,      // another 4xx (the Redfish error's sentence), a redirect, or a reset type the
                 // system does not allow (refused before anything was sent)
  kBmcError,     // 5xx
  kMalformed,    // an answer that is not the Redfish shape asked for, or over 1 MiB
};

std::string_view to_string(RedfishFailureKind kind);

class RedfishFailure : public std::runtime_error {
 public:
  RedfishFailure(RedfishFailureKind kind, const std::string& what, std::optional<int> status = {})
      : std::runtime_error(what), kind_(kind), status_(status) {}
  RedfishFailureKind kind() const { return kind_; }
  std::optional<int> status() const { return status_; }  // the HTTP status, when one came
  // Timeouts, unreachable BMCs and 5xx may pass; the others will not by themselves.
  bool retryable() const {
    return kind_ == RedfishFailureKind::kTimeout || kind_ == RedfishFailureKind::kUnreachable ||
           kind_ == RedfishFailureKind::kBmcError;
  }

 private:
  RedfishFailureKind kind_;
  std::optional<int> status_;
};

class RedfishClient {
 public:
  // Throws std::invalid_argument with one line when the options are not usable.
  explicit RedfishClient(RedfishClientOptions options);
  ~RedfishClient();
  RedfishClient(const RedfishClient&) = delete;
  RedfishClient& operator=(const RedfishClient&) = delete;

  // GET /redfish/v1/Systems/{system_id}.
  ComputerSystem system(const std::string& system_id);
  // Reads the system, refuses a type it does not allow (its AllowableValues, or its ActionInfo's
  // when it names one) before sending anything, then POSTs {"ResetType": …} to the action target
  // the system gives. 200, 202 and 204 are success: the BMC has taken the request, the power
  // state follows later.
  void reset(const std::string& system_id, ResetType type);
  // GET /redfish/v1/Systems: the members' paths.
  std::vector<std::string> systems();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gpurent::bmc
