// The login probe: the payload's probe checked, ssh's command line, its output condensed, the
// probe key made once.
#include "agent/login_probe.h"

#include "agent/hook_runner.h"
#include "agent/state_files.h"
#include "agent_proto/messages.h"
#include "core/subprocess.h"

#include <arpa/inet.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <sstream>

namespace gpurent::agent {

namespace fs = std::filesystem;

namespace {

constexpr std::string_view kCertType = "ssh-ed25519-cert-v01@openssh.com";
constexpr std::string_view kPrincipalPrefix = "gpurent-probe-";
constexpr std::size_t kMaxCertificateBytes = 16 * 1024;
constexpr std::uint32_t kUserCertificate = 1;  // PROTOCOL.certkeys: SSH2_CERT_TYPE_USER

[[noreturn]] void refuse(const std::string& member, const std::string& why) {
  throw std::invalid_argument("probe." + member + " " + why);
}

std::string member(const nlohmann::json& probe, const char* name) {
  if (!probe.contains(name) || !probe[name].is_string()) refuse(name, "must be a string");
  return probe[name].get<std::string>();
}

bool printable(const std::string& s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return c >= 0x20 && c < 0x7f; });
}

// Standard base64 with padding; nullopt for anything else.
std::optional<std::string> base64_decode(std::string_view in) {
  if (in.empty() || in.size() % 4 != 0) return std::nullopt;
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  std::string out;
  for (std::size_t i = 0; i < in.size(); i += 4) {
    int v[4];
    int pad = 0;
    for (int j = 0; j < 4; ++j) {
      char c = in[i + j];
      if (c == '=' && i + 4 == in.size() && j >= 2) {
        v[j] = 0;
        ++pad;
        continue;
      }
      if (pad || (v[j] = value(c)) < 0) return std::nullopt;
    }
    std::uint32_t n = (v[0] << 18) | (v[1] << 12) | (v[2] << 6) | v[3];
    out += static_cast<char>(n >> 16);
    if (pad < 2) out += static_cast<char>((n >> 8) & 0xff);
    if (pad < 1) out += static_cast<char>(n & 0xff);
  }
  return out;
}

// Reads the SSH wire encoding (RFC 4251 §5) of a certificate blob.
class Wire {
 public:
  explicit Wire(std::string_view data) : data_(data) {}
  std::optional<std::string_view> string() {
    auto n = u32();
    if (!n || data_.size() < *n) return std::nullopt;
    auto s = data_.substr(0, *n);
    data_.remove_prefix(*n);
    return s;
  }
  std::optional<std::uint32_t> u32() {
    if (data_.size() < 4) return std::nullopt;
    std::uint32_t v = 0;
    for (int i = 0; i < 4; ++i) v = (v << 8) | static_cast<unsigned char>(data_[i]);
    data_.remove_prefix(4);
    return v;
  }
  bool skip(std::size_t n) {
    if (data_.size() < n) return false;
    data_.remove_prefix(n);
    return true;
  }

 private:
  std::string_view data_;
};

// The certificate line: the Ed25519 certificate type, a blob that is one (a user
// certificate whose only principal is `principal`), an optional printable comment.
void check_certificate(const std::string& line, const std::string& principal) {
  if (line.size() > kMaxCertificateBytes || !printable(line)) {
    refuse("certificate", "must be one line of printable ASCII of at most 16 KiB");
  }
  std::istringstream words(line);
  std::string type, blob;
  words >> type >> blob;
  if (type != kCertType || line.rfind(std::string(kCertType) + " ", 0) != 0) {
    refuse("certificate", "must be an " + std::string(kCertType) + " certificate line");
  }
  auto raw = base64_decode(blob);
  if (!raw) refuse("certificate", "must hold a base64 certificate");
  Wire w(*raw);
  auto inner_type = w.string();
  auto nonce = w.string();
  auto key = w.string();
  bool shaped = inner_type && *inner_type == kCertType && nonce && key && key->size() == 32 &&
                w.skip(8);  // serial
  auto cert_type = shaped ? w.u32() : std::nullopt;
  auto key_id = cert_type ? w.string() : std::nullopt;
  auto principals = key_id ? w.string() : std::nullopt;
  if (!principals) refuse("certificate", "is not an OpenSSH Ed25519 certificate");
  if (*cert_type != kUserCertificate) refuse("certificate", "must be a user certificate");
  Wire names(*principals);
  std::vector<std::string> listed;
  while (auto name = names.string()) listed.emplace_back(*name);
  if (listed != std::vector<std::string>{principal}) {
    refuse("certificate", "must name the principal " + principal + " alone");
  }
}

bool host_name_ok(const std::string& host) {
  in6_addr v6{};
  in_addr v4{};
  if (::inet_pton(AF_INET, host.c_str(), &v4) == 1 || ::inet_pton(AF_INET6, host.c_str(), &v6) == 1)
    return true;
  if (host.empty() || host.size() > 253) return false;
  std::size_t start = 0;
  while (start <= host.size()) {
    auto dot = host.find('.', start);
    auto label = host.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (label.empty() || label.size() > 63 || label.front() == '-' || label.back() == '-')
      return false;
    if (!std::all_of(label.begin(), label.end(), [](char c) {
          return std::isalnum(static_cast<unsigned char>(c)) || c == '-';
        }))
      return false;
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return true;
}

bool noise(const std::string& line) {
  return line.rfind("Warning: ", 0) == 0 || line.rfind("Could not create directory", 0) == 0 ||
         line.rfind("debug", 0) == 0 || line.rfind("Pseudo-terminal", 0) == 0;
}

}  // namespace

ProbeGrant probe_grant_from(const std::string& rental_id, const nlohmann::json& probe) {
  if (!probe.is_object()) throw std::invalid_argument("probe must be an object");
  for (const auto& [key, value] : probe.items()) {
    if (key != "certificate" && key != "principal" && key != "host" && key != "host_ca_key") {
      throw std::invalid_argument("probe." + key + " is not a member of a probe");
    }
  }
  ProbeGrant g;
  g.principal = member(probe, "principal");
  if (g.principal != std::string(kPrincipalPrefix) + rental_id) {
    refuse("principal", "must be " + std::string(kPrincipalPrefix) + rental_id);
  }
  g.certificate = member(probe, "certificate");
  check_certificate(g.certificate, g.principal);
  g.host = member(probe, "host");
  if (!host_name_ok(g.host)) refuse("host", "must be an RFC 1123 host name or an IP address");
  g.host_ca_key = member(probe, "host_ca_key");
  if (!agent_proto::valid_ssh_host_key(g.host_ca_key)) {
    refuse("host_ca_key", "must be an OpenSSH public key line");
  }
  return g;
}

std::vector<std::string> ssh_probe_argv(const ProbeCommand& c, const std::string& ssh) {
  return {ssh,
          "-F",
          "/dev/null",
          "-o",
          "BatchMode=yes",
          "-o",
          "StrictHostKeyChecking=yes",
          "-o",
          "UserKnownHostsFile=" + c.known_hosts_file.string(),
          "-o",
          "GlobalKnownHostsFile=/dev/null",
          "-o",
          "HostKeyAlias=" + c.host,
          "-o",
          "IdentitiesOnly=yes",
          "-o",
          "IdentityFile=" + c.identity_file.string(),
          "-o",
          "CertificateFile=" + c.certificate_file.string(),
          "-o",
          "ConnectTimeout=5",
          "-p",
          std::to_string(c.sshd.port),
          c.login + "@" + c.sshd.host,
          "true"};
}

std::string condense_ssh_output(const std::string& output) {
  std::vector<std::string> kept;
  std::istringstream lines(output);
  for (std::string line; std::getline(lines, line);) {
    line.erase(std::remove(line.begin(), line.end(), '\r'), line.end());
    std::replace_if(
        line.begin(), line.end(), [](char c) { return c < 0x20 || c == 0x7f; }, ' ');
    auto first = line.find_first_not_of(' ');
    if (first == std::string::npos) continue;
    line = line.substr(first, line.find_last_not_of(' ') - first + 1);
    if (noise(line)) continue;
    kept.push_back(line);
  }
  if (kept.empty()) return "ssh gave no reason";
  std::string out;
  for (auto i = kept.size() > 3 ? kept.size() - 3 : 0; i < kept.size(); ++i) {
    if (!out.empty()) out += "; ";
    out += kept[i];
  }
  if (out.size() > 400) out = out.substr(out.size() - 400);
  return out;
}

ProbeOutcome run_login_probe(const std::string& login, const HostPort& sshd,
                             const ProbeGrant& grant, const fs::path& identity_file,
                             const fs::path& work_dir, std::chrono::milliseconds timeout,
                             const std::stop_token& stop) {
  ProbeOutcome outcome;
  std::string pattern = (work_dir / "probe-XXXXXX").string();
  if (!::mkdtemp(pattern.data())) {
    outcome.reason = "cannot make a folder for the probe under " + work_dir.string();
    return outcome;
  }
  fs::path dir = pattern;
  ProbeCommand command{.login = login,
                       .sshd = sshd,
                       .host = grant.host,
                       .identity_file = identity_file,
                       .certificate_file = dir / "probe-cert.pub",
                       .known_hosts_file = dir / "known_hosts"};
  try {
    write_file_atomic(command.certificate_file, grant.certificate + "\n", 0600);
    write_file_atomic(command.known_hosts_file,
                      "@cert-authority " + grant.host + " " + grant.host_ca_key + "\n", 0600);
  } catch (const StateError& e) {
    std::error_code ec;
    fs::remove_all(dir, ec);
    outcome.reason = e.what();
    return outcome;
  }
  auto r = run_hook({.argv = ssh_probe_argv(command), .env = {}, .input = "", .timeout = timeout},
                    nullptr, stop);
  std::error_code ec;
  fs::remove_all(dir, ec);
  switch (r.end) {
    case HookResult::End::kStopped:
      outcome.stopped = true;
      outcome.reason = "stopped";
      break;
    case HookResult::End::kNotStarted:
      outcome.reason = "ssh could not start: " + condense_ssh_output(r.tail);
      break;
    case HookResult::End::kTimedOut:
      outcome.reason = "ssh timed out: " + condense_ssh_output(r.tail);
      break;
    case HookResult::End::kExited:
      outcome.ok = r.exit_code == 0;
      if (!outcome.ok) outcome.reason = condense_ssh_output(r.tail);
      break;
  }
  return outcome;
}

std::string ensure_probe_key(const fs::path& state_dir) {
  fs::path key = probe_key_path(state_dir);
  fs::path pub = key;
  pub += ".pub";
  std::error_code ec;
  if (!fs::exists(key, ec) || !fs::exists(pub, ec)) {
    fs::remove(key, ec);
    fs::remove(pub, ec);
    auto made = run_subprocess(
        {"ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "gpurent-probe", "-f", key.string()});
    if (made.exit_code != 0) {
      throw std::runtime_error("cannot make the probe key " + key.string() +
                               " with ssh-keygen: " + condense_ssh_output(made.output));
    }
  }
  if (::chmod(key.c_str(), 0600) != 0) {
    throw std::runtime_error("cannot set the mode of " + key.string());
  }
  std::string text;
  try {
    text = read_state_file(pub);
  } catch (const StateError& e) {
    throw std::runtime_error(e.what());
  }
  std::string line = text.substr(0, text.find('\n'));
  if (line.rfind("ssh-ed25519 ", 0) != 0 || !agent_proto::valid_ssh_host_key(line)) {
    throw std::runtime_error(pub.string() + " is not an ssh-ed25519 public key line");
  }
  return line;
}

}  // namespace gpurent::agent
