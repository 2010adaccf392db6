// gpurent-fleetsim's command line and its enrolment file: what to simulate, against which
// listener, and which nodes' tokens to enrol with. Pure: parsed and checked here, used by
// cmd/gpurent_fleetsim_main.cpp.
#pragma once

#include "agent/gpu_backend.h"
#include "agent/server_url.h"

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpurent::agent::fleetsim {

struct FleetOptions {
  ServerUrl server;
  std::filesystem::path ca_file;    // the agents' CA: trusted alone for the listener
  std::filesystem::path state_dir;  // one folder per node, as `gpurent-agent enroll` makes it
  std::optional<std::filesystem::path> enroll_from;  // `node_id token` lines
  int agents = 0;                                    // 0: every node known
  std::chrono::milliseconds heartbeat{10'000};
  // Connects are spread evenly over this long, so a fleet does not arrive in one burst.
  std::chrono::milliseconds ramp{0};
  std::chrono::milliseconds status_interval{10'000};
  std::chrono::milliseconds provision_delay{2'000};
  std::chrono::milliseconds backoff_initial{1'000};
  std::chrono::milliseconds backoff_max{60'000};
  int io_threads = 1;       // 1 or 2
  int task_threads = 4;     // the simulated executors' blocking work
  int enroll_parallel = 8;  // enrolments at once
  SimulatedNode node;
  std::string log_level = "warn";
  bool enroll_only = false;  // enrol what the file names, then exit without connecting
};

struct ParsedFleetArgs {
  std::optional<FleetOptions> options;  // nullopt: `error` says why, or help was asked for
  std::string error;
  bool help = false;
};

// --name VALUE or --name=VALUE, and the bare --enroll-only. --server and --state-dir are required;
// --ca is required unless every node is enrolled already (checked when the state is loaded).
ParsedFleetArgs parse_fleet_args(const std::vector<std::string>& args);

// "10s", "500ms", "2m", "1h", or whole seconds.
std::optional<std::chrono::milliseconds> parse_duration(std::string_view text);

struct EnrollEntry {
  std::string node_id;  // nod_…: also the name of the node's state folder
  std::string token;    // gpe_…
  bool operator==(const EnrollEntry&) const = default;
};

// One `node_id token` per line, separated by white space; blank lines and lines starting
// with '#' are skipped. Throws std::invalid_argument naming the line of anything else, a
// node id that is not one, or a node given twice.
std::vector<EnrollEntry> parse_enroll_file(std::string_view text);

}  // namespace gpurent::agent::fleetsim
