// Access files: validation of what goes into sshd's files, and writing them.
#include "agent/access_files.h"

#include "agent/state_files.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

namespace gpurent::agent {
namespace {

namespace fs = std::filesystem;

constexpr std::size_t kMaxList = 64;
constexpr std::size_t kMaxKeyBytes = 16 * 1024;

constexpr mode_t kDirMode = 0755;
constexpr mode_t kFileMode = 0644;

[[noreturn]] void fail_at(const std::string& what, const fs::path& path) {
  throw StateError(what + " " + path.string() + ": " + std::strerror(errno));
}

// Root's when the agent is root (the files' owner must be root or the user for sshd).
void own(const fs::path& path) {
  if (::geteuid() == 0 && ::chown(path.c_str(), 0, 0) != 0) fail_at("cannot chown", path);
}

// `dir` exists as a folder, 0755 (root's, when the agent is root) whatever the umask; the
// folders above it that had to be made are 0755 too. Existing ancestors are left as they are.
void make_dir(const fs::path& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    if (dir.has_parent_path() && dir.parent_path() != dir) {
      fs::path parent = dir.parent_path();
      if (!fs::is_directory(parent, ec)) {
        make_dir(parent);
      }
    }
    if (::mkdir(dir.c_str(), kDirMode) != 0 && errno != EEXIST) fail_at("cannot make", dir);
  }
  if (::chmod(dir.c_str(), kDirMode) != 0) fail_at("cannot set the mode of", dir);
  own(dir);
}

void write_access_file(const fs::path& path, const std::string& content) {
  write_file_atomic(path, content, kFileMode);
  own(path);
}

std::string octal_mode(mode_t mode) {
  char text[8];
  std::snprintf(text, sizeof text, "%04o", static_cast<unsigned>(mode & 07777));
  return text;
}

}  // namespace

bool valid_login_name(const std::string& u) {
  if (u.empty() || u.size() > 32) return false;
  if (!(std::islower(static_cast<unsigned char>(u[0])) || u[0] == '_')) return false;
  return std::all_of(u.begin(), u.end(), [](char c) {
    return std::islower(static_cast<unsigned char>(c)) ||
           std::isdigit(static_cast<unsigned char>(c)) || c == '_' || c == '-';
  });
}

namespace {

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
      !valid_login_name(payload["user"].get<std::string>())) {
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

void install_access(const fs::path& root, const AccessGrant& grant,
                    const std::vector<std::string>& extra_principals) {
  fs::path dir = root / "users" / grant.user;
  make_dir(root);
  make_dir(root / "users");
  make_dir(dir);
  // The rental file first: a revoke racing this install finds the user already taken.
  write_access_file(dir / "rental", grant.rental_id + "\n");
  auto principals = grant.principals;
  principals.insert(principals.end(), extra_principals.begin(), extra_principals.end());
  write_access_file(dir / "principals", lines(principals));
  write_access_file(dir / "authorized_keys", lines(grant.authorized_keys));
  if (!grant.user_ca_keys.empty()) {
    write_access_file(root / "trusted_user_ca_keys", lines(grant.user_ca_keys));
  }
  if (!grant.host_certificates.empty()) make_dir(root / "host_certificates");
  for (const auto& c : grant.host_certificates) {
    write_access_file(
        root / "host_certificates" / ("ssh_host_" + host_key_kind(c) + "_key-cert.pub"), c + "\n");
  }
}

void write_principals(const fs::path& root, const AccessGrant& grant) {
  write_access_file(root / "users" / grant.user / "principals", lines(grant.principals));
}

bool login_taken_by_other(const fs::path& root, const std::string& user,
                          const std::string& rental_id) {
  std::ifstream in(root / "users" / user / "rental");
  std::string owner;
  if (!in || !std::getline(in, owner)) return false;
  return owner != rental_id;
}

std::vector<std::string> revoke_access(const fs::path& root, const std::string& rental_id) {
  fs::path users = root / "users";
  std::error_code ec;
  std::vector<std::string> removed;
  if (!fs::is_directory(users, ec)) return removed;
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
    removed.push_back(entry.path().filename().string());
  }
  std::sort(removed.begin(), removed.end());
  return removed;
}

std::optional<std::string> sshd_access_problem(const fs::path& root) {
  auto searchable = [](const fs::path& p, const struct stat& st) -> std::optional<std::string> {
    if (st.st_mode & S_IXOTH) return std::nullopt;
    return p.string() + " is mode " + octal_mode(st.st_mode) + ": others cannot search it";
  };
  // From / down to the root: the first folder in the way is the one to fix.
  fs::path absolute = fs::absolute(root).lexically_normal();
  fs::path walked;
  for (const auto& part : absolute) {
    walked /= part;
    struct stat st {};
    if (::stat(walked.c_str(), &st) != 0) return std::nullopt;  // made 0755 when needed
    if (!S_ISDIR(st.st_mode)) return walked.string() + " is not a folder";
    if (auto problem = searchable(walked, st)) return problem;
  }
  std::error_code ec;
  std::vector<fs::path> found;
  for (fs::recursive_directory_iterator it(absolute, ec), end; !ec && it != end; it.increment(ec)) {
    if (found.size() >= 4096) break;  // far more than sshd's files: enough to judge
    found.push_back(it->path());
  }
  std::sort(found.begin(), found.end());
  for (const auto& p : found) {
    struct stat st {};
    if (::stat(p.c_str(), &st) != 0) continue;
    if (S_ISDIR(st.st_mode)) {
      if (auto problem = searchable(p, st)) return problem;
    } else if (S_ISREG(st.st_mode) && !(st.st_mode & S_IROTH)) {
      return p.string() + " is mode " + octal_mode(st.st_mode) + ": others cannot read it";
    }
  }
  return std::nullopt;
}

}  // namespace gpurent::agent
