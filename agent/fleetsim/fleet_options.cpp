// Parsing gpurent-fleetsim's flags and enrolment file.
#include "agent/fleetsim/fleet_options.h"

#include "core/id.h"

#include <charconv>
#include <map>
#include <set>
#include <stdexcept>

namespace gpurent::agent::fleetsim {

namespace {

using Flags = std::map<std::string, std::string>;

const std::set<std::string>& known_flags() {
  static const std::set<std::string> known = {
      "server",      "ca",         "state-dir",       "enroll-from",     "agents",
      "heartbeat",   "ramp",       "status-interval", "provision-delay", "backoff-initial",
      "backoff-max", "io-threads", "task-threads",    "enroll-parallel", "gpus",
      "model",       "topology",   "nvlink",          "log-level",       "enroll-only"};
  return known;
}

std::optional<int> parse_int(std::string_view text, int min, int max) {
  int value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < min || value > max) {
    return std::nullopt;
  }
  return value;
}

bool is_token_char(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
         c == '-';
}

}  // namespace

std::optional<std::chrono::milliseconds> parse_duration(std::string_view text) {
  long long value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || value < 0 || value > 24LL * 3600 * 1000) return std::nullopt;
  std::string_view unit(end, static_cast<std::size_t>(text.data() + text.size() - end));
  if (unit == "ms") return std::chrono::milliseconds(value);
  if (unit == "s" || unit.empty()) return std::chrono::seconds(value);
  if (unit == "m") return std::chrono::minutes(value);
  if (unit == "h") return std::chrono::hours(value);
  return std::nullopt;
}

ParsedFleetArgs parse_fleet_args(const std::vector<std::string>& args) {
  ParsedFleetArgs out;
  Flags flags;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--help" || a == "-h") {
      out.help = true;
      return out;
    }
    if (a == "--enroll-only") {
      flags["enroll-only"] = "true";
      continue;
    }
    if (a.rfind("--", 0) != 0 || a.size() < 3) {
      out.error = "unexpected argument '" + a + "'";
      return out;
    }
    std::string name;
    std::string value;
    auto eq = a.find('=');
    if (eq != std::string::npos) {
      name = a.substr(2, eq - 2);
      value = a.substr(eq + 1);
    } else if (i + 1 < args.size()) {
      name = a.substr(2);
      value = args[++i];
    } else {
      out.error = a + " needs a value";
      return out;
    }
    if (!known_flags().count(name)) {
      out.error = "unknown flag --" + name;
      return out;
    }
    flags[name] = value;
  }
  for (const char* needed : {"server", "state-dir"}) {
    if (!flags.count(needed)) {
      out.error = std::string("--") + needed + " is required";
      return out;
    }
  }
  FleetOptions o;
  auto url = parse_server_url(flags["server"]);
  if (!url) {
    out.error = "--server must be https://HOST[:PORT], not '" + flags["server"] + "'";
    return out;
  }
  o.server = *url;
  o.state_dir = flags["state-dir"];
  if (flags.count("ca")) o.ca_file = flags["ca"];
  if (flags.count("enroll-from")) o.enroll_from = flags["enroll-from"];
  auto integer = [&](const char* name, int& field, int min, int max) {
    if (!flags.count(name)) return true;
    auto v = parse_int(flags[name], min, max);
    if (!v) {
      out.error = std::string("--") + name + " takes a whole number from " + std::to_string(min) +
                  " to " + std::to_string(max);
      return false;
    }
    field = *v;
    return true;
  };
  auto duration = [&](const char* name, std::chrono::milliseconds& field, bool zero_ok) {
    if (!flags.count(name)) return true;
    auto v = parse_duration(flags[name]);
    if (!v || (!zero_ok && v->count() == 0)) {
      out.error = std::string("--") + name + " takes a duration: 10s, 500ms, 2m";
      return false;
    }
    field = *v;
    return true;
  };
  if (!integer("agents", o.agents, 1, 1'000'000) || !integer("io-threads", o.io_threads, 1, 2) ||
      !integer("task-threads", o.task_threads, 1, 64) ||
      !integer("enroll-parallel", o.enroll_parallel, 1, 256) ||
      !integer("gpus", o.node.gpus, 1, 64) || !duration("heartbeat", o.heartbeat, false) ||
      !duration("ramp", o.ramp, true) || !duration("status-interval", o.status_interval, false) ||
      !duration("provision-delay", o.provision_delay, true) ||
      !duration("backoff-initial", o.backoff_initial, false) ||
      !duration("backoff-max", o.backoff_max, false)) {
    return out;
  }
  if (o.backoff_max < o.backoff_initial) {
    out.error = "--backoff-max must be at least --backoff-initial";
    return out;
  }
  if (flags.count("model")) o.node.model = flags["model"];
  if (flags.count("nvlink")) o.node.nvlink_kind = flags["nvlink"];
  if (flags.count("topology")) {
    auto shape = topology::parse_interconnect(flags["topology"]);
    if (!shape) {
      out.error = "--topology is nvswitch, nvlink-pairs or pcie";
      return out;
    }
    o.node.interconnect = *shape;
  }
  if (flags.count("log-level")) o.log_level = flags["log-level"];
  o.enroll_only = flags.count("enroll-only") > 0;
  if (o.enroll_only && !o.enroll_from) {
    out.error = "--enroll-only needs --enroll-from";
    return out;
  }
  out.options = std::move(o);
  return out;
}

std::vector<EnrollEntry> parse_enroll_file(std::string_view text) {
  std::vector<EnrollEntry> out;
  std::set<std::string> seen;
  int line_no = 0;
  std::size_t start = 0;
  while (start < text.size()) {
    auto end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    start = end + 1;
    ++line_no;
    auto fail = [&](const std::string& why) {
      throw std::invalid_argument("line " + std::to_string(line_no) + ": " + why);
    };
    std::vector<std::string_view> words;
    std::size_t i = 0;
    while (i < line.size()) {
      while (i < line.size() && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r')) ++i;
      std::size_t w = i;
      while (i < line.size() && line[i] != ' ' && line[i] != '\t' && line[i] != '\r') ++i;
      if (i > w) words.push_back(line.substr(w, i - w));
    }
    if (words.empty() || words[0][0] == '#') continue;
    if (words.size() != 2) fail("expected 'node_id token'");
    if (!is_valid_id(id_prefix::kNode, words[0])) {
      fail("'" + std::string(words[0].substr(0, 64)) + "' is not a node id");
    }
    bool token_ok =
        words[1].size() > 4 && words[1].size() <= 200 && words[1].substr(0, 4) == "gpe_";
    for (char c : words[1]) token_ok = token_ok && is_token_char(c);
    if (!token_ok) fail("the enrolment token must be gpe_ and letters or digits");
    if (!seen.insert(std::string(words[0])).second) {
      fail("node " + std::string(words[0]) + " is given twice");
    }
    out.push_back({std::string(words[0]), std::string(words[1])});
  }
  return out;
}

}  // namespace gpurent::agent::fleetsim
