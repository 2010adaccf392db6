// The command table and the parser over it.
#include "cli/args.h"

#include "cli/exit_codes.h"

#include <algorithm>
#include <charconv>
#include <sstream>

namespace gpurent::cli {
namespace {

std::vector<OptionSpec> booking_options() {
  return {
      {"gpu-model", "MODEL", "GPU model, e.g. H100-SXM5-80GB (required)"},
      {"gpu-count", "N", "GPUs on one node (required)"},
      {"days", "N", "whole days; the rental ends by itself after them (required)"},
      {"image", "IMAGE_ID", "image to provision, img_… (required)"},
      {"start", "WHEN", "now (default), a date YYYY-MM-DD or an RFC 3339 time"},
      {"interconnect", "KIND", "nvlink (default: all GPUs NVLink-connected) or any"},
      {"ssh-key", "KEY_ID", "registered SSH key to install, key_… (repeatable)", true},
      {"name", "NAME", "a name for the rental"},
      {"wait-for-capacity", nullptr, "queue the request (pending) when nothing fits now"},
  };
}

std::vector<OptionSpec> with(std::vector<OptionSpec> base, std::vector<OptionSpec> more) {
  base.insert(base.end(), more.begin(), more.end());
  return base;
}

}  // namespace

const std::vector<OptionSpec>& global_options() {
  static const std::vector<OptionSpec> options{
      {"url", "URL", "API URL (GPURENT_URL; default http://127.0.0.1:8080)"},
      {"token", "TOKEN", "API token (GPURENT_TOKEN; prefer the environment or config file)"},
      {"config", "PATH", "config file (GPURENT_CONFIG; default ~/.config/gpurent/config)"},
      {"ca-file", "PATH", "PEM CA bundle to trust for https (GPURENT_CA_FILE)"},
      {"insecure", nullptr, "do not verify the server's TLS certificate (GPURENT_INSECURE)"},
      {"retries", "N", "retries on network errors, 5xx and 429 (GPURENT_RETRIES; default 4)"},
      {"json", nullptr, "print the API's JSON on stdout instead of a table"},
      {"help", nullptr, "show help (also -h)"},
      {"version", nullptr, "print the CLI's version"},
  };
  return options;
}

const std::vector<CommandSpec>& commands() {
  static const std::vector<CommandSpec> table{
      {"offers",
       "",
       "List rental shapes on sale, with price and earliest start.",
       {{"gpu-model", "MODEL", "only this GPU model"},
        {"gpu-count", "N", "only this many GPUs"},
        {"interconnect", "KIND", "nvlink or any"},
        {"start", "WHEN", "now, a date or an RFC 3339 time"},
        {"days", "N", "for this many days"}}},
      {"availability",
       "",
       "How many rentals of a shape can start on each coming day.",
       {{"gpu-model", "MODEL", "GPU model (required)"},
        {"gpu-count", "N", "GPUs per rental (default 1)"},
        {"interconnect", "KIND", "nvlink (default) or any"},
        {"from", "DATE", "first day, YYYY-MM-DD (default today)"},
        {"days", "N", "how many days (default 30)"}}},
      {"quote", "", "Price and availability of a rental, booking nothing.", booking_options()},
      {"rent", "", "Book GPUs; with --wait, wait until the rental is active.",
       with(booking_options(),
            {{"wait", nullptr, "wait until the rental is active (progress on stderr)"},
             {"timeout", "DURATION", "how long --wait waits: 90s, 15m, 1h (default 30m)"},
             {"id-file", "PATH", "write the rental's id here as soon as it is booked"}})},
      {"list",
       "",
       "The org's rentals, newest first.",
       {{"state", "STATE", "only rentals in this state"},
        {"limit", "N", "at most this many (default 50)"},
        {"all", nullptr, "every rental, page by page"}}},
      {"show", "<rental-id>", "One rental, with its SSH details once active.", {}, 1, 1},
      {"wait",
       "<rental-id>",
       "Wait until a rental reaches a state (default active).",
       {{"state", "STATE", "the state to wait for (default active)"},
        {"timeout", "DURATION", "give up after this long: 90s, 15m, 1h (default 30m)"}},
       1,
       1},
      {"extend",
       "<rental-id>",
       "Add whole days to a rental on the same GPUs.",
       {{"days", "N", "days to add (required)"}},
       1,
       1},
      {"terminate",
       "<rental-id>",
       "End a rental: cancelled before its start, released while it runs.",
       {{"reason", "TEXT", "why, for the rental's history"}},
       1,
       1},
      {"doctor",
       "<rental-id>",
       "Examine an active rental's node: driver, ECC, the links between its GPUs, NCCL.",
       {{"allow-busy-gpus", nullptr, "let a short NCCL run use the GPUs for a few seconds"}},
       1,
       1},
      {"notices",
       "",
       "What the platform told the org about its rentals, choices awaiting an answer; newest "
       "first.",
       {{"rental", "RENTAL_ID", "only this rental's"}}},
      {"notices answer",
       "<notice-id>",
       "Answer a maintenance notice that offers choices; it is applied at once.",
       {{"rental", "RENTAL_ID", "the notice's rental (required)"},
        {"choice", "CHOICE",
         "one the notice offers: other_node (another node now), shift (start after the "
         "window) or cancel (required)"}},
       1,
       1},
      {"reboot",
       "<rental-id>",
       "Reboot an active rental's whole node; with --wait, wait until it is active again.",
       {{"wait", nullptr, "wait until the rental is active again (progress on stderr)"},
        {"timeout", "DURATION", "how long --wait waits: 90s, 15m, 1h (default 30m)"}},
       1,
       1},
      {"checkpoint",
       "<rental-id>",
       "The command run as the rental's login when a notice reaches its node: show, set, clear.",
       {{"set", "COMMAND",
         "run this shell command line (sh -c) on a notice, so a job can save its state"},
        {"timeout", "DURATION", "with --set: the command's time limit, 1s to 24h (default 10m)"},
        {"clear", nullptr, "run nothing on a notice"}},
       1,
       1},
      {"handovers",
       "<rental-id>",
       "A rental's moves to a spare node, reboots and power actions, and their credits.",
       {},
       1,
       1},
      {"ssh",
       "<rental-id> [-- ssh arguments and command]",
       "Log in to an active rental with a fresh key and a certificate for it.",
       {{"print", nullptr, "print the ssh command (key files kept) instead of running it"}},
       1,
       -1,
       true},
      {"keys list", "", "The org's registered SSH public keys."},
      {"keys add",
       "",
       "Register an SSH public key.",
       {{"name", "NAME", "a name for the key (required)"},
        {"file", "PATH", "the public key file, e.g. ~/.ssh/id_ed25519.pub"},
        {"public-key", "TEXT", "the public key itself"}}},
      {"keys delete", "<key-id>", "Delete a registered SSH key.", {}, 1, 1},
      {"tokens list", "", "The org's API tokens (never their secrets)."},
      {"tokens create",
       "",
       "Create an API token; it is printed once, on stdout.",
       {{"name", "NAME", "a name for the token (required)"},
        {"scopes", "LIST", "comma-separated scopes, e.g. rentals:read,rentals:write (required)"},
        {"expires-in-days", "N", "the token expires after N days"},
        {"max-days", "N", "guardrail: no rental longer than N days"},
        {"max-gpus", "N", "guardrail: at most N GPUs rented at once"},
        {"spend-limit", "AMOUNT_MINOR", "guardrail: spend per calendar month, minor units"},
        {"currency", "CODE", "currency of --spend-limit (default RUB)"}}},
      {"tokens revoke", "<token-id>", "Revoke an API token.", {}, 1, 1},
      {"balance", "", "The org's balance: total, held for booked days, available."},
      {"invoices list", "", "The org's invoices, newest month first."},
      {"invoices show", "<invoice-id>", "One invoice with its lines.", {}, 1, 1},
      {"invoices csv",
       "<invoice-id>",
       "An invoice as CSV (stdout, or --output).",
       {{"output", "PATH", "write the CSV to this file"}},
       1,
       1},
      {"config", "", "Show the settings in use and where each came from (never the token)."},
      {"help", "[command]", "Show help for the CLI or one command.", {}, 0, 2},
  };
  return table;
}

bool has_subcommands(const std::string& name) {
  return name == "keys" || name == "tokens" || name == "invoices";
}

bool ParsedArgs::has(const std::string& name) const {
  return std::any_of(options.begin(), options.end(),
                     [&](const auto& o) { return o.first == name; });
}

std::optional<std::string> ParsedArgs::get(const std::string& name) const {
  std::optional<std::string> out;
  for (const auto& [k, v] : options) {
    if (k == name) out = v;
  }
  return out;
}

std::vector<std::string> ParsedArgs::all(const std::string& name) const {
  std::vector<std::string> out;
  for (const auto& [k, v] : options) {
    if (k == name) out.push_back(v);
  }
  return out;
}

namespace {

const CommandSpec* find_command(const std::string& name) {
  for (const auto& c : commands()) {
    if (name == c.name) return &c;
  }
  return nullptr;
}

const OptionSpec* find_option(const std::vector<OptionSpec>& list, const std::string& name) {
  for (const auto& o : list) {
    if (name == o.name) return &o;
  }
  return nullptr;
}

std::string subcommand_names(const std::string& group) {
  std::string out;
  for (const auto& c : commands()) {
    std::string name = c.name;
    if (name.rfind(group + " ", 0) == 0)
      out += (out.empty() ? "" : ", ") + name.substr(group.size() + 1);
  }
  return out;
}

}  // namespace

ParsedArgs parse_args(const std::vector<std::string>& argv) {
  ParsedArgs out;
  const CommandSpec* spec = nullptr;
  std::vector<std::pair<std::string, std::string>> pending;  // options seen before the command
  bool options_ended = false;
  std::vector<std::string> words;  // non-option words, the command's name first
  for (std::size_t i = 0; i < argv.size(); ++i) {
    const std::string& arg = argv[i];
    if (options_ended) {
      out.passthrough.push_back(arg);
      continue;
    }
    if (arg == "--") {
      options_ended = true;
      continue;
    }
    if (arg == "-h") {
      out.help = true;
      continue;
    }
    if (arg.size() > 2 && arg.rfind("--", 0) == 0) {
      std::string name = arg.substr(2);
      std::optional<std::string> value;
      if (auto eq = name.find('='); eq != std::string::npos) {
        value = name.substr(eq + 1);
        name = name.substr(0, eq);
      }
      const OptionSpec* o = find_option(global_options(), name);
      if (!o && spec) o = find_option(spec->options, name);
      if (!o) {
        // The command may not be known yet (`gpurent --gpu-count 2 rent` is not accepted:
        // command options follow the command).
        throw UsageError(
            "unknown option --" + name + (spec ? " for " + std::string(spec->name) : ""),
            spec ? spec->name : "");
      }
      if (o->value_name) {
        if (!value) {
          if (i + 1 >= argv.size()) {
            throw UsageError("--" + name + " needs a value (" + o->value_name + ")",
                             spec ? spec->name : "");
          }
          value = argv[++i];
        }
      } else if (value) {
        throw UsageError("--" + name + " takes no value", spec ? spec->name : "");
      }
      if (name == "help") {
        out.help = true;
        continue;
      }
      if (!o->repeatable && out.has(name)) {
        throw UsageError("--" + name + " given twice", spec ? spec->name : "");
      }
      out.options.emplace_back(name, value.value_or(""));
      continue;
    }
    if (arg.size() > 1 && arg.front() == '-' && !spec) {
      throw UsageError("unknown option " + arg);
    }
    if (!spec) {
      words.push_back(arg);
      std::string name = arg;
      if (has_subcommands(arg)) {
        if (i + 1 >= argv.size() || argv[i + 1].rfind("-", 0) == 0) {
          if (out.help ||
              (i + 1 < argv.size() && (argv[i + 1] == "-h" || argv[i + 1] == "--help"))) {
            out.command = arg;
            out.help = true;
            return out;
          }
          throw UsageError(arg + " needs a sub-command: " + subcommand_names(arg));
        }
        name = arg + " " + argv[++i];
        spec = find_command(name);
        if (!spec) {
          throw UsageError("unknown command \"" + name + "\"; " + arg + " has " +
                           subcommand_names(arg));
        }
      } else {
        spec = find_command(name);
        if (!spec) throw UsageError("unknown command \"" + arg + "\"; see gpurent --help");
        // A command that has sub-commands of its own as well ("notices", "notices answer"):
        // the next word is one when a sub-command has that name, else the command stands.
        if (i + 1 < argv.size()) {
          if (const CommandSpec* sub = find_command(name + " " + argv[i + 1])) {
            spec = sub;
            ++i;
          }
        }
      }
      out.command = spec->name;
      continue;
    }
    out.positionals.push_back(arg);
  }
  if (!spec) return out;
  if (out.help) return out;
  int n = static_cast<int>(out.positionals.size());
  if (n < spec->min_positionals) {
    throw UsageError(std::string(spec->name) + " needs " + spec->arguments, spec->name);
  }
  if (spec->passthrough) {
    // Words after the rental's id are the remote command, as after `--`.
    out.passthrough.insert(out.passthrough.begin(), out.positionals.begin() + spec->min_positionals,
                           out.positionals.end());
    out.positionals.resize(spec->min_positionals);
  } else if (spec->max_positionals >= 0 && n > spec->max_positionals) {
    throw UsageError("unexpected argument \"" + out.positionals[spec->max_positionals] + "\"",
                     spec->name);
  }
  if (!spec->passthrough && !out.passthrough.empty()) {
    throw UsageError(std::string(spec->name) + " takes nothing after --", spec->name);
  }
  return out;
}

namespace {

std::string option_lines(const std::vector<OptionSpec>& options) {
  std::ostringstream out;
  for (const auto& o : options) {
    std::string left =
        std::string("  --") + o.name + (o.value_name ? std::string(" ") + o.value_name : "");
    out << left;
    if (left.size() < 30)
      out << std::string(30 - left.size(), ' ');
    else
      out << "\n" << std::string(30, ' ');
    out << o.help << "\n";
  }
  return out.str();
}

}  // namespace

std::string general_help() {
  std::ostringstream out;
  out << "gpurent " << GPURENT_VERSION
      << " — rent GPU servers by the day from the command line or a CI pipeline.\n\n"
      << "Usage: gpurent [global options] <command> [options] [arguments]\n\nCommands:\n";
  for (const auto& c : commands()) {
    std::string left = std::string("  ") + c.name;
    out << left << std::string(left.size() < 18 ? 18 - left.size() : 1, ' ') << c.summary << "\n";
  }
  out << "\nGlobal options:\n"
      << option_lines(global_options())
      << "\nConfiguration: each setting from the first of --flag, environment variable, config\n"
         "file (key = value: url, token, ca_file, insecure, retries; chmod 600 when it holds a\n"
         "token). Requests are retried on connection errors, 5xx and 429 with backoff; every\n"
         "POST carries one Idempotency-Key per command, so a retried booking books once.\n\n"
      << exit_code_help()
      << "\n`gpurent help <command>` shows a command's options. Docs: docs/cli.md, docs/ci.md.\n";
  return out.str();
}

std::string command_help(const std::string& command) {
  const CommandSpec* spec = find_command(command);
  if (!spec && has_subcommands(command)) {
    std::ostringstream out;
    out << "Usage: gpurent " << command << " <" << subcommand_names(command) << ">\n\n";
    for (const auto& c : commands()) {
      std::string name = c.name;
      if (name.rfind(command + " ", 0) == 0) out << "  " << name << "  " << c.summary << "\n";
    }
    return out.str();
  }
  if (!spec) throw UsageError("unknown command \"" + command + "\"; see gpurent --help");
  std::ostringstream out;
  out << "Usage: gpurent " << spec->name << (spec->options.empty() ? "" : " [options]")
      << (*spec->arguments ? " " : "") << spec->arguments << "\n\n"
      << spec->summary << "\n";
  if (!spec->options.empty()) out << "\nOptions:\n" << option_lines(spec->options);
  const std::string prefix = std::string(spec->name) + " ";
  bool first_sub = true;
  for (const auto& c : commands()) {
    std::string name = c.name;
    if (name.rfind(prefix, 0) != 0) continue;
    out << (first_sub ? "\nSub-commands:\n" : "") << "  " << name << "  " << c.summary << "\n";
    first_sub = false;
  }
  out << "\nGlobal options (--url, --token, --json, …) and exit codes: gpurent --help\n";
  return out.str();
}

long long parse_duration_seconds(const std::string& option, const std::string& text) {
  long long value = 0;
  const char* begin = text.data();
  const char* end = begin + text.size();
  auto [stop, ec] = std::from_chars(begin, end, value);
  long long unit = 1;
  std::string suffix(stop, end);
  if (suffix == "" || suffix == "s")
    unit = 1;
  else if (suffix == "m")
    unit = 60;
  else if (suffix == "h")
    unit = 3600;
  else
    ec = std::errc::invalid_argument;
  if (text.empty() || ec != std::errc() || stop == begin || value < 0 || value > 7 * 24 * 3600 ||
      value * unit > 7 * 24 * 3600) {
    throw UsageError("--" + option + " must be a duration such as 90s, 15m or 2h, not \"" + text +
                     "\"");
  }
  return value * unit;
}

int parse_int_option(const std::string& option, const std::string& text, int min, int max) {
  int value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || value < min ||
      value > max) {
    throw UsageError("--" + option + " must be a whole number from " + std::to_string(min) +
                     " to " + std::to_string(max) + ", not \"" + text + "\"");
  }
  return value;
}

}  // namespace gpurent::cli
