// The command line: which command, its options and arguments, checked against one table of
// commands that also writes `gpurent help`. Nothing here talks to the network.
#pragma once

#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace gpurent::cli {

// Wrong arguments (exit 2): the sentence, and the command whose usage to show ("" = none).
class UsageError : public std::runtime_error {
 public:
  UsageError(const std::string& what, std::string command = "")
      : std::runtime_error(what), command_(std::move(command)) {}
  const std::string& command() const { return command_; }

 private:
  std::string command_;
};

struct OptionSpec {
  const char* name;        // without the dashes: "gpu-model"
  const char* value_name;  // nullptr for a flag that takes no value
  const char* help;
  bool repeatable = false;
};

struct CommandSpec {
  const char* name;       // "rent", "keys add"
  const char* arguments;  // usage after the name: "<rental-id>"
  const char* summary;
  std::vector<OptionSpec> options;
  int min_positionals = 0;
  int max_positionals = 0;   // -1: any number (passed through)
  bool passthrough = false;  // everything after `--` (and after the positionals) is kept
};

const std::vector<CommandSpec>& commands();
const std::vector<OptionSpec>& global_options();
// Whether `name` is a command with sub-commands ("keys", "tokens", "invoices").
bool has_subcommands(const std::string& name);

struct ParsedArgs {
  std::string command;  // "" when only global options or help were given
  std::vector<std::pair<std::string, std::string>> options;  // in order; flags have ""
  std::vector<std::string> positionals;
  std::vector<std::string> passthrough;  // after `--` (ssh)
  bool help = false;

  bool has(const std::string& name) const;
  std::optional<std::string> get(const std::string& name) const;
  std::vector<std::string> all(const std::string& name) const;
};

// Parses argv without the program's name. Global options may come before or after the
// command; `--name=value` and `--name value` both work; `-h` is `--help`; `--` ends the
// options. Throws UsageError for an unknown command or option, a missing value, or a wrong
// number of arguments.
ParsedArgs parse_args(const std::vector<std::string>& argv);

// `gpurent --help`: the commands, global options, configuration and exit codes.
std::string general_help();
// `gpurent help <command>`: its usage and options.
std::string command_help(const std::string& command);

// A duration: "90" or "90s", "15m", "2h"; UsageError naming `option` otherwise.
long long parse_duration_seconds(const std::string& option, const std::string& text);
// A whole number from min to max; UsageError naming `option` otherwise.
int parse_int_option(const std::string& option, const std::string& text, int min, int max);

}  // namespace gpurent::cli
