// gpurent-agent: the node agent. `probe`, `burn-in`, `enroll`, `run` (README.md "Running an
// agent").
#include "agent/access_files.h"
#include "agent/agent_runner.h"
#include "agent/enrollment.h"
#include "agent/gpu_backend.h"
#include "agent/hook_runner.h"
#include "agent/host_keys.h"
#include "agent/login_probe.h"
#include "agent/notice_file.h"
#include "agent/probe.h"
#include "agent/sshd_banner.h"
#include "agent/state_files.h"
#include "agent/task_executor.h"
#include "agent/task_journal.h"
#include "agent_proto/burn_in/burn_in_report.h"
#include "core/log.h"
#include "core/service_notify.h"

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <charconv>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace {

namespace agent = gpurent::agent;
using Flags = std::map<std::string, std::string>;

void print_usage() {
  std::printf(
      "usage: gpurent-agent probe [--from DIR]\n"
      "       gpurent-agent burn-in --from DIR\n"
      "       gpurent-agent enroll --url https://HOST:PORT --token gpe_... --ca-file CA.crt\n"
      "                            --state-dir DIR\n"
      "       gpurent-agent run --url https://HOST:PORT --state-dir DIR\n"
      "                         [--backend simulated|nvidia-smi] [--heartbeat 10s]\n"
      "                         [--gpus 8] [--model NAME] [--topology nvswitch|nvlink-pairs|pcie]\n"
      "                         [--nvlink NV18] [--faults "
      "xid79@30s:gpu1,dbe@2m,thermal@90s,hang@10m,slow-gpu@0s:gpu3,nvlink-down@0s:gpu1]\n"
      "                         [--hostname NAME]\n"
      "                         [--access-root DIR] [--provision-hook CMD]\n"
      "                         [--provision-timeout 30m] [--provision-delay 2s]\n"
      "                         [--access-hook CMD] [--wipe-hook CMD] [--hook-timeout 10m]\n"
      "                         [--burn-in-hook CMD] [--burn-in-timeout 30m]\n"
      "                         [--notice-file /run/gpurent/notice.json|none]\n"
      "                         [--reboot-hook 'systemctl reboot'|none] [--reboot-timeout 2m]\n"
      "                         [--ssh-host-keys /etc/ssh] [--sshd-address 127.0.0.1:22|none]\n"
      "                         [--log-level info] [--log-format text|json]\n\n"
      "  probe   print this node's GPU telemetry, link matrix and XID events as JSON; --from\n"
      "          reads DIR/query.csv, DIR/topo.txt and DIR/kern.log instead of the node\n"
      "  burn-in print the results of captured burn-in runs as JSON: DIR/all_reduce_perf.txt,\n"
      "          DIR/nvbandwidth.txt, DIR/dcgmi_diag.txt, DIR/gpu_burn.txt (exit 2 if any\n"
      "          does not parse, or none is there)\n"
      "  enroll  make a key, have the control plane sign it with the node's enrolment token,\n"
      "          and keep key, certificate and CA in the state folder\n"
      "  run     keep the channel to the control plane: hello, heartbeats, tasks; with an\n"
      "          sshd address, DIR/ssh_probe_key proves each rental's login, and the agent\n"
      "          does not start (exit 2) when sshd could not read the access root\n");
}

// --name VALUE or --name=VALUE; a flag given twice keeps the last.
std::optional<Flags> parse_flags(const std::vector<std::string>& args) {
  Flags flags;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a.rfind("--", 0) != 0 || a.size() < 3) {
      std::fprintf(stderr, "gpurent-agent: unexpected argument '%s'\n", a.c_str());
      return std::nullopt;
    }
    auto eq = a.find('=');
    if (eq != std::string::npos) {
      flags[a.substr(2, eq - 2)] = a.substr(eq + 1);
    } else if (i + 1 < args.size()) {
      flags[a.substr(2)] = args[++i];
    } else {
      std::fprintf(stderr, "gpurent-agent: %s needs a value\n", a.c_str());
      return std::nullopt;
    }
  }
  return flags;
}

// Flags outside `known` are a usage error, named on stderr.
bool only_known(const char* command, const Flags& flags, std::initializer_list<const char*> known) {
  for (const auto& [name, value] : flags) {
    bool found = false;
    for (const char* k : known) found = found || name == k;
    if (!found) {
      std::fprintf(stderr, "gpurent-agent %s: unknown flag --%s\n", command, name.c_str());
      return false;
    }
  }
  return true;
}

// Missing required flags are a usage error, named on stderr.
bool all_given(const char* command, const Flags& flags, std::initializer_list<const char*> needed) {
  for (const char* n : needed) {
    if (!flags.count(n)) {
      std::fprintf(stderr, "gpurent-agent %s: --%s is required\n", command, n);
      return false;
    }
  }
  return true;
}

std::string flag_or(const Flags& flags, const std::string& name, const std::string& fallback) {
  auto it = flags.find(name);
  return it == flags.end() ? fallback : it->second;
}

// "10s", "500ms", "2m", or whole seconds.
std::optional<std::chrono::milliseconds> parse_duration(const std::string& text) {
  long long value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || value < 0) return std::nullopt;
  std::string unit(end, text.data() + text.size());
  if (unit == "ms") return std::chrono::milliseconds(value);
  if (unit == "s" || unit.empty()) return std::chrono::seconds(value);
  if (unit == "m") return std::chrono::minutes(value);
  return std::nullopt;
}

void init_logging(const Flags& flags) {
  std::string format = flag_or(flags, "log-format", "auto");
  gpurent::log::init(format == "json"   ? gpurent::LogFormat::kJson
                     : format == "text" ? gpurent::LogFormat::kText
                                        : gpurent::LogFormat::kAuto,
                     flag_or(flags, "log-level", "info"));
}

std::optional<agent::ServerUrl> url_flag(const char* command, const Flags& flags) {
  auto url = agent::parse_server_url(flags.at("url"));
  if (!url) {
    std::fprintf(stderr, "gpurent-agent %s: --url must be https://HOST[:PORT], not '%s'\n", command,
                 flags.at("url").c_str());
  }
  return url;
}

int enroll_command(const Flags& flags) {
  if (!only_known("enroll", flags,
                  {"url", "token", "ca-file", "state-dir", "log-level", "log-format"}) ||
      !all_given("enroll", flags, {"url", "token", "ca-file", "state-dir"})) {
    return 2;
  }
  auto url = url_flag("enroll", flags);
  if (!url) return 2;
  init_logging(flags);
  try {
    auto node_id = agent::enroll({.url = *url,
                                  .token = flags.at("token"),
                                  .ca_file = flags.at("ca-file"),
                                  .state_dir = flags.at("state-dir")});
    std::printf("enrolled as node %s\n", node_id.c_str());
    return 0;
  } catch (const agent::EnrollError& e) {
    std::fprintf(stderr, "gpurent-agent enroll: %s\n", e.what());
    return 1;
  }
}

std::string host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof(name) - 1) != 0 || name[0] == '\0') return "gpurent-agent";
  return name;
}

int run_command(const Flags& flags) {
  if (!only_known("run", flags,
                  {"url",          "state-dir",       "backend",         "gpus",
                   "model",        "topology",        "nvlink",          "heartbeat",
                   "access-root",  "provision-delay", "provision-hook",  "provision-timeout",
                   "access-hook",  "wipe-hook",       "hook-timeout",    "ssh-host-keys",
                   "faults",       "hostname",        "log-level",       "log-format",
                   "sshd-address", "burn-in-hook",    "burn-in-timeout", "notice-file",
                   "reboot-hook",  "reboot-timeout"}) ||
      !all_given("run", flags, {"url", "state-dir"})) {
    return 2;
  }
  auto url = url_flag("run", flags);
  if (!url) return 2;
  auto heartbeat = parse_duration(flag_or(flags, "heartbeat", "10s"));
  auto provision_delay = parse_duration(flag_or(flags, "provision-delay", "2s"));
  auto provision_timeout = parse_duration(flag_or(flags, "provision-timeout", "30m"));
  auto burn_in_timeout = parse_duration(flag_or(flags, "burn-in-timeout", "30m"));
  auto hook_timeout = parse_duration(flag_or(flags, "hook-timeout", "10m"));
  auto reboot_timeout = parse_duration(flag_or(flags, "reboot-timeout", "2m"));
  if (!heartbeat || heartbeat->count() == 0 || !provision_delay || !provision_timeout ||
      provision_timeout->count() == 0 || !hook_timeout || hook_timeout->count() == 0 ||
      !burn_in_timeout || burn_in_timeout->count() == 0 || !reboot_timeout ||
      reboot_timeout->count() == 0) {
    std::fprintf(stderr,
                 "gpurent-agent run: --heartbeat, --provision-delay, --provision-timeout, "
                 "--hook-timeout, --burn-in-timeout and --reboot-timeout take 10s, 500ms, 2m\n");
    return 2;
  }
  std::string backend_name = flag_or(flags, "backend", "nvidia-smi");
  std::unique_ptr<agent::GpuBackend> backend;
  if (backend_name == "simulated") {
    agent::SimulatedNode node;
    auto gpus = flag_or(flags, "gpus", "8");
    auto [end, ec] = std::from_chars(gpus.data(), gpus.data() + gpus.size(), node.gpus);
    auto shape = gpurent::topology::parse_interconnect(flag_or(flags, "topology", "nvswitch"));
    if (ec != std::errc() || end != gpus.data() + gpus.size() || !shape) {
      std::fprintf(stderr,
                   "gpurent-agent run: --gpus takes a count, --topology nvswitch, "
                   "nvlink-pairs or pcie\n");
      return 2;
    }
    node.model = flag_or(flags, "model", node.model);
    node.interconnect = *shape;
    node.nvlink_kind = flag_or(flags, "nvlink", node.nvlink_kind);
    try {
      node.faults = agent::parse_fault_schedule(flag_or(flags, "faults", ""));
      backend = agent::make_simulated_backend(node);
    } catch (const std::invalid_argument& e) {
      std::fprintf(stderr, "gpurent-agent run: %s\n", e.what());
      return 2;
    }
  } else if (backend_name == "nvidia-smi") {
    backend = agent::make_nvidia_smi_backend();
  } else {
    std::fprintf(stderr, "gpurent-agent run: --backend is simulated or nvidia-smi\n");
    return 2;
  }
  init_logging(flags);

  agent::StatePaths paths{flags.at("state-dir")};
  // The sshd install_access logs in to: the node's own by default; a simulated node has none
  // unless one is named.
  std::string sshd_address =
      flag_or(flags, "sshd-address", backend_name == "nvidia-smi" ? "127.0.0.1:22" : "none");
  if (sshd_address == "none") sshd_address.clear();
  if (!sshd_address.empty() && !agent::parse_host_port(sshd_address)) {
    std::fprintf(stderr, "gpurent-agent run: --sshd-address must be HOST:PORT or none\n");
    return 2;
  }
  std::filesystem::path access_root =
      flag_or(flags, "access-root", (paths.dir / "access").string());
  // Where the node's tenants read their notices: /run on a real node; a simulated one (many
  // may share a machine) keeps its own in its state folder.
  std::string notice_file =
      flag_or(flags, "notice-file",
              backend_name == "nvidia-smi" ? std::string(agent::kDefaultNoticeFile)
                                           : (paths.dir / "notice.json").string());
  if (notice_file == "none") notice_file.clear();
  // What reboots the node for a tenant's reboot task: the node itself by default; a simulated
  // node (an end-to-end test's, a developer's machine) only simulates it unless one is named.
  std::string reboot_hook =
      flag_or(flags, "reboot-hook", backend_name == "nvidia-smi" ? "systemctl reboot" : "none");
  if (reboot_hook == "none") reboot_hook.clear();
  // sshd reads a login's files as that login: a folder on the way that others cannot search
  // would fail every rental's login, so the agent does not start that way.
  if (!sshd_address.empty()) {
    if (auto problem = agent::sshd_access_problem(access_root)) {
      std::fprintf(stderr, "gpurent-agent run: sshd could not read the access files under %s: %s\n",
                   access_root.c_str(), problem->c_str());
      return 2;
    }
  }
  agent::TlsIdentity identity;
  std::optional<agent::TaskJournal> journal;
  try {
    identity = {.ca_pem = agent::read_state_file(paths.ca()),
                .certificate_pem = agent::read_state_file(paths.certificate()),
                .key_pem = agent::read_state_file(paths.key())};
    // The boot id tells a reboot task cut short by its own reboot from one the agent's
    // restart cut short (task_journal.h).
    journal.emplace(paths.task_journal(), agent::kJournalEntries, agent::read_boot_id());
  } catch (const agent::StateError& e) {
    std::fprintf(stderr, "gpurent-agent run: %s (enrol first: gpurent-agent enroll)\n", e.what());
    return 1;
  }
  // The key the login probe's certificates are for, made once; its public half goes in every
  // hello. Only an agent with an sshd to log in to has one.
  std::optional<std::string> probe_key;
  if (!sshd_address.empty()) {
    try {
      probe_key = agent::ensure_probe_key(paths.dir);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "gpurent-agent run: %s\n", e.what());
      return 1;
    }
  }
  // Without hooks the executor simulates provisioning and wipes (a delay; nothing to wipe)
  // and still writes the access files.
  auto executor = agent::make_executor(
      {.access_root = access_root,
       .provision_hook = agent::hook_argv(flag_or(flags, "provision-hook", "")),
       .provision_timeout = *provision_timeout,
       .provision_delay = *provision_delay,
       .access_hook = agent::hook_argv(flag_or(flags, "access-hook", "")),
       .wipe_hook = agent::hook_argv(flag_or(flags, "wipe-hook", "")),
       .hook_timeout = *hook_timeout,
       .burn_in_hook = agent::hook_argv(flag_or(flags, "burn-in-hook", "")),
       .burn_in_timeout = *burn_in_timeout,
       .sshd_address = sshd_address,
       .probe_key = probe_key ? agent::probe_key_path(paths.dir) : std::filesystem::path(),
       .notice_file = notice_file,
       .reboot_hook = agent::hook_argv(reboot_hook),
       .reboot_timeout = *reboot_timeout,
       .reboot_notes = &*journal},
      *backend);
  agent::AgentRunner runner(
      {.hostname = flag_or(flags, "hostname", host_name()),
       .heartbeat = *heartbeat,
       .ssh_host_keys = agent::read_ssh_host_keys(flag_or(flags, "ssh-host-keys", "/etc/ssh")),
       .ssh_probe_key = probe_key,
       .notify = [](const std::string& state) { gpurent::service::notify(state); }},
      *backend, *executor, *journal, [url = *url, identity] {
        return agent::open_channel(url, identity, std::chrono::seconds(30));
      });

  // SIGTERM and SIGINT are taken by one thread with sigwait, blocked everywhere else (the
  // mask is inherited by every thread started after this), so stopping is ordinary code.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  std::thread waiter([&] {
    int sig = 0;
    sigwait(&signals, &sig);
    if (sig == SIGTERM || sig == SIGINT) {
      gpurent::log::info("stopping on signal {}", sig);
      runner.stop();
    }
  });
  gpurent::log::info("gpurent-agent {} running against {}:{} ({} backend)", GPURENT_VERSION,
                     url->host, url->port, backend_name);
  // Type=notify (agent/gpurent-agent.service): ready once its state is read and the loop is
  // next, reachable control plane or not (the agent waits for it as long as it takes, and a
  // start that waited would fail a node booted before its control plane). The watchdog is
  // pinged while the loop shows progress within half its interval.
  gpurent::service::notify("READY=1\nSTATUS=connecting to " + url->host + ":" +
                           std::to_string(url->port));
  gpurent::service::Watchdog watchdog(
      [&runner](std::chrono::milliseconds quarter) { return runner.responsive(2 * quarter); });
  runner.run();
  // run() can also end without a signal only if stop() was called; wake the waiter then.
  pthread_kill(waiter.native_handle(), SIGTERM);
  waiter.join();
  gpurent::log::info("stopped");
  return 0;
}

int probe_command(const Flags& flags) {
  if (!only_known("probe", flags, {"from"})) return 2;
  auto it = flags.find("from");
  auto inputs =
      it == flags.end() ? agent::collect_probe_inputs() : agent::read_probe_dir(it->second);
  auto report = agent::probe(inputs, agent::local_kernel_log_clock());
  for (const auto& problem : report.problems) {
    std::fprintf(stderr, "gpurent-agent probe: %s\n", problem.c_str());
  }
  std::cout << report.json.dump(2) << '\n';
  return 0;
}

int burn_in_command(const Flags& flags) {
  if (!only_known("burn-in", flags, {"from"}) || !all_given("burn-in", flags, {"from"})) return 2;
  std::error_code ec;
  if (!std::filesystem::is_directory(flags.at("from"), ec)) {
    std::fprintf(stderr, "gpurent-agent burn-in: %s is not a folder\n", flags.at("from").c_str());
    return 2;
  }
  namespace burn_in = gpurent::burn_in;
  auto report = burn_in::burn_in_report(burn_in::read_burn_in_dir(flags.at("from")));
  for (const auto& problem : report.problems) {
    std::fprintf(stderr, "gpurent-agent burn-in: %s\n", problem.c_str());
  }
  if (!report.problems.empty()) return 2;
  std::cout << report.json.dump(2) << '\n';
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "help" || args[0] == "--help" || args[0] == "-h") {
    print_usage();
    return args.empty() ? 2 : 0;
  }
  if (args[0] == "--version") {
    std::printf("gpurent-agent %s\n", GPURENT_VERSION);
    return 0;
  }
  std::string command = args[0];
  auto flags = parse_flags({args.begin() + 1, args.end()});
  if (!flags) return 2;
  if (command == "probe") return probe_command(*flags);
  if (command == "burn-in") return burn_in_command(*flags);
  if (command == "enroll") return enroll_command(*flags);
  if (command == "run") return run_command(*flags);
  std::fprintf(stderr, "gpurent-agent: unknown command '%s' (try --help)\n", command.c_str());
  return 2;
}
