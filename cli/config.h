// Where the CLI finds its API URL and token: flags, environment, then the config file
// (docs/cli.md "Configuration"). The token is a secret: it is never printed or logged.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>

namespace gpurent::cli {

// A configuration the CLI refuses to run with (exit 2), in one sentence.
class ConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct Settings {
  std::string url = "http://127.0.0.1:8080";  // `make run`'s server
  std::string token;
  std::string ca_file;
  bool insecure = false;
  int retries = 4;  // retries after the first attempt
  // Where each came from ("--url", "GPURENT_URL", the config file's path, "default"), as
  // `gpurent config` shows it.
  std::string url_source = "default";
  std::string token_source = "none";
};

// What the command line said; unset when it said nothing.
struct FlagSettings {
  std::optional<std::string> url;
  std::optional<std::string> token;
  std::optional<std::string> ca_file;
  bool insecure = false;
  std::optional<int> retries;
  std::optional<std::string> config_path;
};

using Environment = std::function<std::optional<std::string>(const std::string&)>;

// The process's own environment.
Environment process_environment();

// The config file's path: --config, else $GPURENT_CONFIG, else
// $XDG_CONFIG_HOME/gpurent/config, else $HOME/.config/gpurent/config.
std::string config_file_path(const FlagSettings& flags, const Environment& env);

// `key = value` lines; `#` starts a comment line; known keys only (url, token, ca_file,
// insecure, retries). A missing file is empty. A file that holds a token and that others
// may read or write, or that another user owns, is refused, as ssh refuses such a key.
std::map<std::string, std::string> read_config_file(const std::string& path);

// Flags over environment (GPURENT_URL, GPURENT_TOKEN, GPURENT_CA_FILE, GPURENT_INSECURE,
// GPURENT_RETRIES) over the config file over defaults, per setting.
Settings resolve_settings(const FlagSettings& flags, const Environment& env);

// A whole number from `min` to `max`, or ConfigError naming `what`.
int parse_count(const std::string& what, const std::string& text, int min, int max);

}  // namespace gpurent::cli
