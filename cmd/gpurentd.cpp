// gpurentd: the control plane. `gpurentd [serve] [--flags]`, `gpurentd migrate`.
#include "api/app.h"
#include "core/config.h"
#include "core/error.h"
#include "core/key_backup.h"
#include "core/log.h"
#include "core/migrator.h"

#include <cstdio>
#include <string>
#include <vector>

namespace {

void print_usage() {
  std::printf(
      "usage: gpurentd [serve|migrate] [--key=value ...]\n"
      "       gpurentd admin create --email EMAIL [--password-stdin] [--key=value ...]\n"
      "       gpurentd keys backup --out FILE [--key=value ...]\n"
      "       gpurentd keys restore --in FILE [--replace] [--key=value ...]\n\n"
      "  serve         run the API and web panel (default)\n"
      "  migrate       apply pending database migrations and exit\n"
      "  admin create  create a platform admin; the password is read from stdin's first\n"
      "                line with --password-stdin, otherwise generated and printed once;\n"
      "                beside a gpurentd serving from the same data_dir, it uses that\n"
      "                server's embedded PostgreSQL\n"
      "  keys backup   write agent_pki_dir's and ssh_ca_dir's keys to FILE, encrypted with\n"
      "                the passphrase on stdin's first line (at least 12 bytes)\n"
      "  keys restore  put a backup's keys back into agent_pki_dir and ssh_ca_dir; a key\n"
      "                there that differs is refused unless --replace\n\n"
      "configuration (flag / environment / default):\n");
  for (const auto& k : gpurent::config_keys()) {
    std::printf("  --%-22s %-30s %s\n      %s\n", k.name.c_str(), k.env.c_str(),
                k.default_value.empty() ? "(empty)" : k.default_value.c_str(), k.help.c_str());
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  std::string command = "serve";
  if (!args.empty() && args[0].rfind("--", 0) != 0) {
    command = args[0];
    args.erase(args.begin());
  }
  if (command == "help" || (!args.empty() && (args[0] == "--help" || args[0] == "-h"))) {
    print_usage();
    return 0;
  }
  if (!args.empty() && args[0] == "--version") {
    std::printf("gpurentd %s\n", GPURENT_VERSION);
    return 0;
  }
  // `admin create` takes its own arguments before the configuration flags.
  std::string admin_email;
  bool password_stdin = false;
  if (command == "admin") {
    if (args.empty() || args[0] != "create") {
      std::fprintf(stderr, "gpurentd: usage: gpurentd admin create --email EMAIL\n");
      return 2;
    }
    args.erase(args.begin());
    for (auto it = args.begin(); it != args.end();) {
      if (*it == "--password-stdin") {
        password_stdin = true;
        it = args.erase(it);
      } else if (it->rfind("--email=", 0) == 0) {
        admin_email = it->substr(8);
        it = args.erase(it);
      } else if (*it == "--email" && it + 1 != args.end()) {
        admin_email = *(it + 1);
        it = args.erase(it, it + 2);
      } else {
        ++it;
      }
    }
    if (admin_email.empty()) {
      std::fprintf(stderr, "gpurentd: admin create needs --email EMAIL\n");
      return 2;
    }
  }
  // `keys backup|restore` likewise.
  gpurent::KeysCommand keys;
  if (command == "keys") {
    if (args.empty() || (args[0] != "backup" && args[0] != "restore")) {
      std::fprintf(stderr,
                   "gpurentd: usage: gpurentd keys backup --out FILE | keys restore --in FILE\n");
      return 2;
    }
    keys.restore = args[0] == "restore";
    args.erase(args.begin());
    const std::string file_flag = keys.restore ? "--in" : "--out";
    for (auto it = args.begin(); it != args.end();) {
      if (keys.restore && *it == "--replace") {
        keys.replace = true;
        it = args.erase(it);
      } else if (it->rfind(file_flag + "=", 0) == 0) {
        keys.file = it->substr(file_flag.size() + 1);
        it = args.erase(it);
      } else if (*it == file_flag && it + 1 != args.end()) {
        keys.file = *(it + 1);
        it = args.erase(it, it + 2);
      } else {
        ++it;
      }
    }
    if (keys.file.empty()) {
      std::fprintf(stderr, "gpurentd: keys %s needs %s FILE\n", keys.restore ? "restore" : "backup",
                   file_flag.c_str());
      return 2;
    }
  }
  gpurent::Config config;
  try {
    config = gpurent::load_config(args);
  } catch (const gpurent::ConfigError& e) {
    std::fprintf(stderr, "gpurentd: %s\n", e.what());
    return 2;
  }
  gpurent::log::init(config.log_format, config.log_level);
  try {
    if (command == "serve") return gpurent::run_server(config);
    if (command == "migrate") return gpurent::run_migrate(config);
    if (command == "admin") return gpurent::run_admin_create(config, admin_email, password_stdin);
    if (command == "keys") return gpurent::run_keys(config, keys);
    std::fprintf(stderr, "gpurentd: unknown command '%s' (try --help)\n", command.c_str());
    return 2;
  } catch (const gpurent::ConfigError& e) {
    gpurent::log::critical("{}", e.what());
    return 2;
  } catch (const gpurent::Error& e) {
    gpurent::log::critical("{}", e.what());
    return 2;
  } catch (const gpurent::keys::KeyBackupError& e) {
    gpurent::log::critical("keys: {}", e.what());
    return 2;
  } catch (const gpurent::MigrationError& e) {
    gpurent::log::critical("migration: {}", e.what());
    return 3;
  } catch (const std::exception& e) {
    gpurent::log::critical("fatal: {}", e.what());
    return 1;
  }
}
