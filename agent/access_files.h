// The files through which a node's sshd lets a rental's engineers in, written by the
// install_access task and removed by revoke_access. Under the agent's access root (by default
// /etc/gpurent/ssh):
//
//   trusted_user_ca_keys            the platform's user CA keys        (TrustedUserCAKeys)
//   users/<user>/principals         the rental's certificate principal (AuthorizedPrincipalsFile)
//   users/<user>/authorized_keys    the rental's registered keys       (AuthorizedKeysFile)
//   users/<user>/rental             which rental the user belongs to
//
// with sshd configured once, when the node is set up:
//
//   TrustedUserCAKeys /etc/gpurent/ssh/trusted_user_ca_keys
//   AuthorizedPrincipalsFile /etc/gpurent/ssh/users/%u/principals
//   AuthorizedKeysFile /etc/gpurent/ssh/users/%u/authorized_keys
//
// Each rental logs in as a user of its own, so rentals sharing a node (a pair of GPUs each)
// never share a login, and revoking one rental's access leaves the others'. Creating the
// Unix user itself, and reloading sshd, is the operator's access hook.
#pragma once

#include <nlohmann/json.hpp>

#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace gpurent::agent {

struct AccessGrant {
  std::string rental_id;
  std::string user;                          // the login name on the node
  std::vector<std::string> principals;       // certificate principals accepted for the user
  std::vector<std::string> authorized_keys;  // registered public keys, one line each
  std::vector<std::string> user_ca_keys;     // the platform's user CA public keys
  // The node's host certificates, signed by the platform's host CA for its host keys.
  std::vector<std::string> host_certificates;
};

// What an install_access payload grants: {"user", "principals": [...],
// "authorized_keys": [...], "user_ca_keys": [...], "host_certificates": [...]} (the lists
// may be empty; user is needed).
// Every value must be safe to write into sshd's files as one line: a user name as useradd
// takes it, principals of letters, digits and `._@-`, keys as `<type> <base64> [comment]`
// with no options and no control characters. Throws std::invalid_argument naming the field.
AccessGrant access_grant_from(const std::string& rental_id, const nlohmann::json& payload);

// Writes the grant's files (each atomically; the CA keys only when the grant has some), and
// each host certificate as host_certificates/ssh_host_<kind>_key-cert.pub (ed25519, ecdsa,
// rsa), the name sshd's HostCertificate is given beside the host key of the same name.
// Whatever the process's umask: every folder it makes or writes into (the root, users/,
// users/<user>/, host_certificates/) is 0755 and every file 0644, owned by root when the
// agent runs as root, so sshd, which reads a user's files as that user, can read them.
// `extra_principals` are written into the principals file beside the grant's own (the
// login probe's, while it runs).
void install_access(const std::filesystem::path& root, const AccessGrant& grant,
                    const std::vector<std::string>& extra_principals = {});

// Rewrites users/<user>/principals with the grant's principals alone.
void write_principals(const std::filesystem::path& root, const AccessGrant& grant);

// Removes the files of every user that belongs to `rental_id`; a user since given to another
// rental is left alone. Repeating it is harmless. The users removed, by name.
std::vector<std::string> revoke_access(const std::filesystem::path& root,
                                       const std::string& rental_id);

// Whether users/<user>/ under `root` belongs to a rental other than `rental_id` (its rental
// file names another).
bool login_taken_by_other(const std::filesystem::path& root, const std::string& user,
                          const std::string& rental_id);

// Whether `user` is a login name as useradd takes it ([a-z_][a-z0-9_-]{0,31}).
bool valid_login_name(const std::string& user);

// Why sshd, reading a user's files as that user, could not reach the files under `root`:
// "/var/lib/gpurent-agent is mode 0700: others cannot search it" for the first of the root's
// existing ancestors, the root itself or a folder under it that others cannot search
// (o+x), or "… is mode 0600: others cannot read it" for a file under it others cannot read
// (o+r). nullopt when there is nothing in the way (parts not made yet are made 0755).
std::optional<std::string> sshd_access_problem(const std::filesystem::path& root);

}  // namespace gpurent::agent
