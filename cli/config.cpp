// Configuration of the CLI: the file, the environment and the flags, merged.
#include "cli/config.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <fstream>

namespace gpurent::cli {
namespace {

std::string trim(const std::string& s) {
  auto first = s.find_first_not_of(" \t\r");
  if (first == std::string::npos) return "";
  auto last = s.find_last_not_of(" \t\r");
  return s.substr(first, last - first + 1);
}

bool truthy(const std::string& what, const std::string& value) {
  if (value == "1" || value == "true" || value == "yes") return true;
  if (value == "0" || value == "false" || value == "no" || value.empty()) return false;
  throw ConfigError(what + " must be true or false, not \"" + value + "\"");
}

}  // namespace

Environment process_environment() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* v = std::getenv(name.c_str());
    if (!v) return std::nullopt;
    return std::string(v);
  };
}

int parse_count(const std::string& what, const std::string& text, int min, int max) {
  int value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || value < min ||
      value > max) {
    throw ConfigError(what + " must be a whole number from " + std::to_string(min) + " to " +
                      std::to_string(max) + ", not \"" + text + "\"");
  }
  return value;
}

std::string config_file_path(const FlagSettings& flags, const Environment& env) {
  if (flags.config_path) return *flags.config_path;
  if (auto p = env("GPURENT_CONFIG"); p && !p->empty()) return *p;
  if (auto x = env("XDG_CONFIG_HOME"); x && !x->empty()) return *x + "/gpurent/config";
  if (auto h = env("HOME"); h && !h->empty()) return *h + "/.config/gpurent/config";
  return "";
}

std::map<std::string, std::string> read_config_file(const std::string& path) {
  std::map<std::string, std::string> out;
  if (path.empty()) return out;
  std::ifstream in(path);
  if (!in) {
    if (errno == ENOENT) return out;
    throw ConfigError("cannot read the config file " + path + ": " + std::strerror(errno));
  }
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    std::string text = trim(line);
    if (text.empty() || text.front() == '#') continue;
    auto eq = text.find('=');
    if (eq == std::string::npos) {
      throw ConfigError(path + ":" + std::to_string(number) + ": expected key = value");
    }
    std::string key = trim(text.substr(0, eq));
    std::string value = trim(text.substr(eq + 1));
    if (value.size() >= 2 && value.front() == '"' && value.back() == '"') {
      value = value.substr(1, value.size() - 2);
    }
    if (key != "url" && key != "token" && key != "ca_file" && key != "insecure" &&
        key != "retries") {
      throw ConfigError(path + ":" + std::to_string(number) + ": unknown key \"" + key +
                        "\" (known: url, token, ca_file, insecure, retries)");
    }
    out[key] = value;
  }
  if (out.count("token")) {
    // As ssh does with a private key: a secret that others can read is already leaked, and
    // one that others can write may be swapped for theirs.
    struct stat st {};
    if (stat(path.c_str(), &st) != 0) {
      throw ConfigError("cannot check the config file " + path + ": " + std::strerror(errno));
    }
    if ((st.st_mode & (S_IRWXG | S_IRWXO)) != 0) {
      char mode[8];
      std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
      throw ConfigError("the config file " + path + " holds a token and its permissions " + mode +
                        " let others read it; run: chmod 600 " + path);
    }
    if (st.st_uid != geteuid()) {
      throw ConfigError("the config file " + path +
                        " holds a token but belongs to another user; refusing it");
    }
  }
  return out;
}

Settings resolve_settings(const FlagSettings& flags, const Environment& env) {
  Settings s;
  std::string path = config_file_path(flags, env);
  auto file = read_config_file(path);
  auto pick = [&](const std::optional<std::string>& flag, const std::string& flag_name,
                  const std::string& env_name, const std::string& file_key, std::string& target,
                  std::string* source) {
    if (flag) {
      target = *flag;
      if (source) *source = flag_name;
    } else if (auto e = env(env_name); e && !e->empty()) {
      target = *e;
      if (source) *source = env_name;
    } else if (auto it = file.find(file_key); it != file.end()) {
      target = it->second;
      if (source) *source = path;
    }
  };
  pick(flags.url, "--url", "GPURENT_URL", "url", s.url, &s.url_source);
  pick(flags.token, "--token", "GPURENT_TOKEN", "token", s.token, &s.token_source);
  pick(flags.ca_file, "--ca-file", "GPURENT_CA_FILE", "ca_file", s.ca_file, nullptr);
  std::string insecure;
  pick(flags.insecure ? std::optional<std::string>("true") : std::nullopt, "--insecure",
       "GPURENT_INSECURE", "insecure", insecure, nullptr);
  s.insecure = truthy("insecure", insecure);
  std::string retries;
  pick(flags.retries ? std::optional<std::string>(std::to_string(*flags.retries)) : std::nullopt,
       "--retries", "GPURENT_RETRIES", "retries", retries, nullptr);
  if (!retries.empty()) s.retries = parse_count("retries", retries, 0, 20);
  if (s.token.empty()) s.token_source = "none";
  return s;
}

}  // namespace gpurent::cli
