// PostgreSQL restarted under load (a fast shutdown, a crash) and failed over to a promoted
// standby, with two gpurentd replicas on it: while it is down every answer that needs it is
// 503 `unavailable` in the contract's error format, and within 30 s of its return each
// replica, by itself and still the same process, is ready, reads and writes, runs its
// background jobs, and hears the other replica's announcements again (its listener LISTENs
// on a new connection).
#include "core/embedded_postgres.h"
#include "core/migrator.h"
#include "core/subprocess.h"
#include "migrations/embedded_migrations.h"
#include "tests/support/contract_check.h"
#include "tests/support/http_client.h"
#include "tests/support/pg_harness.h"
#include "tests/support/server_process.h"
#include "tests/support/wait_for.h"

#include <gtest/gtest.h>

#include <pqxx/pqxx>

#include <pwd.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <functional>
#include <iomanip>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace gpurent::testing::database_restart_e2e {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using Headers = std::map<std::string, std::string>;
using nlohmann::json;

// The claim: from PostgreSQL accepting connections again to a replica doing everything.
constexpr auto kRecoveryLimit = 30s;
// How long PostgreSQL stays down (once both replicas have been seen saying so).
constexpr auto kOutage = 2s;
// The longest any answer may take, outage or not: the pool's wait (--db_pool_wait, 2 s) and
// the statement timeout set below (5 s), with room for a loaded machine. A request waiting
// on a dead connection longer than this is a hang, whatever it answers in the end.
constexpr auto kLongestAnswer = 10s;
constexpr const char* kPassword = "a good passphrase";
constexpr const char* kPgBin = "/usr/lib/postgresql/15/bin";

double seconds(Clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

struct Login {
  std::string email;
  Headers headers;  // the session cookie and its CSRF token
};

// What the load saw on one replica. Every answer is 2xx or a well-formed 503; anything else
// (another status, a 503 without the error body or Retry-After, a response the OpenAPI
// document does not allow, no answer, an answer slower than kLongestAnswer) is a problem.
class Tally {
 public:
  void ok(bool write, Clock::time_point sent, Clock::duration took) {
    std::lock_guard lock(mutex_);
    (write ? writes_ : reads_)++;
    note(took);
    auto& first = write ? first_write_ : first_read_;
    if (since_ && sent >= *since_ && !first) first = Clock::now();
  }
  // `in_doubt`: the connection went during COMMIT, so the change may have been made.
  void unavailable(Clock::time_point sent, Clock::duration took, bool in_doubt) {
    std::lock_guard lock(mutex_);
    ++unavailable_;
    if (in_doubt) ++in_doubt_;
    note(took);
    if (since_ && sent >= *since_) ++unavailable_since_;
  }
  void problem(std::string what) {
    std::lock_guard lock(mutex_);
    if (problems_.size() < 20) problems_.push_back(std::move(what));
    ++problem_count_;
  }
  // From now on, firsts are of requests sent after `at`.
  void mark(Clock::time_point at) {
    std::lock_guard lock(mutex_);
    since_ = at;
    first_read_.reset();
    first_write_.reset();
    unavailable_since_ = 0;
  }
  std::optional<Clock::time_point> first_read() const {
    std::lock_guard lock(mutex_);
    return first_read_;
  }
  std::optional<Clock::time_point> first_write() const {
    std::lock_guard lock(mutex_);
    return first_write_;
  }
  int unavailable_since_mark() const {
    std::lock_guard lock(mutex_);
    return unavailable_since_;
  }
  std::string summary() const {
    std::lock_guard lock(mutex_);
    std::ostringstream out;
    out << reads_ << " reads and " << writes_ << " writes answered, " << unavailable_
        << " × 503 unavailable (" << in_doubt_ << " in doubt), " << problem_count_
        << " problems, slowest answer " << std::fixed << std::setprecision(2) << seconds(slowest_)
        << " s";
    return out.str();
  }
  std::vector<std::string> problems() const {
    std::lock_guard lock(mutex_);
    return problems_;
  }

 private:
  void note(Clock::duration took) { slowest_ = std::max(slowest_, took); }

  mutable std::mutex mutex_;
  int reads_ = 0, writes_ = 0, unavailable_ = 0, in_doubt_ = 0, unavailable_since_ = 0,
      problem_count_ = 0;
  Clock::duration slowest_{};
  std::optional<Clock::time_point> since_, first_read_, first_write_;
  std::vector<std::string> problems_;
};

// The PostgreSQL system user when we are root (the server refuses to run as root).
std::optional<RunAs> server_user() {
  if (geteuid() != 0) return std::nullopt;
  passwd* pw = getpwnam("postgres");
  if (!pw) throw std::runtime_error("running as root, but there is no postgres user");
  return RunAs{pw->pw_uid, pw->pw_gid};
}

// Runs a PostgreSQL program as the server's user; its output when it fails.
std::string pg_program(const std::string& name, std::vector<std::string> args) {
  args.insert(args.begin(), std::string(kPgBin) + "/" + name);
  auto as = server_user();
  auto r = run_subprocess(args, as, as ? "/" : "");
  return r.exit_code == 0 ? "" : name + " failed: " + r.output;
}

// `pg_ctl stop -m immediate`: every backend is killed without a checkpoint, as in a crash of
// the server's machine; the next start runs crash recovery.
void stop_immediately(const std::string& data_dir) {
  auto failed = pg_program("pg_ctl", {"-D", data_dir, "-m", "immediate", "-w", "-t", "60", "stop"});
  ASSERT_TRUE(failed.empty()) << failed;
}

class DatabaseRestartE2E : public ::testing::Test {
 protected:
  // The cluster (durable, as in production: a crash must not lose what was acknowledged; on
  // tmpfs, where the run's cluster lives too, fsync costs nothing), migrated; with `standby`,
  // a streaming standby of it as well, and the replicas reach them through one libpq
  // multi-host URL that only a read-write server satisfies, as an operator would set it.
  // Then two replicas, and accounts for the load and an admin.
  void start(bool standby) {
    // A cluster of its own: restarting the run's shared one would break every other test.
    dir_ = make_cluster_dir();
    pg_ = std::make_unique<EmbeddedPostgres>(
        EmbeddedPostgresOptions{.data_dir = dir_ + "/primary", .durable = true});
    pg_->start();
    Migrator(pg_->url(), embedded_migrations()).migrate();
    std::string url = pg_->url();
    if (standby) {
      std::string standby_dir = dir_ + "/standby";
      std::filesystem::create_directory(standby_dir);
      if (auto as = server_user()) {
        ASSERT_EQ(chown(standby_dir.c_str(), as->uid, as->gid), 0);
      }
      std::filesystem::permissions(standby_dir, std::filesystem::perms::owner_all);
      // -R writes standby.signal and primary_conninfo: it starts as a hot standby.
      auto failed = pg_program("pg_basebackup",
                               {"-D", standby_dir, "-h", pg_->socket_dir(), "-p", "5432", "-U",
                                "gpurent", "-R", "-X", "stream", "-c", "fast", "--no-sync"});
      ASSERT_TRUE(failed.empty()) << failed;
      // The primary's socket lives in its data folder, so the copy has the socket's lock file.
      std::filesystem::remove(standby_dir + "/.s.PGSQL.5432.lock");
      standby_ = std::make_unique<EmbeddedPostgres>(
          EmbeddedPostgresOptions{.data_dir = standby_dir, .durable = true});
      standby_->start();
      url = "postgresql://gpurent@/gpurent?host=" + pg_->socket_dir() + "," +
            standby_->socket_dir() + "&port=5432&target_session_attrs=read-write";
    }
    for (auto* replica : {&a_, &b_}) {
      *replica = std::make_unique<ServerProcess>(
          ServerOptions{.database_url = url,
                        .flags = {"--rate_limit_per_credential=0", "--rate_limit_per_ip=0",
                                  "--db_statement_timeout=5s",
                                  // Every background job runs each second, so that one
                                  // succeeding since the database came back says it recovered.
                                  "--lifecycle_interval=1s", "--agent_task_poll=1s"}});
    }
    auto doc = http_request(a_->port(), "GET", "/v1/openapi.json");
    ASSERT_EQ(doc.status, 200);
    contract_ = std::make_unique<ContractCheck>(doc.json());

    admin_ = account(*a_, "root@example.com");
    {
      pqxx::connection c(pg_->url());
      pqxx::work tx(c);
      tx.exec_params("UPDATE users SET is_platform_admin = true WHERE email = $1", admin_.email);
      tx.commit();
    }
    admin_ = login(*a_, admin_.email);  // a session that knows it is an admin
    for (int i = 0; i < kClientsPerReplica * 2; ++i) {
      clients_.push_back(account(*a_, "load" + std::to_string(i) + "@example.com"));
    }
  }

  void TearDown() override {
    stop_load();
    for (auto* replica : {&a_, &b_}) {
      if (*replica) {
        auto verdict = (*replica)->stop();
        EXPECT_TRUE(verdict.empty()) << verdict;
        replica->reset();
      }
    }
    standby_.reset();  // stops the clusters
    pg_.reset();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);  // on tmpfs: memory
  }

  // Checks a response against the served OpenAPI document; the problems, one a line.
  std::string disagreement(const std::string& method, const std::string& path,
                           const HttpResult& r) const {
    std::string out;
    for (const auto& p :
         contract_->response(method, path, r.status, r.header("content-type"), r.body)) {
      out += p + "\n";
    }
    return out;
  }

  HttpResult send(ServerProcess& s, const std::string& method, const std::string& path,
                  const json& body, Headers headers) {
    if (!body.is_null()) headers.emplace("Content-Type", "application/json");
    return http_request(s.port(), method, path, body.is_null() ? "" : body.dump(), headers, 20s);
  }

  Login login(ServerProcess& s, const std::string& email) {
    auto r = send(s, "POST", "/v1/auth/login", {{"email", email}, {"password", kPassword}}, {});
    EXPECT_EQ(r.status, 200) << r.body;
    if (r.status != 200) return {email, {}};
    std::string cookie = r.header("set-cookie");
    return {email,
            {{"Cookie", cookie.substr(0, cookie.find(';'))},
             {"X-CSRF-Token", r.json().value("csrf_token", "")}}};
  }
  Login account(ServerProcess& s, const std::string& email) {
    auto r = send(s, "POST", "/v1/auth/signup",
                  {{"email", email}, {"password", kPassword}, {"org_name", email}}, {});
    EXPECT_EQ(r.status, 201) << r.body;
    return login(s, email);
  }

  // One client: reads and writes through the public API, one request after another, each
  // answer classified into `tally`.
  void client(ServerProcess& s, const Login& who, Tally& tally) {
    struct Step {
      const char* method;
      const char* path;
      bool write;
    };
    static constexpr Step kSteps[] = {
        {"GET", "/v1/me", false},         {"GET", "/v1/rentals", false},
        {"POST", "/v1/api-tokens", true}, {"GET", "/v1/gpu-models", false},
        {"POST", "/v1/auth/login", true},
    };
    for (int n = 0; !stop_load_; ++n) {
      const Step& step = kSteps[n % std::size(kSteps)];
      json body;
      Headers headers = who.headers;
      if (std::string(step.path) == "/v1/api-tokens") {
        body = {{"name", "load " + std::to_string(n)}, {"scopes", {"rentals:read"}}};
      } else if (std::string(step.path) == "/v1/auth/login") {
        body = {{"email", who.email}, {"password", kPassword}};
        headers.clear();
      }
      std::string what = std::string(step.method) + " " + step.path;
      auto sent = Clock::now();
      HttpResult r;
      try {
        r = send(s, step.method, step.path, body, headers);
      } catch (const std::exception& e) {
        tally.problem(what + ": no answer after " + std::to_string(seconds(Clock::now() - sent)) +
                      " s (" + e.what() + ")");
        continue;
      }
      auto took = Clock::now() - sent;
      if (took > kLongestAnswer) {
        tally.problem(what + " took " + std::to_string(seconds(took)) + " s");
      }
      if (auto d = disagreement(step.method, step.path, r); !d.empty()) {
        tally.problem(what + " " + std::to_string(r.status) + ": " + d + r.body);
      }
      if (r.status / 100 == 2) {
        tally.ok(step.write, sent, took);
      } else if (r.status == 503) {
        auto code = json::parse(r.body, nullptr, false);
        if (!code.is_object() || code["error"].value("code", "") != "unavailable" ||
            r.header("retry-after") != "1") {
          tally.problem(what + ": a 503 without the unavailable error and Retry-After: " + r.body);
        }
        bool in_doubt =
            code.is_object() &&
            code["error"].value("details", json::object()).value("outcome", "") == "unknown";
        tally.unavailable(sent, took, in_doubt);
      } else {
        tally.problem(what + " answered " + std::to_string(r.status) + ": " + r.body);
      }
    }
  }

  // Starts the clients and waits until they have read and written through both replicas.
  void start_load() {
    auto started = Clock::now();
    for (auto& t : tally_) t.mark(started);
    stop_load_ = false;
    for (int i = 0; i < kClientsPerReplica * 2; ++i) {
      int r = i % 2;
      load_.emplace_back([this, i, r] { client(r == 0 ? *a_ : *b_, clients_[i], tally_[r]); });
    }
    ASSERT_TRUE(wait_for([&] {
      return tally_[0].first_read() && tally_[0].first_write() && tally_[1].first_read() &&
             tally_[1].first_write();
    })) << tally_[0].summary()
        << "; " << tally_[1].summary();
  }
  // Stops the clients; every problem they met fails the test.
  void check_load() {
    stop_load();
    for (int r = 0; r < 2; ++r) {
      for (const auto& p : tally_[r].problems())
        ADD_FAILURE() << "replica "
                      << "AB"[r] << ": " << p;
    }
  }
  void stop_load() {
    stop_load_ = true;
    for (auto& t : load_) t.join();
    load_.clear();
  }

  int readyz(ServerProcess& s) {
    try {
      auto r = http_request(s.port(), "GET", "/readyz", "", {}, 20s);
      if (r.status == 503) {
        auto body = json::parse(r.body, nullptr, false);
        EXPECT_TRUE(body.is_object() && body["error"].value("code", "") == "unavailable") << r.body;
        EXPECT_EQ(r.header("retry-after"), "1");
      }
      return r.status;
    } catch (const std::exception& e) {
      ADD_FAILURE() << "/readyz did not answer: " << e.what();
      return 0;
    }
  }

  long long metric(ServerProcess& s, const std::string& name) {
    return read_metric(s.port(), name);
  }

  // Each background job's last success by the system clock (seconds since the epoch), from
  // /metrics (the families list every job from the start; 0 until its first success).
  std::map<std::string, double> job_successes(ServerProcess& s) {
    std::map<std::string, double> out;
    const std::string prefix = "gpurent_job_last_success_timestamp_seconds{job_name=\"";
    auto r = http_request(s.port(), "GET", "/metrics", "", {}, 10s);
    std::istringstream lines(r.body);
    for (std::string line; std::getline(lines, line);) {
      if (line.rfind(prefix, 0) != 0) continue;
      auto end = line.find('"', prefix.size());
      out[line.substr(prefix.size(), end - prefix.size())] =
          std::stod(line.substr(line.rfind(' ') + 1));
    }
    return out;
  }
  // The jobs that have not succeeded since `since`, by name; empty when every job has.
  std::string jobs_behind(ServerProcess& s, double since) {
    auto jobs = job_successes(s);
    if (jobs.empty()) return "(no job on /metrics)";
    std::string behind;
    for (const auto& [job, at] : jobs) {
      if (at < since) behind += job + " ";
    }
    return behind;
  }

  // The active images' names through `s` (served from its catalog snapshot); nullopt when
  // it did not answer 200.
  std::optional<std::set<std::string>> image_names(ServerProcess& s) {
    auto r = http_request(s.port(), "GET", "/v1/images", "", admin_.headers, 20s);
    if (r.status != 200) return std::nullopt;
    std::set<std::string> out;
    json body = r.json();
    for (const auto& i : body["items"]) out.insert(i["name"].get<std::string>());
    return out;
  }

  // Whether an image created through `writer` reaches `reader`'s snapshot by the announcement
  // alone: `reader` serves from memory (a second read builds nothing), and its listener did
  // not reconnect meanwhile (a reconnection drops the snapshot too, and would hide a listener
  // that connected but never LISTENed).
  bool announcement_reaches(ServerProcess& writer, ServerProcess& reader, const std::string& name,
                            Clock::time_point deadline) {
    if (!image_names(reader)) return false;
    long long misses = metric(reader, "gpurent_catalog_cache_misses_total");
    long long reconnects = metric(reader, "gpurent_notify_reconnects_total");
    auto before = image_names(reader);
    if (!before || metric(reader, "gpurent_catalog_cache_misses_total") != misses) return false;
    auto created = send(writer, "POST", "/v1/admin/images",
                        {{"name", name},
                         {"os", "Ubuntu 24.04"},
                         {"driver_version", "580.65.06"},
                         {"cuda_version", "13.0"}},
                        admin_.headers);
    if (created.status != 201) return false;
    bool seen = wait_for(
        [&] {
          auto names = image_names(reader);
          return names && names->count(name) == 1;
        },
        std::chrono::duration_cast<std::chrono::milliseconds>(
            std::max<Clock::duration>(deadline - Clock::now(), 0ms)),
        20ms);
    return seen && metric(reader, "gpurent_notify_reconnects_total") == reconnects;
  }

  // Under load, `fail` takes the database away and `repair` gives one back; each replica
  // must recover within kRecoveryLimit of `repair` returning. Prints the figures.
  void outage_under_load(const std::string& label, const std::string& tag,
                         const std::function<void()>& fail, const std::function<void()>& repair) {
    ServerProcess* replicas[2] = {a_.get(), b_.get()};
    pid_t pids[2] = {a_->pid(), b_->pid()};

    auto struck = Clock::now();
    for (auto& t : tally_) t.mark(struck);
    fail();
    // Down for kOutage, and each replica seen saying so to the load and to /readyz.
    bool said[2] = {false, false};
    EXPECT_TRUE(wait_for(
        [&] {
          for (int r = 0; r < 2; ++r) {
            if (!said[r]) said[r] = readyz(*replicas[r]) == 503;
          }
          return said[0] && said[1] && tally_[0].unavailable_since_mark() > 0 &&
                 tally_[1].unavailable_since_mark() > 0 && Clock::now() - struck >= kOutage;
        },
        15s, 50ms))
        << label << ": both replicas should answer 503 while PostgreSQL is down ("
        << tally_[0].summary() << "; " << tally_[1].summary() << ")";
    repair();
    auto back = Clock::now();
    double back_wall =
        std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    for (auto& t : tally_) t.mark(back);
    auto deadline = back + kRecoveryLimit;

    // Ready, reading, writing, and every background job run again: polled together, each
    // replica's times are its own.
    std::optional<Clock::time_point> ready[2], jobs[2];
    wait_for(
        [&] {
          for (int r = 0; r < 2; ++r) {
            if (!ready[r] && readyz(*replicas[r]) == 200) ready[r] = Clock::now();
            if (!jobs[r] && jobs_behind(*replicas[r], back_wall).empty()) jobs[r] = Clock::now();
          }
          return ready[0] && ready[1] && jobs[0] && jobs[1] && tally_[0].first_read() &&
                 tally_[0].first_write() && tally_[1].first_read() && tally_[1].first_write();
        },
        std::chrono::duration_cast<std::chrono::milliseconds>(kRecoveryLimit), 20ms);

    // Announcements: a change through each replica reaches the other's snapshot.
    std::optional<Clock::time_point> hears[2];
    for (int r = 0; r < 2; ++r) {
      for (int round = 0; !hears[r] && Clock::now() < deadline; ++round) {
        std::string name = tag + "-to-" + std::to_string(r) + "-" + std::to_string(round);
        if (announcement_reaches(*replicas[1 - r], *replicas[r], name, deadline)) {
          hears[r] = Clock::now();
        } else {
          std::this_thread::sleep_for(50ms);
        }
      }
    }

    auto since_back = [&](const std::optional<Clock::time_point>& t) -> std::string {
      if (!t) return "never";
      std::ostringstream s;
      s << std::fixed << std::setprecision(2) << seconds(*t - back) << " s";
      return s.str();
    };
    std::cout << "== " << label << ": PostgreSQL down " << std::fixed << std::setprecision(2)
              << seconds(back - struck) << " s\n";
    for (int r = 0; r < 2; ++r) {
      std::optional<Clock::time_point> all = ready[r];
      for (const auto& t : {tally_[r].first_read(), tally_[r].first_write(), jobs[r], hears[r]}) {
        if (!all || !t) {
          all.reset();
          break;
        }
        all = std::max(*all, *t);
      }
      std::cout << "   replica "
                << "AB"[r] << ": /readyz 200 after " << since_back(ready[r]) << ", a read "
                << since_back(tally_[r].first_read()) << ", a write "
                << since_back(tally_[r].first_write()) << ", every background job "
                << since_back(jobs[r]) << ", hears the other's announcements "
                << since_back(hears[r]) << "; recovered in " << since_back(all) << " ("
                << tally_[r].summary() << ")\n";
      EXPECT_TRUE(all.has_value())
          << label << ": replica "
          << "AB"[r] << " did not recover within " << seconds(kRecoveryLimit)
          << " s of PostgreSQL's return: /readyz " << since_back(ready[r]) << ", read "
          << since_back(tally_[r].first_read()) << ", write " << since_back(tally_[r].first_write())
          << ", jobs " << since_back(jobs[r])
          << " (behind: " << jobs_behind(*replicas[r], back_wall) << "), announcements "
          << since_back(hears[r]) << "\n"
          << replicas[r]->logs().substr(
                 replicas[r]->logs().size() > 6000 ? replicas[r]->logs().size() - 6000 : 0);
      EXPECT_TRUE(replicas[r]->running()) << "replica "
                                          << "AB"[r] << " is gone";
      EXPECT_EQ(replicas[r]->pid(), pids[r]) << "no restart was needed";
    }
  }

  static constexpr int kClientsPerReplica = 2;
  std::string dir_;
  std::unique_ptr<EmbeddedPostgres> pg_, standby_;
  std::unique_ptr<ServerProcess> a_, b_;
  std::unique_ptr<ContractCheck> contract_;
  Login admin_;
  std::vector<Login> clients_;
  Tally tally_[2];
  std::atomic<bool> stop_load_{false};
  std::vector<std::thread> load_;
};

TEST_F(DatabaseRestartE2E, EveryReplicaRecoversByItselfFromAFastShutdownAndACrash) {
  ASSERT_NO_FATAL_FAILURE(start(/*standby=*/false));
  ASSERT_NO_FATAL_FAILURE(start_load());
  outage_under_load(
      "fast shutdown", "fast", [&] { pg_->stop(); }, [&] { pg_->start(); });
  outage_under_load(
      "immediate stop (crash)", "crash",
      [&] {
        stop_immediately(pg_->data_dir());
        pg_->detach();  // it is down: start() starts it again
      },
      [&] { pg_->start(); });
  check_load();
}

// A failover: the primary crashes and the operator promotes its streaming standby. The
// replicas' DATABASE_URL names both servers (libpq's multi-host form, which gpurentd passes
// to libpq unchanged) with target_session_attrs=read-write, so while the primary is down and
// the standby still read-only nothing satisfies it (503), and after the promotion every new
// connection, the listener's included, goes to the new primary.
TEST_F(DatabaseRestartE2E, EveryReplicaFollowsAPromotedStandbyNamedInAMultiHostUrl) {
  ASSERT_NO_FATAL_FAILURE(start(/*standby=*/true));
  ASSERT_NO_FATAL_FAILURE(start_load());
  outage_under_load(
      "failover (primary crashed, standby promoted)", "failover",
      [&] {
        stop_immediately(pg_->data_dir());
        pg_->detach();  // it stays down: starting it again would make two primaries
      },
      [&] {
        auto failed = pg_program("pg_ctl", {"-D", standby_->data_dir(), "-w", "promote"});
        ASSERT_TRUE(failed.empty()) << failed;
      });
  check_load();
}

}  // namespace gpurent::testing::database_restart_e2e
