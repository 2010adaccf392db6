// Key backups: collect, seal with a passphrase, open, restore.
#include "core/key_backup.h"

#include "core/crypto.h"

#include <openssl/evp.h>
#include <nlohmann/json.hpp>

#include <sys/stat.h>

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>

namespace gpurent::keys {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kHeader = "gpurent key backup 1 scrypt ln=";
constexpr int kMinLog2N = 10;
constexpr int kMaxLog2N = 20;
constexpr std::size_t kSaltBytes = 16;
constexpr std::size_t kMinPassphrase = 12;
constexpr const char* kAgentPki = "agent_pki";
constexpr const char* kSshCa = "ssh_ca";

std::string derive_key(std::string_view passphrase, std::string_view salt, int log2_n) {
  std::string key(32, '\0');
  if (EVP_PBE_scrypt(passphrase.data(), passphrase.size(),
                     reinterpret_cast<const unsigned char*>(salt.data()), salt.size(),
                     std::uint64_t{1} << log2_n, 8, 1, 2048ull * 1024 * 1024,
                     reinterpret_cast<unsigned char*>(key.data()), key.size()) != 1) {
    throw std::runtime_error("scrypt failed");
  }
  return key;
}

std::string unbase64(std::string_view text) {
  std::string clean;
  for (char c : text) {
    if (c != '\n' && c != '\r' && c != ' ') clean.push_back(c);
  }
  if (clean.empty() || clean.size() % 4 != 0) throw KeyBackupError("the backup is damaged");
  std::string out(3 * clean.size() / 4, '\0');
  int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(clean.data()),
                          static_cast<int>(clean.size()));
  if (n < 0) throw KeyBackupError("the backup is damaged");
  // EVP_DecodeBlock counts the padding's zero bytes too.
  std::size_t padding = clean.ends_with("==") ? 2 : clean.ends_with("=") ? 1 : 0;
  out.resize(static_cast<std::size_t>(n) - padding);
  return out;
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw KeyBackupError("cannot read " + path.string());
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

bool plain_name(const std::string& name) {
  return !name.empty() && name != "." && name != ".." && name.find('/') == std::string::npos &&
         name.find('\0') == std::string::npos;
}

}  // namespace

std::vector<KeyFile> collect(const std::string& agent_pki_dir, const std::string& ssh_ca_dir) {
  std::vector<KeyFile> out;
  for (const auto& [folder, dir] : {std::pair{kAgentPki, agent_pki_dir}, {kSshCa, ssh_ca_dir}}) {
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) throw KeyBackupError(dir + " is not a folder");
    std::map<std::string, std::string> found;  // by name, so the order is stable
    for (const auto& entry : fs::directory_iterator(dir)) {
      std::string name = entry.path().filename().string();
      if (!entry.is_regular_file() || name == ".lock") continue;
      found[name] = read_file(entry.path());
    }
    if (found.empty()) throw KeyBackupError(dir + " holds no key: nothing to back up");
    for (auto& [name, content] : found) out.push_back({folder, name, std::move(content)});
  }
  return out;
}

std::string seal(const std::vector<KeyFile>& files, std::string_view passphrase, int log2_n) {
  if (log2_n < kMinLog2N || log2_n > kMaxLog2N) {
    throw std::invalid_argument("scrypt cost out of range: " + std::to_string(log2_n));
  }
  if (passphrase.size() < kMinPassphrase) {
    throw KeyBackupError("the passphrase must be at least " + std::to_string(kMinPassphrase) +
                         " bytes");
  }
  nlohmann::json list = nlohmann::json::array();
  for (const auto& f : files) {
    list.push_back(
        {{"folder", f.folder}, {"name", f.name}, {"content", crypto::base64(f.content)}});
  }
  auto salt_bytes = crypto::random_bytes(kSaltBytes);
  std::string salt(salt_bytes.begin(), salt_bytes.end());
  const std::string header = std::string(kHeader) + std::to_string(log2_n);
  std::string sealed = crypto::seal(derive_key(passphrase, salt, log2_n),
                                    nlohmann::json{{"files", list}}.dump(), header);
  std::string body = crypto::base64(salt + sealed);
  std::string out = header + "\n";
  for (std::size_t at = 0; at < body.size(); at += 76) out += body.substr(at, 76) + "\n";
  return out;
}

std::vector<KeyFile> open(std::string_view text, std::string_view passphrase) {
  auto newline = text.find('\n');
  std::string_view header = text.substr(0, newline);
  int log2_n = 0;
  std::string_view cost = header.substr(std::min(header.size(), kHeader.size()));
  auto [end, ec] = std::from_chars(cost.data(), cost.data() + cost.size(), log2_n);
  if (newline == std::string_view::npos || !header.starts_with(kHeader) || cost.empty() ||
      ec != std::errc() || end != cost.data() + cost.size() || log2_n < kMinLog2N ||
      log2_n > kMaxLog2N) {
    throw KeyBackupError("not a gpurent key backup (the first line is not \"" +
                         std::string(kHeader) + "N\", N from " + std::to_string(kMinLog2N) +
                         " to " + std::to_string(kMaxLog2N) + ")");
  }
  std::string raw = unbase64(text.substr(newline + 1));
  if (raw.size() <= kSaltBytes) throw KeyBackupError("the backup is damaged");
  auto plain = crypto::open(derive_key(passphrase, raw.substr(0, kSaltBytes), log2_n),
                            std::string_view(raw).substr(kSaltBytes), header);
  if (!plain) throw KeyBackupError("wrong passphrase, or the backup was changed");
  std::vector<KeyFile> out;
  auto doc = nlohmann::json::parse(*plain, nullptr, false);
  if (doc.is_discarded() || !doc.contains("files") || !doc["files"].is_array()) {
    throw KeyBackupError("the backup is damaged");
  }
  for (const auto& f : doc["files"]) {
    KeyFile file{f.value("folder", ""), f.value("name", ""), unbase64(f.value("content", ""))};
    if ((file.folder != kAgentPki && file.folder != kSshCa) || !plain_name(file.name)) {
      throw KeyBackupError("the backup names a file it may not: " + file.folder + "/" + file.name);
    }
    out.push_back(std::move(file));
  }
  return out;
}

int restore(const std::vector<KeyFile>& files, const std::string& agent_pki_dir,
            const std::string& ssh_ca_dir, bool replace) {
  auto dir_of = [&](const KeyFile& f) {
    return fs::path(f.folder == kAgentPki ? agent_pki_dir : ssh_ca_dir);
  };
  // Every refusal before any write: a restore is all or nothing as far as it can be.
  for (const auto& f : files) {
    fs::path path = dir_of(f) / f.name;
    std::error_code ec;
    if (!replace && fs::exists(path, ec) && read_file(path) != f.content) {
      throw KeyBackupError(path.string() +
                           " exists and differs from the backup's; restore with --replace to "
                           "overwrite it (what the present key signed stops being trusted)");
    }
  }
  int written = 0;
  for (const auto& f : files) {
    fs::path dir = dir_of(f);
    fs::create_directories(dir);
    ::chmod(dir.c_str(), 0700);
    fs::path path = dir / f.name;
    std::error_code ec;
    if (fs::exists(path, ec) && read_file(path) == f.content) continue;
    fs::path temp = dir / ("." + f.name + ".restoring");
    {
      std::ofstream out(temp, std::ios::binary | std::ios::trunc);
      ::chmod(temp.c_str(), 0600);
      out << f.content;
      if (!out.flush()) throw KeyBackupError("cannot write " + temp.string());
    }
    fs::rename(temp, path);
    ++written;
  }
  return written;
}

}  // namespace gpurent::keys
