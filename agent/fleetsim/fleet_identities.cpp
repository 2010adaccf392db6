// Enrolling and loading the fleet's nodes.
#include "agent/fleetsim/fleet_identities.h"

#include "agent/enrollment.h"
#include "agent/state_files.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <mutex>
#include <thread>

namespace gpurent::agent::fleetsim {

namespace fs = std::filesystem;

namespace {

bool is_enrolled(const fs::path& dir) {
  StatePaths paths{dir};
  std::error_code ec;
  return fs::exists(paths.certificate(), ec) && fs::exists(paths.key(), ec);
}

// Enrols `pending` with `parallel` threads; the nodes whose enrolment failed.
std::vector<std::string> enroll_all(const FleetOptions& options,
                                    const std::vector<EnrollEntry>& pending) {
  std::atomic<std::size_t> next{0};
  std::atomic<std::size_t> done{0};
  std::mutex mutex;
  std::vector<std::string> failed;
  auto worker = [&] {
    for (std::size_t i = next++; i < pending.size(); i = next++) {
      const auto& entry = pending[i];
      try {
        enroll({.url = options.server,
                .token = entry.token,
                .ca_file = options.ca_file,
                .state_dir = options.state_dir / entry.node_id});
      } catch (const EnrollError& e) {
        std::lock_guard lock(mutex);
        if (failed.empty()) {
          std::fprintf(stderr, "gpurent-fleetsim: enrolling %s: %s\n", entry.node_id.c_str(),
                       e.what());
        }
        failed.push_back(entry.node_id);
      }
      auto n = ++done;
      if (n % 1000 == 0 || n == pending.size()) {
        std::fprintf(stderr, "{\"enrolling\": %zu, \"of\": %zu}\n", n, pending.size());
      }
    }
  };
  std::vector<std::thread> threads;
  int count = std::min<int>(options.enroll_parallel, static_cast<int>(pending.size()));
  for (int i = 0; i < count; ++i) threads.emplace_back(worker);
  for (auto& t : threads) t.join();
  return failed;
}

}  // namespace

PreparedFleet prepare_fleet(const FleetOptions& options) {
  PreparedFleet out;
  std::error_code ec;
  fs::create_directories(options.state_dir, ec);
  if (ec) throw FleetSetupError("cannot make " + options.state_dir.string() + ": " + ec.message());

  std::vector<std::string> nodes;
  if (options.enroll_from) {
    std::vector<EnrollEntry> entries;
    try {
      entries = parse_enroll_file(read_state_file(*options.enroll_from));
    } catch (const StateError& e) {
      throw FleetSetupError(e.what());
    } catch (const std::invalid_argument& e) {
      throw FleetSetupError(options.enroll_from->string() + ": " + e.what());
    }
    if (options.agents > 0 && entries.size() > static_cast<std::size_t>(options.agents)) {
      entries.resize(static_cast<std::size_t>(options.agents));
    }
    std::vector<EnrollEntry> pending;
    for (const auto& e : entries) {
      if (!is_enrolled(options.state_dir / e.node_id)) pending.push_back(e);
    }
    std::vector<std::string> failed;
    if (!pending.empty()) {
      if (options.ca_file.empty()) throw FleetSetupError("--ca is needed to enrol nodes");
      failed = enroll_all(options, pending);
    }
    out.enrolled = static_cast<int>(pending.size() - failed.size());
    out.enroll_failures = static_cast<int>(failed.size());
    std::sort(failed.begin(), failed.end());
    for (const auto& e : entries) {
      if (!std::binary_search(failed.begin(), failed.end(), e.node_id)) nodes.push_back(e.node_id);
    }
  } else {
    for (const auto& entry : fs::directory_iterator(options.state_dir, ec)) {
      if (entry.is_directory() && is_enrolled(entry.path())) {
        nodes.push_back(entry.path().filename().string());
      }
    }
    if (ec)
      throw FleetSetupError("cannot read " + options.state_dir.string() + ": " + ec.message());
    std::sort(nodes.begin(), nodes.end());
    if (options.agents > 0) {
      if (nodes.size() < static_cast<std::size_t>(options.agents)) {
        throw FleetSetupError(std::to_string(options.agents) + " agents asked for, " +
                              std::to_string(nodes.size()) + " nodes enrolled in " +
                              options.state_dir.string() + " (enrol more with --enroll-from)");
      }
      nodes.resize(static_cast<std::size_t>(options.agents));
    }
  }
  if (nodes.empty()) throw FleetSetupError("no enrolled node to simulate");

  try {
    for (const auto& node : nodes) {
      StatePaths paths{options.state_dir / node};
      out.members.push_back({.node_id = node,
                             .certificate_pem = read_state_file(paths.certificate()),
                             .key_pem = read_state_file(paths.key()),
                             .state_dir = paths.dir});
    }
    out.ca_pem =
        read_state_file(options.ca_file.empty() ? StatePaths{options.state_dir / nodes.front()}.ca()
                                                : options.ca_file);
  } catch (const StateError& e) {
    throw FleetSetupError(e.what());
  }
  return out;
}

}  // namespace gpurent::agent::fleetsim
