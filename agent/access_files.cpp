// Access files: validation of what goes into sshd's files, and writing them.
#include "agent/access_files.h"

#include "agent/state_files.h"

#include <algorithm>
#include <fstream>
#include <sstream>

namespace gpurent::agent {
namespace {

namespace fs = std::filesystem;

constexpr std::size_t kMaxList = 64;
constexpr std::size_t kMaxKeyBytes = 16 * 1024;

bool user_name_ok(const std::string& u) {
  if (u.empty() || u.size() > 32) return false;
  if (!(std::islower(static_cast<unsigned char>(u[0])) || u[0] == '_')) return false;
  return std::all_of(u.begin(), u.end(), [](char c) {
    return std::islower(static_cast<unsigned char>(c)) ||
           std::isdigit(static_cast<unsigned char>(c)) || c == '_' || c == '-';
  });
}

bool principal_ok(const std::string& p) {
  return !p.empty() && p.size() <= 256 && std::all_of(p.begin(), p.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '@' ||
           c == '-';
  });
}

// `<type> <base64> [comment]`: a key type sshd knows the shape of, no leading options (an
// authorized_keys line may start with `command="…"`, which a grant must never smuggle in),
// printable ASCII only.
bool public_key_ok(const std::string& k) {
  if (k.empty() || k.size() > kMaxKeyBytes) return false;
  if (!std::all_of(k.begin(), k.end(), [](char c) { return c >= 0x20 && c < 0x7f; })) {
    return false;
  }
  std::istringstream words(k);
  std::string type, blob;
  words >> type >> blob;
  bool known_type =
      type.rfind("ssh-", 0) == 0 || type.rfind("ecdsa-sha2-", 0) == 0 || type.rfind("sk-", 0) == 0;
  bool base64 = !blob.empty() && std::all_of(blob.begin(), blob.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '+' || c == '/' || c == '=';
  });
  return known_type && base64 && k.front() != ' ';
}

std::vector<std::string> string_list(const nlohmann::json& payload, const char* field,
                                     bool (*ok)(const std::string&)) {
  std::vector<std::string> out;
  if (!payload.contains(field)) return out;
  const auto& list = payload.at(field);
  if (!list.is_array() || list.size() > kMaxList) {
    throw std::invalid_argument(std::string(field) + " must be a list of at most 64");
  }
  for (const auto& item : list) {
    if (!item.is_string() || !ok(item.get<std::string>())) {
      throw std::invalid_argument(std::string(field) + " holds a value sshd must not be given");
    }
    out.push_back(item.get<std::string>());
  }
  return out;
}

// "ssh-ed25519-cert-v01@openssh.com", "ecdsa-sha2-nistp256-cert-v01@openssh.com",
// "ssh-rsa-cert-v01@openssh.com" → "ed25519", "ecdsa", "rsa"; "" for any other type.
std::string host_key_kind(const std::string& certificate) {
  std::string type = certificate.substr(0, certificate.find(' '));
  if (type == "ssh-ed25519-cert-v01@openssh.com") return "ed25519";
  if (type.rfind("ecdsa-sha2-nistp", 0) == 0 &&
      type.find("-cert-v01@openssh.com") != std::string::npos)
    return "ecdsa";
  if (type == "ssh-rsa-cert-v01@openssh.com") return "rsa";
  return "";
}

bool host_certificate_ok(const std::string& c) {
  return !host_key_kind(c).empty() && public_key_ok(c);
}

std::string lines(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& i : items) out += i + "\n";
  return out;
}

}  // namespace

AccessGrant access_grant_from(const std::string& rental_id, const nlohmann::json& payload) {
  AccessGrant g;
  g.rental_id = rental_id;
  if (!payload.is_object() || !payload.contains("user") || !payload["user"].is_string() ||
      !user_name_ok(payload["user"].get<std::string>())) {
    throw std::invalid_argument("user must be a login name ([a-z_][a-z0-9_-]{0,31})");
  }
  g.user = payload["user"].get<std::string>();
  g.principals = string_list(payload, "principals", principal_ok);
  g.authorized_keys = string_list(payload, "authorized_keys", public_key_ok);
  g.user_ca_keys = string_list(payload, "user_ca_keys", public_key_ok);
  g.host_certificates = string_list(payload, "host_certificates", host_certificate_ok);
  if (!principal_ok(rental_id)) throw std::invalid_argument("the rental id is not a name");
  return g;
}

void install_access(const fs::path& root, const AccessGrant& grant) {
  fs::path dir = root / "users" / grant.user;
  fs::create_directories(dir);
  fs::permissions(root, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                            fs::perms::others_read | fs::perms::others_exec);
  // The rental file first: a revoke racing this install finds the user already taken.
  write_file_atomic(dir / "rental", grant.rental_id + "\n", 0644);
  write_file_atomic(dir / "principals", lines(grant.principals), 0644);
  write_file_atomic(dir / "authorized_keys", lines(grant.authorized_keys), 0644);
  if (!grant.user_ca_keys.empty()) {
    write_file_atomic(root / "trusted_user_ca_keys", lines(grant.user_ca_keys), 0644);
  }
  if (!grant.host_certificates.empty()) fs::create_directories(root / "host_certificates");
  for (const auto& c : grant.host_certificates) {
    write_file_atomic(
        root / "host_certificates" / ("ssh_host_" + host_key_kind(c) + "_key-cert.pub"), c + "\n",
        0644);
  }
}

int revoke_access(const fs::path& root, const std::string& rental_id) {
  fs::path users = root / "users";
  std::error_code ec;
  if (!fs::is_directory(users, ec)) return 0;
  int removed = 0;
  for (const auto& entry : fs::directory_iterator(users, ec)) {
    std::ifstream in(entry.path() / "rental");
    std::string owner;
    std::getline(in, owner);
    if (owner != rental_id) continue;
    // The key files go first, then the marker: an interrupted revoke is done again in full.
    fs::remove(entry.path() / "authorized_keys", ec);
    fs::remove(entry.path() / "principals", ec);
    fs::remove(entry.path() / "rental", ec);
    fs::remove(entry.path(), ec);
    ++removed;
  }
  return removed;
}

}  // namespace gpurent::agent
