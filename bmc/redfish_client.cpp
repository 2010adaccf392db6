// The Redfish client's I/O: one blocking HTTP/1.1 exchange per call with Boost.Beast over TCP or
// TLS, every step within one deadline. The only translation unit of bmc/ that includes Beast and
// Asio (named in the top-level CMakeLists.txt's gpurent_io_sources).
#include "bmc/redfish_client.h"

#include "core/crypto.h"
#include "core/outbound_http.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <stdexcept>

namespace gpurent::bmc {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;

struct BaseUrl {
  bool https = true;
  std::string host;  // without brackets
  std::uint16_t port = 443;
  bool host_is_ip = false;
};

BaseUrl parse_base_url(const std::string& text, bool allow_plain_http) {
  BaseUrl url;
  std::string rest;
  if (text.rfind("https://", 0) == 0) {
    rest = text.substr(8);
  } else if (text.rfind("http://", 0) == 0) {
    if (!allow_plain_http) {
      throw std::invalid_argument("BMC URL " + text + " is plain http; only https is allowed");
    }
    url.https = false;
    url.port = 80;
    rest = text.substr(7);
  } else {
    throw std::invalid_argument("BMC URL " + text + " does not start with https://");
  }
  if (!rest.empty() && rest.back() == '/') rest.pop_back();
  if (rest.find_first_of("/?#@ ") != std::string::npos || rest.empty()) {
    throw std::invalid_argument("BMC URL " + text + " must be scheme://host[:port] alone");
  }
  std::string port;
  bool has_port = false;
  if (rest.front() == '[') {
    auto close = rest.find(']');
    if (close == std::string::npos) throw std::invalid_argument("BMC URL " + text + ": unclosed [");
    url.host = rest.substr(1, close - 1);
    if (close + 1 < rest.size()) {
      if (rest[close + 1] != ':') throw std::invalid_argument("BMC URL " + text + ": bad port");
      has_port = true;
      port = rest.substr(close + 2);
    }
  } else {
    auto colon = rest.find(':');
    url.host = rest.substr(0, colon);
    if (colon != std::string::npos) {
      has_port = true;
      port = rest.substr(colon + 1);
    }
  }
  if (url.host.empty()) throw std::invalid_argument("BMC URL " + text + " has no host");
  if (has_port) {
    if (port.empty() || port.size() > 5 ||
        !std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; }) ||
        std::stoi(port) < 1 || std::stoi(port) > 65535) {
      throw std::invalid_argument("BMC URL " + text + ": the port is not 1-65535");
    }
    url.port = static_cast<std::uint16_t>(std::stoi(port));
  }
  beast::error_code ec;
  asio::ip::make_address(url.host, ec);
  url.host_is_ip = !ec;
  return url;
}

// "AB:cd:…" → "abcd…"; empty when it is not 32 bytes of hex.
std::string normalized_fingerprint(const std::string& text) {
  std::string hex;
  for (char c : text) {
    if (c == ':') continue;
    if (!std::isxdigit(static_cast<unsigned char>(c))) return "";
    hex += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return hex.size() == 64 ? hex : "";
}

std::string system_path(const std::string& system_id) {
  if (!is_valid_system_id(system_id)) {
    throw RedfishFailure(RedfishFailureKind::kRefused,
                         "system id \"" + system_id.substr(0, 64) +
                             "\" is not a Redfish id (letters, digits, \"._-~\")");
  }
  return "/redfish/v1/Systems/" + system_id;
}

struct Answer {
  int status = 0;
  std::string body;
  std::string location;
};

}  // namespace

std::string_view to_string(RedfishFailureKind kind) {
  switch (kind) {
    case RedfishFailureKind::kUnreachable:
      return "unreachable";
    case RedfishFailureKind::kTimeout:
      return "timeout";
    case RedfishFailureKind::kUntrusted:
      return "untrusted";
    case RedfishFailureKind::kAuth:
      return "auth";
    case RedfishFailureKind::kRefused:
      return "refused";
    case RedfishFailureKind::kBmcError:
      return "bmc_error";
    case RedfishFailureKind::kMalformed:
      return "malformed";
  }
  return "?";
}

struct RedfishClient::Impl {
  RedfishClientOptions options;
  BaseUrl url;
  std::string pin;  // normalized, or empty
  std::string authorization;
  asio::ssl::context tls{asio::ssl::context::tls_client};

  explicit Impl(RedfishClientOptions o) : options(std::move(o)) {
    url = parse_base_url(options.base_url, options.allow_plain_http);
    if (options.username.empty()) throw std::invalid_argument("BMC username is empty");
    if (options.timeout <= std::chrono::milliseconds(0)) {
      throw std::invalid_argument("BMC timeout must be positive");
    }
    if (!options.pinned_sha256.empty()) {
      pin = normalized_fingerprint(options.pinned_sha256);
      if (pin.empty()) {
        throw std::invalid_argument("BMC certificate fingerprint is not 64 hex digits (SHA-256)");
      }
      if (!options.ca_file.empty()) {
        throw std::invalid_argument("give the BMC's CA file or its pinned fingerprint, not both");
      }
    }
    authorization = "Basic " + crypto::base64(options.username + ":" + options.password);
    tls.set_options(asio::ssl::context::default_workarounds | asio::ssl::context::no_sslv2 |
                    asio::ssl::context::no_sslv3 | asio::ssl::context::no_tlsv1 |
                    asio::ssl::context::no_tlsv1_1);
    tls.set_verify_mode(asio::ssl::verify_peer);
    if (!options.ca_file.empty()) {
      beast::error_code ec;
      tls.load_verify_file(options.ca_file, ec);
      if (ec) {
        throw std::invalid_argument("cannot read the BMC CA file " + options.ca_file + ": " +
                                    ec.message());
      }
    } else if (pin.empty()) {
      tls.set_default_verify_paths();
    }
  }

  static bool run_until(asio::io_context& ioc, const bool& done, Clock::time_point deadline) {
    return outbound_http::run_until(ioc, done, deadline);
  }

  [[noreturn]] void timed_out(const std::string& step) const {
    throw RedfishFailure(RedfishFailureKind::kTimeout,
                         "BMC " + options.base_url + ": no answer within " +
                             std::to_string(options.timeout.count()) + " ms (" + step + ")");
  }

  [[noreturn]] void unreachable(const std::string& what) const {
    throw RedfishFailure(RedfishFailureKind::kUnreachable,
                         "BMC " + options.base_url + " unreachable: " + what);
  }

  Answer exchange(http::verb verb, const std::string& target, const std::string& body) {
    const auto deadline = Clock::now() + options.timeout;
    asio::io_context ioc;
    beast::error_code ec;

    std::vector<tcp::endpoint> endpoints;
    if (url.host_is_ip) {
      endpoints.emplace_back(asio::ip::make_address(url.host), url.port);
    } else {
      tcp::resolver resolver(ioc);
      bool resolved = false;
      resolver.async_resolve(url.host, std::to_string(url.port),
                             [&](beast::error_code e, tcp::resolver::results_type results) {
                               ec = e;
                               for (const auto& r : results) endpoints.push_back(r.endpoint());
                               resolved = true;
                             });
      if (!run_until(ioc, resolved, deadline)) {
        resolver.cancel();
        timed_out("resolving the host");
      }
      if (ec || endpoints.empty()) unreachable("could not resolve " + url.host);
    }

    beast::tcp_stream stream(ioc);
    bool connected = false;
    stream.async_connect(endpoints, [&](beast::error_code e, const tcp::endpoint&) {
      ec = e;
      connected = true;
    });
    if (!run_until(ioc, connected, deadline)) {
      stream.socket().close(ec);
      timed_out("connecting");
    }
    if (ec) unreachable("could not connect: " + ec.message());

    http::request<http::string_body> req{verb, target, 11};
    req.set(http::field::host,
            (url.host.find(':') != std::string::npos ? "[" + url.host + "]" : url.host) + ":" +
                std::to_string(url.port));
    req.set(http::field::user_agent, "gpurent-bmc");
    req.set(http::field::accept, "application/json");
    req.set("OData-Version", "4.0");
    req.set(http::field::authorization, authorization);
    req.set(http::field::connection, "close");
    if (verb == http::verb::post) {
      req.set(http::field::content_type, "application/json");
      req.body() = body;
    }
    req.prepare_payload();

    if (!url.https) return talk(ioc, stream, req, deadline);

    beast::ssl_stream<beast::tcp_stream> tls_stream(std::move(stream), tls);
    if (!url.host_is_ip && !SSL_set_tlsext_host_name(tls_stream.native_handle(),
                                                     const_cast<char*>(url.host.c_str()))) {
      unreachable("could not set the TLS server name");
    }
    bool pin_mismatch = false;
    if (!pin.empty()) {
      // Only the leaf is looked at: it is the certificate pinned, whoever signed it.
      tls_stream.set_verify_callback([this, &pin_mismatch](bool, asio::ssl::verify_context& ctx) {
        X509_STORE_CTX* store = ctx.native_handle();
        if (X509_STORE_CTX_get_error_depth(store) > 0) return true;
        X509* cert = X509_STORE_CTX_get_current_cert(store);
        unsigned char md[EVP_MAX_MD_SIZE];
        unsigned int n = 0;
        if (!cert || X509_digest(cert, EVP_sha256(), md, &n) != 1) return false;
        bool match = crypto::to_hex(md, n) == pin;
        if (!match) pin_mismatch = true;
        return match;
      });
    } else {
      tls_stream.set_verify_callback(asio::ssl::host_name_verification(url.host));
    }
    if (outbound_http::handshake(ioc, tls_stream, deadline, ec) ==
        outbound_http::Handshake::kTimedOut) {
      timed_out("TLS handshake");
    }
    if (pin_mismatch) {
      throw RedfishFailure(
          RedfishFailureKind::kUntrusted,
          "BMC " + options.base_url + ": its certificate is not the one pinned (SHA-256 differs)");
    }
    if (ec) {
      bool verify = ec.category() == asio::error::get_ssl_category() &&
                    ERR_GET_REASON(ec.value()) == SSL_R_CERTIFICATE_VERIFY_FAILED;
      if (verify) {
        throw RedfishFailure(
            RedfishFailureKind::kUntrusted,
            "BMC " + options.base_url + ": its certificate is not trusted: " + ec.message());
      }
      unreachable("TLS handshake failed: " + ec.message());
    }
    return talk(ioc, tls_stream, req, deadline);
  }

  template <typename Stream>
  Answer talk(asio::io_context& ioc, Stream& stream, http::request<http::string_body>& req,
              Clock::time_point deadline) {
    outbound_http::Exchange x;
    outbound_http::exchange(ioc, stream, req, deadline, kMaxRedfishBodyBytes, x);
    switch (x.ending) {
      case outbound_http::Ending::kWriteTimedOut:
        timed_out("sending the request");
      case outbound_http::Ending::kWriteFailed:
        unreachable("could not send the request: " + x.error.message());
      case outbound_http::Ending::kReadTimedOut:
        timed_out("waiting for the response");
      case outbound_http::Ending::kReadFailed:
        if (x.error == http::error::body_limit) {
          throw RedfishFailure(RedfishFailureKind::kMalformed,
                               "BMC " + options.base_url + ": an answer over 1 MiB, refused",
                               static_cast<int>(x.parser.get().result_int()));
        }
        if (x.parser.is_header_done()) {
          throw RedfishFailure(
              RedfishFailureKind::kMalformed,
              "BMC " + options.base_url + ": a broken answer: " + x.error.message(),
              static_cast<int>(x.parser.get().result_int()));
        }
        unreachable("no HTTP answer: " + x.error.message());
      case outbound_http::Ending::kAnswered:
        break;
    }
    auto& res = x.parser.get();
    Answer answer;
    answer.status = static_cast<int>(res.result_int());
    answer.body = std::move(res.body());
    if (auto it = res.find(http::field::location); it != res.end()) {
      answer.location = std::string(it->value().substr(0, 200));
    }
    return answer;
  }

  // An exchange whose answer must be 2xx; other statuses become their failure kinds.
  Answer checked(http::verb verb, const std::string& target, const std::string& body = "") {
    Answer a = exchange(verb, target, body);
    const std::string what = std::string(http::to_string(verb)) + " " + target;
    if (a.status >= 200 && a.status < 300) return a;
    std::string detail;
    try {
      detail = redfish_error_sentence(a.body);
    } catch (const RedfishError&) {
      detail = "no Redfish error in the answer";
    }
    const std::string prefix =
        "BMC " + options.base_url + " answered " + std::to_string(a.status) + " to " + what + ": ";
    if (a.status == 401 || a.status == 403) {
      throw RedfishFailure(RedfishFailureKind::kAuth,
                           prefix + "the credentials of " + options.username.substr(0, 64) +
                               " were refused (" + detail + ")",
                           a.status);
    }
    if (a.status >= 300 && a.status < 400) {
      throw RedfishFailure(RedfishFailureKind::kRefused,
                           prefix + "a redirect" + (a.location.empty() ? "" : " to " + a.location) +
                               ", which is not followed",
                           a.status);
    }
    if (a.status >= 400 && a.status < 500) {
      throw RedfishFailure(RedfishFailureKind::kRefused, prefix + detail, a.status);
    }
    if (a.status >= 500 && a.status < 600) {
      throw RedfishFailure(RedfishFailureKind::kBmcError, prefix + detail, a.status);
    }
    throw RedfishFailure(RedfishFailureKind::kMalformed, prefix + "an unexpected status", a.status);
  }

  template <typename Parse>
  auto parsed(const std::string& target, Parse parse) {
    Answer a = checked(http::verb::get, target);
    try {
      return parse(a.body);
    } catch (const RedfishError& e) {
      throw RedfishFailure(RedfishFailureKind::kMalformed,
                           "BMC " + options.base_url + ": GET " + target + ": " + e.what(),
                           a.status);
    }
  }
};

RedfishClient::RedfishClient(RedfishClientOptions options)
    : impl_(std::make_unique<Impl>(std::move(options))) {}

RedfishClient::~RedfishClient() = default;

ComputerSystem RedfishClient::system(const std::string& system_id) {
  return impl_->parsed(system_path(system_id),
                       [](const std::string& body) { return parse_computer_system(body); });
}

std::vector<std::string> RedfishClient::systems() {
  return impl_->parsed("/redfish/v1/Systems",
                       [](const std::string& body) { return parse_system_collection(body); });
}

void RedfishClient::reset(const std::string& system_id, ResetType type) {
  ComputerSystem sys = system(system_id);
  const std::string name(to_string(type));
  if (!sys.reset) {
    throw RedfishFailure(RedfishFailureKind::kRefused,
                         "system " + system_id + " has no ComputerSystem.Reset action");
  }
  std::optional<std::vector<ResetType>> allowed = sys.reset->allowable;
  if (!allowed && sys.reset->action_info) {
    allowed = impl_->parsed(*sys.reset->action_info,
                            [](const std::string& body) { return parse_reset_action_info(body); });
  }
  // A service that lists nothing leaves the check to itself (its 400 names the value).
  if (allowed && std::find(allowed->begin(), allowed->end(), type) == allowed->end()) {
    std::string list;
    for (auto t : *allowed) list += (list.empty() ? "" : ", ") + std::string(to_string(t));
    throw RedfishFailure(RedfishFailureKind::kRefused,
                         "system " + system_id + " does not allow the reset type " + name +
                             " (it allows: " + (list.empty() ? "none" : list) + ")");
  }
  nlohmann::json request = {{"ResetType", name}};
  auto answer = impl_->checked(boost::beast::http::verb::post, sys.reset->target, request.dump());
  if (answer.status != 200 && answer.status != 202 && answer.status != 204) {
    throw RedfishFailure(RedfishFailureKind::kMalformed,
                         "BMC " + impl_->options.base_url + " answered " +
                             std::to_string(answer.status) + " to the reset, not 200, 202 or 204",
                         answer.status);
  }
}

}  // namespace gpurent::bmc
