// EmbeddedPostgres: initdb + pg_ctl in a local folder, as an unprivileged user when root.
#include "core/embedded_postgres.h"

#include "core/crypto.h"
#include "core/error.h"

#include <fcntl.h>
#include <pwd.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <spdlog/spdlog.h>
#include <pqxx/pqxx>

#include <cstring>
#include <filesystem>
#include <fstream>

namespace fs = std::filesystem;

namespace gpurent {
namespace {

constexpr int kPort = 5432;
constexpr std::size_t kMaxSocketPath = 100;  // sun_path is 108 bytes, with margin

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace

EmbeddedPostgres::EmbeddedPostgres(EmbeddedPostgresOptions options) : options_(std::move(options)) {
  data_dir_ = fs::absolute(options_.data_dir).lexically_normal().string();
  if (data_dir_.size() > 1 && data_dir_.back() == '/') data_dir_.pop_back();
  // The socket lives in the data folder unless that path is too long for a unix socket.
  socket_dir_ = data_dir_;
  if (socket_dir_.size() + 16 > kMaxSocketPath) {
    socket_dir_ = "/tmp/gpurent-pg-" + crypto::sha256_hex(data_dir_).substr(0, 16);
  }
  if (geteuid() == 0) {
    // PostgreSQL refuses to run as root: the server runs as an unprivileged system user.
    passwd* pw = getpwnam(options_.system_user.c_str());
    if (!pw) {
      throw ConfigError("running as root, but the system user '" + options_.system_user +
                        "' that PostgreSQL must run as does not exist (install postgresql-15)");
    }
    run_as_ = RunAs{pw->pw_uid, pw->pw_gid};
  }
  lock_data_dir();
}

EmbeddedPostgres::~EmbeddedPostgres() {
  try {
    stop();
  } catch (const std::exception& e) {
    spdlog::error("stopping embedded PostgreSQL failed: {}", e.what());
  }
  if (lock_fd_ >= 0) close(lock_fd_);
}

void EmbeddedPostgres::lock_data_dir() {
  fs::path lock_path = data_dir_ + ".lock";
  std::error_code ec;
  fs::create_directories(lock_path.parent_path(), ec);
  lock_fd_ = open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (lock_fd_ < 0) {
    throw ConfigError("cannot create lock file " + lock_path.string() + ": " +
                      std::strerror(errno));
  }
  if (flock(lock_fd_, LOCK_EX | LOCK_NB) != 0) {
    std::string holder = read_file(lock_path);
    close(lock_fd_);
    lock_fd_ = -1;
    throw ConfigError("data folder " + data_dir_ + " is in use by another gpurentd (pid " +
                      (holder.empty() ? std::string("unknown") : holder) + ")");
  }
  std::string pid = std::to_string(getpid());
  if (ftruncate(lock_fd_, 0) != 0 || write(lock_fd_, pid.data(), pid.size()) < 0) {
    spdlog::warn("cannot record pid in {}", lock_path.string());
  }
}

SubprocessResult EmbeddedPostgres::run(const std::vector<std::string>& argv) {
  return run_subprocess(argv, run_as_, run_as_ ? "/" : "");
}

void EmbeddedPostgres::ensure_reachable(const std::string& dir) {
  if (!run_as_) return;
  auto probe = [&] { return run({"test", "-x", dir}).exit_code == 0; };
  if (probe()) return;
  // A checkout under /root is not reachable by the server's user. Grant that one user
  // traverse permission on the ancestors (ACL), rather than opening them to everyone.
  for (fs::path p = fs::path(dir); p != p.root_path(); p = p.parent_path()) {
    struct stat st {};
    if (stat(p.c_str(), &st) != 0) continue;
    if (st.st_mode & S_IXOTH) continue;
    auto r = run_subprocess({"setfacl", "-m", "u:" + options_.system_user + ":x", p.string()});
    if (r.exit_code == 0) {
      spdlog::warn("granted user {} traverse permission on {} so it can reach {}",
                   options_.system_user, p.string(), data_dir_);
    }
  }
  if (!probe()) {
    throw ConfigError("the PostgreSQL user '" + options_.system_user + "' cannot reach " + dir +
                      "; choose a data_dir it can reach (GPURENT_DATA_DIR) or set DATABASE_URL");
  }
}

void EmbeddedPostgres::prepare_dir(const std::string& dir) {
  fs::create_directories(dir);
  if (run_as_ && chown(dir.c_str(), run_as_->uid, run_as_->gid) != 0) {
    throw ConfigError("cannot hand " + dir + " to user " + options_.system_user);
  }
  chmod(dir.c_str(), 0700);
}

void EmbeddedPostgres::start() {
  if (running_) return;
  fs::path parent = fs::path(data_dir_).parent_path();
  fs::create_directories(parent);
  ensure_reachable(parent.string());

  bool initialised = fs::exists(fs::path(data_dir_) / "PG_VERSION");
  if (!initialised) {
    prepare_dir(data_dir_);
    spdlog::info("initialising embedded PostgreSQL in {}", data_dir_);
    std::vector<std::string> initdb = {options_.bin_dir + "/initdb",
                                       "-D",
                                       data_dir_,
                                       "-U",
                                       "gpurent",
                                       "-A",
                                       "trust",
                                       "-E",
                                       "UTF8",
                                       "--no-locale",
                                       "--no-instructions"};
    if (!options_.durable) initdb.push_back("--no-sync");
    auto r = run(initdb);
    if (r.exit_code != 0) throw ConfigError("initdb failed: " + r.output);
  }
  if (socket_dir_ != data_dir_) prepare_dir(socket_dir_);

  if (run({options_.bin_dir + "/pg_ctl", "-D", data_dir_, "status"}).exit_code == 0) {
    spdlog::warn("adopting the PostgreSQL server left running in {}", data_dir_);
  } else {
    std::string opts = "-k " + socket_dir_ + " -c listen_addresses='' -p " + std::to_string(kPort) +
                       " -c max_connections=200";
    opts += options_.durable ? " -c fsync=on"
                             : " -c fsync=off -c synchronous_commit=off -c full_page_writes=off";
    auto r = run({options_.bin_dir + "/pg_ctl", "-D", data_dir_, "-l", data_dir_ + "/server.log",
                  "-o", opts, "-w", "-t", "60", "start"});
    if (r.exit_code != 0) {
      throw ConfigError("PostgreSQL did not start: " + r.output +
                        read_file(data_dir_ + "/server.log"));
    }
  }
  running_ = true;
  create_database();
}

void EmbeddedPostgres::stop() {
  if (!running_) return;
  auto r =
      run({options_.bin_dir + "/pg_ctl", "-D", data_dir_, "-m", "fast", "-w", "-t", "60", "stop"});
  if (r.exit_code != 0) spdlog::warn("pg_ctl stop: {}", r.output);
  running_ = false;
}

std::string EmbeddedPostgres::url(const std::string& database) const {
  return "postgresql://gpurent@/" + (database.empty() ? options_.database : database) +
         "?host=" + socket_dir_ + "&port=" + std::to_string(kPort);
}

void EmbeddedPostgres::create_database() {
  pqxx::connection conn(url("postgres"));
  pqxx::nontransaction tx(conn);
  auto r = tx.exec_params("SELECT 1 FROM pg_database WHERE datname = $1", options_.database);
  if (r.empty()) tx.exec("CREATE DATABASE " + tx.quote_name(options_.database));
}

}  // namespace gpurent
