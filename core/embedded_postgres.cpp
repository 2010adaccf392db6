// EmbeddedPostgres: initdb + pg_ctl in a local folder, as an unprivileged user when root.
#include "core/embedded_postgres.h"

#include "core/crypto.h"
#include "core/error.h"
#include "core/log.h"

#include <fcntl.h>
#include <pwd.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <pqxx/pqxx>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <vector>

namespace fs = std::filesystem;

namespace gpurent {
namespace {

constexpr int kPort = 5432;
constexpr std::size_t kMaxSocketPath = 100;  // sun_path is 108 bytes, with margin

std::string read_text_file(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// The absolute data folder, without a trailing slash.
std::string absolute_data_dir(const std::string& data_dir) {
  std::string dir = fs::absolute(data_dir).lexically_normal().string();
  if (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  return dir;
}

// The socket lives in the data folder unless that path is too long for a unix socket.
std::string socket_dir_for(const std::string& data_dir) {
  if (data_dir.size() + 16 > kMaxSocketPath) {
    return "/tmp/gpurent-pg-" + crypto::sha256_hex(data_dir).substr(0, 16);
  }
  return data_dir;
}

std::string socket_url(const std::string& database, const std::string& socket_dir, int port) {
  return "postgresql://gpurent@/" + database + "?host=" + socket_dir +
         "&port=" + std::to_string(port);
}

// Whether some process holds the data folder's lock (lock_data_dir) right now. The probe
// takes a shared lock for an instant when the folder is free; a gpurentd starting in that
// very instant would see the folder as in use and stop with that error.
bool data_dir_lock_held(const std::string& data_dir) {
  int fd = open((data_dir + ".lock").c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;  // never locked
  bool held = flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK;
  close(fd);  // drops the probe's own lock, if it got one
  return held;
}

std::string trimmed(std::string s) {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\r')) s.pop_back();
  return s;
}

}  // namespace

EmbeddedPostgres::EmbeddedPostgres(EmbeddedPostgresOptions options) : options_(std::move(options)) {
  data_dir_ = absolute_data_dir(options_.data_dir);
  socket_dir_ = socket_dir_for(data_dir_);
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
    log::error("stopping embedded PostgreSQL failed: {}", e.what());
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
    std::string holder = read_text_file(lock_path);
    close(lock_fd_);
    lock_fd_ = -1;
    throw ConfigError("data folder " + data_dir_ + " is in use by another gpurentd (pid " +
                      (holder.empty() ? std::string("unknown") : holder) + ")");
  }
  std::string pid = std::to_string(getpid());
  if (ftruncate(lock_fd_, 0) != 0 || write(lock_fd_, pid.data(), pid.size()) < 0) {
    log::warn("cannot record pid in {}", lock_path.string());
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
      log::warn("granted user {} traverse permission on {} so it can reach {}",
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
    log::info("initialising embedded PostgreSQL in {}", data_dir_);
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
    log::warn("adopting the PostgreSQL server left running in {}", data_dir_);
  } else {
    std::string opts = "-k " + socket_dir_ + " -c listen_addresses='' -p " + std::to_string(kPort) +
                       " -c max_connections=200";
    opts += options_.durable ? " -c fsync=on"
                             : " -c fsync=off -c synchronous_commit=off -c full_page_writes=off";
    auto r = run({options_.bin_dir + "/pg_ctl", "-D", data_dir_, "-l", data_dir_ + "/server.log",
                  "-o", opts, "-w", "-t", "60", "start"});
    if (r.exit_code != 0) {
      throw ConfigError("PostgreSQL did not start: " + r.output +
                        read_text_file(data_dir_ + "/server.log"));
    }
  }
  running_ = true;
  create_database();
}

void EmbeddedPostgres::stop() {
  if (!running_) return;
  auto r =
      run({options_.bin_dir + "/pg_ctl", "-D", data_dir_, "-m", "fast", "-w", "-t", "60", "stop"});
  if (r.exit_code != 0) log::warn("pg_ctl stop: {}", r.output);
  running_ = false;
}

std::string EmbeddedPostgres::url(const std::string& database) const {
  return socket_url(database.empty() ? options_.database : database, socket_dir_, kPort);
}

std::optional<std::string> EmbeddedPostgres::running_server_url(
    const EmbeddedPostgresOptions& options) {
  std::string data_dir = absolute_data_dir(options.data_dir);
  if (!data_dir_lock_held(data_dir)) return std::nullopt;
  // postmaster.pid, written by the server itself: line 4 is its port, line 5 its socket
  // folder, line 8 its state ("ready" once it accepts connections).
  std::ifstream pid_file(data_dir + "/postmaster.pid");
  std::vector<std::string> lines;
  for (std::string line; std::getline(pid_file, line);) lines.push_back(trimmed(line));
  if (lines.size() < 8 || lines[7] != "ready" || lines[4].empty()) return std::nullopt;
  int port = 0;
  try {
    port = std::stoi(lines[3]);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  std::string url = socket_url(options.database, lines[4], port);
  try {
    pqxx::connection probe(url + "&connect_timeout=5");
    if (!probe.is_open()) return std::nullopt;
  } catch (const std::exception& e) {
    log::info("the PostgreSQL in {} does not accept connections: {}", data_dir, e.what());
    return std::nullopt;
  }
  return url;
}

void EmbeddedPostgres::create_database() {
  pqxx::connection conn(url("postgres"));
  pqxx::nontransaction tx(conn);
  auto r = tx.exec_params("SELECT 1 FROM pg_database WHERE datname = $1", options_.database);
  if (r.empty()) tx.exec("CREATE DATABASE " + tx.quote_name(options_.database));
}

}  // namespace gpurent
