// gpurent: the command-line client. Parses, configures, runs one command, maps failures to
// the documented exit codes (cli/exit_codes.h).
#include "cli/api_client.h"
#include "cli/args.h"
#include "cli/commands.h"
#include "cli/config.h"
#include "cli/exit_codes.h"
#include "cli/http_transport.h"

#include <iostream>

namespace {

using namespace gpurent::cli;

void explain(const ApiError& e) {
  std::cerr << "gpurent: " << e.what();
  if (e.status() > 0)
    std::cerr << " (" << (e.code().empty() ? "HTTP" : e.code()) << ", " << e.status() << ")";
  std::cerr << "\n";
  const auto& d = e.details();
  if (!d.is_object()) return;
  if (e.code() == "insufficient_capacity") {
    if (d.contains("earliest_start") && !d["earliest_start"].is_null()) {
      std::cerr << "earliest start: " << d["earliest_start"].get<std::string>() << "\n";
    }
    for (const auto& a : d.value("alternatives", nlohmann::json::array())) {
      std::cerr << "alternative: " << a.value("gpu_count", 0) << " x " << a.value("gpu_model", "")
                << " from " << a.value("start", "") << "\n";
    }
  } else if (d.contains("field")) {
    std::cerr << "field: " << d["field"].get<std::string>();
    if (d.contains("reason")) std::cerr << " " << d["reason"].get<std::string>();
    std::cerr << "\n";
  } else if (e.code() == "insufficient_funds") {
    std::cerr << "details: " << d.dump() << "\n";
  }
}

int run(const std::vector<std::string>& argv) {
  ParsedArgs args;
  try {
    args = parse_args(argv);
  } catch (const UsageError& e) {
    std::cerr << "gpurent: " << e.what() << "\n";
    if (!e.command().empty())
      std::cerr << "\n" << command_help(e.command());
    else
      std::cerr << "Run gpurent --help for the commands.\n";
    return kExitUsage;
  }
  if (args.has("version")) {
    std::cout << "gpurent " << GPURENT_VERSION << "\n";
    return kExitOk;
  }
  try {
    if (args.command == "help") {
      std::string topic;
      for (const auto& p : args.positionals) topic += (topic.empty() ? "" : " ") + p;
      std::cout << (topic.empty() ? general_help() : command_help(topic));
      return kExitOk;
    }
    if (args.help) {
      std::cout << (args.command.empty() ? general_help() : command_help(args.command));
      return kExitOk;
    }
  } catch (const UsageError& e) {
    std::cerr << "gpurent: " << e.what() << "\n";
    return kExitUsage;
  }
  if (args.command.empty()) {
    std::cerr << general_help();
    return kExitUsage;
  }

  Settings settings;
  Endpoint endpoint;
  try {
    FlagSettings flags;
    flags.url = args.get("url");
    flags.token = args.get("token");
    flags.ca_file = args.get("ca-file");
    flags.insecure = args.has("insecure");
    flags.config_path = args.get("config");
    if (auto r = args.get("retries")) flags.retries = parse_count("--retries", *r, 0, 20);
    settings = resolve_settings(flags, process_environment());
    endpoint = parse_endpoint(settings.url);
  } catch (const ConfigError& e) {
    std::cerr << "gpurent: " << e.what() << "\n";
    return kExitUsage;
  } catch (const std::invalid_argument& e) {
    std::cerr << "gpurent: " << e.what() << "\n";
    return kExitUsage;
  }
  if (args.command == "config") {
    // What a confused CI job needs to see: which URL, and whether and whence a token.
    std::cout << "url:      " << settings.url << "  (" << settings.url_source << ")\n"
              << "token:    "
              << (settings.token.empty() ? "not set" : "set (" + settings.token_source + ")")
              << "\n"
              << "ca_file:  " << (settings.ca_file.empty() ? "system CAs" : settings.ca_file)
              << "\n"
              << "insecure: " << (settings.insecure ? "yes" : "no") << "\n"
              << "retries:  " << settings.retries << "\n";
    return kExitOk;
  }
  if (settings.token.empty()) {
    std::cerr << "gpurent: no API token: set GPURENT_TOKEN, put token = … in the config file "
                 "(chmod 600), or pass --token\n";
    return kExitUsage;
  }

  auto transport = make_http_transport(
      endpoint, TransportOptions{.insecure = settings.insecure, .ca_file = settings.ca_file});
  RetryPolicy policy;
  policy.max_attempts = settings.retries + 1;
  ApiClient api(*transport, settings.token, policy, std::cerr, new_idempotency_key());
  CommandContext ctx{
      .args = args, .api = api, .out = std::cout, .err = std::cerr, .json = args.has("json")};
  try {
    return run_command(ctx);
  } catch (const UsageError& e) {
    // Option values are checked as the command reads them: the same help as a parse error.
    std::cerr << "gpurent: " << e.what() << "\n\n" << command_help(args.command);
    return kExitUsage;
  } catch (const ApiError& e) {
    explain(e);
    return e.exit_code();
  } catch (const std::exception& e) {
    std::cerr << "gpurent: " << e.what() << "\n";
    return kExitApiError;
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  int code = run(args);
  std::cout.flush();
  return code;
}
