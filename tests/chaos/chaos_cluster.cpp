// ChaosDatabase, Replica and Fleet.
#include "tests/chaos/chaos_cluster.h"

#include "core/migrator.h"
#include "core/subprocess.h"
#include "migrations/embedded_migrations.h"
#include "tests/support/paths.h"
#include "tests/support/wait_for.h"

#include <pqxx/pqxx>

#include <pwd.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace gpurent::testing::chaos {

namespace {
constexpr const char* kBinDir = "/usr/lib/postgresql/15/bin";
constexpr const char* kDatabase = "gpurent_chaos";
}  // namespace

ChaosDatabase::ChaosDatabase(const std::string& dir, int commit_delay_us) : data_dir_(dir + "/pg") {
  if (geteuid() == 0) {
    passwd* pw = getpwnam("postgres");
    if (!pw) throw std::runtime_error("running as root, but there is no postgres user");
    run_as_ = RunAs{pw->pw_uid, pw->pw_gid};
  }
  pg_ = std::make_unique<EmbeddedPostgres>(
      EmbeddedPostgresOptions{.data_dir = data_dir_, .database = kDatabase, .durable = true});
  pg_->start();
  Migrator(url(), embedded_migrations()).migrate();
  // commit_delay applies only with fsync on (durable) and, with commit_siblings 0, to every
  // commit. Set in postgresql.auto.conf, so it survives the restarts below.
  pqxx::connection c(url());
  pqxx::nontransaction tx(c);
  tx.exec("ALTER SYSTEM SET commit_delay = " + std::to_string(commit_delay_us));
  tx.exec("ALTER SYSTEM SET commit_siblings = 0");
  tx.exec("SELECT pg_reload_conf()");
}

ChaosDatabase::~ChaosDatabase() = default;

std::string ChaosDatabase::url() const {
  return pg_->url(kDatabase);
}

void ChaosDatabase::restart_immediate() {
  // pg_ctl restart keeps the options the server was started with (postmaster.opts).
  auto r =
      run_subprocess({std::string(kBinDir) + "/pg_ctl", "-D", data_dir_, "-l",
                      data_dir_ + "/server.log", "-m", "immediate", "-w", "-t", "60", "restart"},
                     run_as_, run_as_ ? "/" : "");
  if (r.exit_code != 0) throw std::runtime_error("pg_ctl restart failed: " + r.output);
}

bool ChaosDatabase::wait_accepting(std::chrono::milliseconds limit) {
  return wait_for(
      [&] {
        try {
          pqxx::connection c(url() + "&connect_timeout=2");
          return c.is_open();
        } catch (const std::exception&) {
          return false;
        }
      },
      limit, std::chrono::milliseconds(100));
}

Replica::Replica(int index, ServerOptions options) : index_(index), options_(std::move(options)) {
  start();
}

Replica::~Replica() {
  (void)stop();
}

void Replica::start() {
  auto p = std::make_unique<ServerProcess>(options_);
  port_ = p->port();
  agent_port_ = p->agent_port();
  std::lock_guard lock(mutex_);
  process_ = std::move(p);
  up_ = true;
}

void Replica::kill9() {
  std::lock_guard lock(mutex_);
  if (!process_) return;
  up_ = false;
  process_->send_signal(SIGKILL);
  if (process_->wait_exit(std::chrono::seconds(10)) != -1) {
    verdicts_.push_back("replica " + std::to_string(index_) + " did not die of SIGKILL");
  }
  if (auto v = process_->stop(); !v.empty()) verdicts_.push_back(v);
  process_.reset();
}

void Replica::restart() {
  start();
}

bool Replica::running() {
  std::lock_guard lock(mutex_);
  return process_ && process_->running();
}

std::string Replica::stop() {
  std::lock_guard lock(mutex_);
  if (process_) {
    up_ = false;
    if (auto v = process_->stop(); !v.empty()) verdicts_.push_back(v);
    process_.reset();
  }
  std::string all;
  for (const auto& v : verdicts_) all += v + "\n";
  verdicts_.clear();
  return all;
}

Fleet::Fleet(std::string dir, int proxy_port, std::string ca_file, int agents,
             std::chrono::milliseconds provision_delay)
    : dir_(std::move(dir)),
      proxy_port_(proxy_port),
      ca_file_(std::move(ca_file)),
      agents_(agents),
      provision_delay_(provision_delay) {
  std::filesystem::create_directories(dir_);  // the logs' folder, before the first start
}

void Fleet::start(const std::string& enroll_file) {
  std::vector<std::string> args = {"--server", "https://127.0.0.1:" + std::to_string(proxy_port_),
                                   "--ca", ca_file_, "--state-dir", dir_ + "/state", "--agents",
                                   std::to_string(agents_), "--heartbeat", "1s", "--ramp", "500ms",
                                   "--status-interval", "250ms", "--provision-delay",
                                   std::to_string(provision_delay_.count()) + "ms",
                                   // Back within a second of any drop: the suite times it.
                                   "--backoff-initial", "200ms", "--backoff-max", "1s"};
  if (!enroll_file.empty()) {
    args.push_back("--enroll-from");
    args.push_back(enroll_file);
  }
  ++starts_;
  process_ = std::make_unique<ChildProcess>(fleetsim_path(), args,
                                            dir_ + "/fleet-" + std::to_string(starts_) + ".log");
}

void Fleet::kill9() {
  if (process_) process_->stop(SIGKILL);
}

int Fleet::stop() {
  return process_ ? process_->stop(SIGTERM) : 0;
}

std::string Fleet::log() const {
  return process_ ? process_->log() : "";
}

nlohmann::json Fleet::last_status() const {
  nlohmann::json last = nlohmann::json::object();
  std::istringstream lines(log());
  for (std::string line; std::getline(lines, line);) {
    if (line.find("\"connected\"") == std::string::npos) continue;
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_object()) last = j;
  }
  return last;
}

}  // namespace gpurent::testing::chaos
