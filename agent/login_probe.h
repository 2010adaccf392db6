// The login probe: before install_access reports a rental's access ready, the agent logs in
// to the node's own sshd with OpenSSH's client, as the rental's login, with a short-lived
// certificate the control plane signed with the platform's user CA for the agent's own key
// (`<state-dir>/ssh_probe_key`, whose private half never leaves the node). The handshake
// checks the node's host certificate against the platform's host CA (no trust on first use),
// and the certificate's only principal, gpurent-probe-<rental id>, is one the API never puts
// on a customer's certificate; its forced command is /bin/true and it allows nothing else.
// What the probe proves is exactly what an engineer's login needs: sshd running with the
// drop-in's files, the host certificate, the user CA, the login and its principals file.
#pragma once

#include "agent/sshd_banner.h"

#include <nlohmann/json.hpp>

#include <chrono>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <stop_token>
#include <string>
#include <vector>

namespace gpurent::agent {

// An install_access payload's "probe": {"certificate", "principal", "host", "host_ca_key"}.
struct ProbeGrant {
  std::string certificate;  // "ssh-ed25519-cert-v01@openssh.com AAAA… [comment]"
  std::string principal;    // "gpurent-probe-<rental id>"
  std::string host;         // the name the node's host certificate carries
  std::string host_ca_key;  // the platform's host CA public key line
};

// The payload's "probe" member, checked: a user certificate line of the Ed25519 type, the
// principal gpurent-probe-<rental_id>, an RFC 1123 host name or an IP address, a public key
// line. Throws std::invalid_argument naming the member ("probe.host …").
ProbeGrant probe_grant_from(const std::string& rental_id, const nlohmann::json& probe);

// What one ssh run needs.
struct ProbeCommand {
  std::string login;
  HostPort sshd;                        // where the node's sshd listens
  std::string host;                     // HostKeyAlias: the host certificate's name
  std::filesystem::path identity_file;  // the agent's probe key
  std::filesystem::path certificate_file;
  std::filesystem::path known_hosts_file;  // "@cert-authority <host> <host CA key>"
};

// OpenSSH's client command line for `c`: no configuration file, no prompts, the host key
// checked against the known hosts file alone, this identity alone, `true` as the command.
std::vector<std::string> ssh_probe_argv(const ProbeCommand& c, const std::string& ssh = "ssh");

// What ssh said, as one line: its last error lines (at most three, joined with "; ", at most
// 400 bytes), warnings and blank lines left out; "ssh gave no reason" when nothing is left.
std::string condense_ssh_output(const std::string& output);

struct ProbeOutcome {
  bool ok = false;
  bool stopped = false;  // the agent is stopping
  std::string reason;    // when not ok: ssh's condensed output, or why it did not run
};

// Runs the probe once: writes the certificate and the known hosts line beside each other in
// a private temporary folder under `work_dir`, runs ssh (at most `timeout`), removes them.
ProbeOutcome run_login_probe(const std::string& login, const HostPort& sshd,
                             const ProbeGrant& grant, const std::filesystem::path& identity_file,
                             const std::filesystem::path& work_dir,
                             std::chrono::milliseconds timeout, const std::stop_token& stop);

// The agent's probe key: `<state_dir>/ssh_probe_key` (0600) and its `.pub`, made with
// `ssh-keygen -q -t ed25519 -N '' -C gpurent-probe` when either is missing. Returns the
// public key line for the hello; throws std::runtime_error saying what failed.
std::string ensure_probe_key(const std::filesystem::path& state_dir);

inline std::filesystem::path probe_key_path(const std::filesystem::path& state_dir) {
  return state_dir / "ssh_probe_key";
}

}  // namespace gpurent::agent
