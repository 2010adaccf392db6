// The chaos suite (docs/TESTING.md, "Chaos suite"): two gpurentd replicas on a durable
// PostgreSQL with slow commits, a simulated fleet enrolled through the agent listener, and a
// storm of clients booking one GPU each with an Idempotency-Key, retrying as the CLI does.
// Scenarios, one after another, each with the storm running: a replica killed with SIGKILL
// and started again, PostgreSQL restarted with -m immediate again and again, the agents
// killed mid-task and started again, every agent connection cut at once, a slow-loris client.
// After each: the invariants (invariants.h) on the database and on what the clients were
// told, and the figures. `make chaos` runs the full form (--full); `make test` the short one.
#include "tests/chaos/booking_storm.h"
#include "tests/chaos/chaos_cluster.h"
#include "tests/chaos/figures.h"
#include "tests/chaos/invariants.h"
#include "tests/chaos/platform.h"
#include "tests/chaos/slow_loris.h"
#include "tests/chaos/tcp_proxy.h"
#include "tests/support/http_client.h"
#include "tests/support/pg_harness.h"
#include "tests/support/wait_for.h"

#include <gtest/gtest.h>

#include <pqxx/pqxx>

#include <sys/resource.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>

namespace gpurent::testing::chaos {

using namespace std::chrono_literals;
using nlohmann::json;
using std::chrono::milliseconds;

bool g_full = false;

struct Form {
  std::string name;
  int clients;
  int orgs;
  int nodes;
  milliseconds baseline;
  milliseconds tail;  // the storm goes on this long after a scenario has recovered
  int kills_per_replica;
  int db_restarts;
  milliseconds db_gap;
  int loris_connections;
  milliseconds loris_for;
  int now_per_phase;   // bookings that start now (and provision on an agent) per scenario
  milliseconds think;  // a client's pause between bookings: the storm stays within capacity
};

Form form() {
  // Capacity: each of a node's 8 GPUs takes a one-day rental at each of the 25 future starts,
  // about 200 bookings per node.
  // The full form's clients pause longer: 32 clients without a pause keep both sanitizer-built
  // replicas' CPUs busy, and the agents' hellos then wait tens of seconds (see TESTING.md).
  if (g_full) return {"full", 32, 8, 24, 10s, 3s, 2, 5, 3s, 600, 15s, 24, 500ms};
  return {"short", 8, 4, 12, 2s, 1s, 1, 2, 1500ms, 150, 4s, 10, 50ms};
}

// Future instants a booking may start at: from two days ahead (clear of the rentals that
// start now and their cleaning window), 24 h 30 min apart, so one GPU can take a one-day
// rental at each of them (the 30-minute cleaning window after each fits before the next:
// dates, a day apart, would let it take only every other one), within the 30-day horizon.
std::vector<std::string> future_starts() {
  std::vector<std::string> out;
  auto base = std::chrono::ceil<std::chrono::hours>(std::chrono::system_clock::now()) +
              std::chrono::hours(48);
  for (int k = 0; k < 25; ++k) {
    auto t =
        std::chrono::floor<std::chrono::seconds>(base + k * std::chrono::minutes(24 * 60 + 30));
    auto day = std::chrono::floor<std::chrono::days>(t);
    std::chrono::year_month_day d{day};
    std::chrono::hh_mm_ss hms{t - day};
    char buf[32];
    std::snprintf(buf, sizeof buf, "%04d-%02u-%02uT%02d:%02d:00Z", static_cast<int>(d.year()),
                  static_cast<unsigned>(d.month()), static_cast<unsigned>(d.day()),
                  static_cast<int>(hms.hours().count()), static_cast<int>(hms.minutes().count()));
    out.push_back(buf);
  }
  return out;
}

class ChaosSuite : public ::testing::Test {
 protected:
  void SetUp() override {
    form_ = form();
    dir_ = make_temp_dir("gpurent-chaos");
    auto setup_start = std::chrono::steady_clock::now();
    db_ = std::make_unique<ChaosDatabase>(dir_, 2000);
    ServerOptions options{
        .database_url = db_->url(),
        .flags = {"--rate_limit_per_credential=0", "--rate_limit_per_ip=0",
                  "--lifecycle_interval=1s", "--agent_task_poll=2s",
                  "--agent_pki_dir=" + dir_ + "/pki", "--ssh_ca_dir=" + dir_ + "/ssh-ca"},
        .lifecycle_wake = true};  // as deployed
    // One after the other: the first makes the agents' and the SSH CAs the second reuses.
    replicas_[0] = std::make_unique<Replica>(0, options);
    replicas_[1] = std::make_unique<Replica>(1, options);
    proxy_ = std::make_unique<TcpProxy>([this] {
      int first = static_cast<int>(accepts_++ % 2);
      std::vector<int> ports;
      for (int i : {first, 1 - first}) {
        if (int p = replicas_[i]->agent_port(); p != 0) ports.push_back(p);
      }
      return ports;
    });
    platform_ = set_up_platform(replicas_[0]->port(), db_->url(), form_.nodes, form_.orgs,
                                dir_ + "/enroll.txt");
    fleet_ = std::make_unique<Fleet>(dir_ + "/fleet", proxy_->port(), dir_ + "/pki/ca.crt",
                                     form_.nodes, 1500ms);
    fleet_->start(dir_ + "/enroll.txt");
    ASSERT_TRUE(wait_for([&] { return in_service() == form_.nodes; }, 60s))
        << in_service() << " of " << form_.nodes << " nodes in service\n"
        << fleet_->log();
    starts_ = future_starts();
    setup_s_ =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - setup_start).count();
  }

  void TearDown() override {
    if (fleet_) fleet_->stop();
    for (auto& r : replicas_) {
      if (!r) continue;
      EXPECT_EQ(r->stop(), "") << "a replica crashed or wrote a sanitizer report";
    }
    fleet_.reset();
    proxy_.reset();
    db_.reset();
    if (!HasFailure()) {
      std::filesystem::remove_all(dir_);
    } else {
      std::cout << "chaos: the run's folder (logs, database) is kept in " << dir_ << "\n";
    }
  }

  int sql_int(const std::string& query) {
    pqxx::connection c(db_->url());
    pqxx::nontransaction tx(c);
    return tx.exec(query)[0][0].as<int>();
  }
  int in_service() {
    return sql_int(
        "SELECT count(*) FROM nodes WHERE state = 'available' AND health = 'ok'"
        " AND last_heartbeat_at IS NOT NULL");
  }
  bool agents_connected() { return fleet_->last_status().value("connected", 0) == form_.nodes; }

  BookingTarget target() {
    return {.port = [this](int i) { return replicas_[i % 2]->port(); }, .replicas = 2};
  }
  StormOptions storm_options(const std::string& phase, int now_budget) {
    StormOptions o;
    o.phase = phase;
    o.tag = "chaos";
    o.clients = form_.clients;
    o.tokens = platform_.tokens;
    o.gpu_model = kModel;
    o.image_id = platform_.image_id;
    o.starts = starts_;
    o.now_every = 3;
    o.now_budget = std::make_shared<std::atomic<int>>(now_budget);
    o.think = form_.think;
    o.target = target();
    o.seed = static_cast<unsigned>(phases_.size() + 1);
    return o;
  }

  // Waits (bounded) until a booking sent after `fault` has succeeded, on its replica too
  // when it struck one; a scenario that never recovers is a violation, not a hang.
  void await_recovery(Phase& phase, BookingStorm& storm, const Fault& fault,
                      milliseconds limit = 30s) {
    bool any = wait_for([&] { return storm.last_success() >= fault.at; }, limit, 20ms);
    bool own = fault.replica < 0 ||
               wait_for([&] { return storm.last_success(fault.replica) >= fault.at; }, limit, 20ms);
    if (!any || !own) {
      phase.violations.push_back(
          {"no_recovery", fault.name + ": no booking sent after it succeeded within " +
                              std::to_string(limit.count() / 1000) + " s" +
                              (any ? " on its replica" : "")});
    }
  }
  Fault fault(Phase& phase, const std::string& name, int replica = -1) {
    phase.faults.push_back({name, std::chrono::steady_clock::now(), replica});
    return phase.faults.back();
  }

  // Keys that gave up are tried again with the same key once the fault is over, as a user
  // runs the command again: the first outcome or one booking, never a key held up longer
  // than the outage plus a little. Keys that needed retries are replayed once: the same
  // rental comes back.
  void late_retries(Phase& phase, const StormOptions& o) {
    RetryPolicy late;
    late.attempts = 1000;
    late.backoff_cap = 1s;
    late.total_limit = 10s;
    RetryPolicy replay;
    replay.attempts = 3;
    std::vector<std::thread> threads;
    std::mutex mutex;
    auto flush = [&] {
      for (auto& t : threads) t.join();
      threads.clear();
    };
    for (auto& r : phase.records) {
      bool gave_up = r.outcome == KeyRecord::Outcome::kGaveUp;
      bool retried_booking = r.outcome == KeyRecord::Outcome::kBooked && r.attempts.size() > 1;
      if (!gave_up && !retried_booking) continue;
      if (gave_up) ++phase.gave_up_in_storm;
      threads.emplace_back([&, gave_up, rec = &r] {
        std::mt19937 random(static_cast<unsigned>(rec->client) + 17u);
        std::string token = o.tokens[rec->client % o.tokens.size()];
        std::string body = BookingStorm::body(o, rec->key, rec->start);
        if (gave_up) {
          std::size_t from = rec->attempts.size();
          book_with_retries(*rec, token, body, o.target, late, rec->client, random);
          for (std::size_t i = from; i < rec->attempts.size(); ++i) rec->attempts[i].late = true;
          if (rec->outcome == KeyRecord::Outcome::kGaveUp) {
            std::lock_guard lock(mutex);
            phase.violations.push_back({"key_stuck", "key=" + rec->key + " still answered " +
                                                         std::to_string(rec->final_status) + " " +
                                                         rec->final_code +
                                                         " 10 s after the fault ended"});
          }
          return;
        }
        KeyRecord again = *rec;
        again.attempts.clear();
        again.rental_ids.clear();
        book_with_retries(again, token, body, o.target, replay, rec->client, random);
        std::lock_guard lock(mutex);
        if (again.outcome != KeyRecord::Outcome::kBooked || again.rental_ids != rec->rental_ids) {
          phase.violations.push_back(
              {"replay_differs", "key=" + rec->key + " booked " + *rec->rental_ids.begin() +
                                     ", a retry answered " + std::to_string(again.final_status) +
                                     " " + again.final_code +
                                     (again.rental_ids.empty() ? "" : *again.rental_ids.begin())});
        }
        for (auto& a : again.attempts) {
          a.late = true;
          rec->attempts.push_back(a);
        }
      });
      if (threads.size() >= 16) flush();
    }
    flush();
  }

  // Runs the storm around `script`, then the late retries and the invariants.
  void run_phase(const std::string& name, int now_budget,
                 const std::function<void(Phase&, BookingStorm&)>& script) {
    Phase phase;
    phase.name = name;
    auto o = storm_options(name, now_budget);
    auto start = std::chrono::steady_clock::now();
    {
      BookingStorm storm(o);
      script(phase, storm);
      storm.stop();
      phase.records = storm.records();
    }
    phase.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    late_retries(phase, o);
    for (int i = 0; i < 2; ++i) {
      if (!replicas_[i]->running()) {
        phase.violations.push_back({"replica_died", "replica " + std::to_string(i)});
        replicas_[i]->restart();
      }
    }
    if (!db_->wait_accepting(30s)) {
      phase.violations.push_back({"database_down", "PostgreSQL did not come back within 30 s"});
    } else {
      for (auto& v : check_database(db_->url())) phase.violations.push_back(v);
      for (auto& v : check_clients(db_->url(), phase.records)) phase.violations.push_back(v);
    }
    std::cout << phase_report(phase) << std::flush;
    EXPECT_TRUE(phase.violations.empty())
        << "phase " << name << ": " << phase.violations.size()
        << " violations (listed above): " << phase_figures(phase)["invariants_broken"].dump();
    phases_.push_back(std::move(phase));
  }

  // The rentals booked to start now: each reaches active on its agent, faults or not.
  void every_rental_started_now_is_active() {
    std::set<std::string> now_rentals;
    for (const auto& p : phases_) {
      for (const auto& r : p.records) {
        if (r.start == "now") now_rentals.insert(r.rental_ids.begin(), r.rental_ids.end());
      }
    }
    std::map<std::string, std::string> not_active;
    auto start = std::chrono::steady_clock::now();
    bool all = wait_for(
        [&] {
          not_active.clear();
          pqxx::connection c(db_->url());
          pqxx::nontransaction tx(c);
          for (const auto& row : tx.exec("SELECT id, state FROM rentals")) {
            std::string id = row[0].as<std::string>(), state = row[1].as<std::string>();
            if (now_rentals.count(id) && state != "active") not_active[id] = state;
          }
          return not_active.empty();
        },
        60s, 250ms);
    double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::cout << "== chaos: " << now_rentals.size() << " rentals started now; "
              << (all ? "all active " + std::to_string(waited) + " s after the last scenario"
                      : std::to_string(not_active.size()) + " not active after 60 s")
              << "\n";
    std::string listed;
    for (const auto& [id, state] : not_active) listed += " " + id + "=" + state;
    EXPECT_TRUE(all) << "rentals started now that never became active:" << listed;
    summary_["now_rentals"] = now_rentals.size();
    summary_["now_rentals_not_active"] = not_active.size();
    summary_["now_rentals_active_after_s"] = waited;
  }

  void print_summary() {
    summary_["form"] = form_.name;
    summary_["clients"] = form_.clients;
    summary_["nodes"] = form_.nodes;
    summary_["setup_s"] = setup_s_;
    json phases = json::array();
    int acknowledged = 0, retries = 0, with_ra = 0, without_ra = 0, other = 0, broken = 0;
    for (const auto& p : phases_) {
      auto f = phase_figures(p);
      acknowledged += f["acknowledged"].get<int>();
      retries += f["retries"].get<int>();
      with_ra += f["unavailable_503_with_retry_after"].get<int>();
      without_ra += f["unavailable_503_without_retry_after"].get<int>();
      other += f["other_5xx"].get<int>();
      broken += static_cast<int>(p.violations.size());
      phases.push_back(f);
    }
    summary_["acknowledged"] = acknowledged;
    summary_["retries"] = retries;
    summary_["unavailable_503_with_retry_after"] = with_ra;
    summary_["unavailable_503_without_retry_after"] = without_ra;
    summary_["other_5xx"] = other;
    summary_["violations"] = broken;
    summary_["phases"] = phases;
    std::cout << "== chaos figures (" << form_.name << " form): " << acknowledged
              << " bookings acknowledged, " << retries << " retries, 503 with Retry-After "
              << with_ra << ", without " << without_ra << ", other 5xx " << other << ", " << broken
              << " invariant violations\n";
    if (const char* path = std::getenv("GPURENT_CHAOS_REPORT"); path && *path) {
      std::ofstream(path) << summary_.dump(2) << "\n";
      std::cout << "== chaos: figures written to " << path << "\n";
    }
  }

  Form form_;
  std::string dir_;
  double setup_s_ = 0;
  std::unique_ptr<ChaosDatabase> db_;
  std::unique_ptr<Replica> replicas_[2];
  std::atomic<unsigned> accepts_{0};
  std::unique_ptr<TcpProxy> proxy_;
  std::unique_ptr<Fleet> fleet_;
  Platform platform_;
  std::vector<std::string> starts_;
  std::vector<Phase> phases_;
  json summary_ = json::object();
};

TEST_F(ChaosSuite, BookingStormThroughFaults) {
  const Form& f = form_;
  std::cout << "== chaos (" << f.name << " form): " << f.clients << " clients, " << f.orgs
            << " orgs, " << f.nodes << " nodes of 8 GPUs, set up in " << setup_s_ << " s\n";

  run_phase("baseline", f.now_per_phase / 2,
            [&](Phase&, BookingStorm&) { std::this_thread::sleep_for(f.baseline); });

  run_phase("replica_kill", f.now_per_phase, [&](Phase& phase, BookingStorm& storm) {
    std::this_thread::sleep_for(f.tail);
    for (int round = 0; round < f.kills_per_replica; ++round) {
      for (int i = 0; i < 2; ++i) {
        auto struck = fault(phase, "kill -9 replica " + std::to_string(i), i);
        replicas_[i]->kill9();
        replicas_[i]->restart();
        await_recovery(phase, storm, struck);
        std::this_thread::sleep_for(f.tail);
      }
    }
  });

  run_phase("db_restart", f.now_per_phase, [&](Phase& phase, BookingStorm& storm) {
    for (int n = 1; n <= f.db_restarts; ++n) {
      std::this_thread::sleep_for(f.db_gap);
      auto struck = fault(phase, "pg_ctl restart -m immediate #" + std::to_string(n));
      db_->restart_immediate();
      await_recovery(phase, storm, struck);
    }
    std::this_thread::sleep_for(f.tail);
  });

  run_phase("agent_kill", f.now_per_phase * 2, [&](Phase& phase, BookingStorm& storm) {
    // Killed while at least one task is with an agent (delivered, not yet reported).
    std::vector<std::string> in_flight;
    bool found = wait_for(
        [&] {
          pqxx::connection c(db_->url());
          pqxx::nontransaction tx(c);
          in_flight.clear();
          for (const auto& row : tx.exec("SELECT id FROM agent_tasks WHERE state = 'delivered'")) {
            in_flight.push_back(row[0].as<std::string>());
          }
          return !in_flight.empty();
        },
        30s, 50ms);
    auto struck = fault(phase, "kill -9 of every agent");
    fleet_->kill9();
    std::this_thread::sleep_for(1s);
    fleet_->start();
    bool back = wait_for([&] { return agents_connected(); }, 30s, 50ms);
    double back_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - struck.at).count();
    // The tasks the agents died with are delivered again and finish.
    std::string unfinished;
    bool finished = wait_for(
        [&] {
          if (in_flight.empty()) return true;
          pqxx::connection c(db_->url());
          pqxx::nontransaction tx(c);
          unfinished.clear();
          for (const auto& id : in_flight) {
            auto state = tx.exec_params1("SELECT state FROM agent_tasks WHERE id = $1", id)[0]
                             .as<std::string>();
            if (state == "queued" || state == "delivered") unfinished += " " + id + "=" + state;
          }
          return unfinished.empty();
        },
        30s, 200ms);
    phase.extra = {{"tasks_in_flight_at_kill", in_flight.size()},
                   {"agents_back_s", back ? json(back_s) : json(nullptr)}};
    if (!found) phase.violations.push_back({"no_task_in_flight", "within 30 s of the storm"});
    if (!back) phase.violations.push_back({"agents_not_back", fleet_->log().substr(0, 2000)});
    if (!finished) phase.violations.push_back({"task_not_finished", unfinished});
    (void)storm;
    std::this_thread::sleep_for(f.tail);
  });

  run_phase("agent_drop", f.now_per_phase, [&](Phase& phase, BookingStorm&) {
    wait_for([&] { return agents_connected(); }, 30s, 50ms);
    auto reconnects_before = fleet_->last_status().value("reconnects", 0);
    auto struck = fault(phase, "every agent connection cut");
    int cut = proxy_->cut_all();
    bool back = wait_for(
        [&] {
          auto s = fleet_->last_status();
          return s.value("connected", 0) == f.nodes &&
                 s.value("reconnects", 0) >= reconnects_before + f.nodes;
        },
        30s, 50ms);
    double back_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - struck.at).count();
    phase.extra = {{"connections_cut", cut},
                   {"agents_reconnected_s", back ? json(back_s) : json(nullptr)}};
    if (cut < f.nodes) {
      phase.violations.push_back(
          {"agent_drop_missed", "cut " + std::to_string(cut) + " of " + std::to_string(f.nodes)});
    }
    if (!back) phase.violations.push_back({"agents_not_back", fleet_->last_status().dump()});
    std::this_thread::sleep_for(f.tail);
  });

  run_phase("slow_loris", f.now_per_phase / 2, [&](Phase& phase, BookingStorm& storm) {
    auto struck = fault(phase, "slow loris on replica 0", 0);
    SlowLoris loris(replicas_[0]->port(), f.loris_connections, 100ms);
    await_recovery(phase, storm, struck);
    // Meanwhile the replica answers its health check promptly.
    double worst = 0;
    int failed = 0;
    auto until = std::chrono::steady_clock::now() + f.loris_for;
    while (std::chrono::steady_clock::now() < until) {
      auto t = std::chrono::steady_clock::now();
      try {
        if (http_request(replicas_[0]->port(), "GET", "/healthz", "", {}, 5s).status != 200) {
          ++failed;
        }
      } catch (const std::exception&) {
        ++failed;
      }
      worst = std::max(worst,
                       std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count());
      std::this_thread::sleep_for(250ms);
    }
    phase.extra = {{"loris_connections", f.loris_connections},
                   {"loris_opened", loris.opened()},
                   {"loris_closed_by_server", loris.closed_by_server()},
                   {"loris_refused", loris.refused()},
                   {"healthz_worst_s", worst},
                   {"healthz_failed", failed}};
    if (failed > 0) {
      phase.violations.push_back(
          {"starved_by_slow_loris", std::to_string(failed) + " health checks failed"});
    }
  });

  every_rental_started_now_is_active();
  print_summary();
}

}  // namespace gpurent::testing::chaos

int main(int argc, char** argv) {
  std::vector<char*> args;
  for (int i = 0; i < argc; ++i) {
    if (std::string(argv[i]) == "--full") {
      gpurent::testing::chaos::g_full = true;
    } else {
      args.push_back(argv[i]);
    }
  }
  if (const char* f = std::getenv("GPURENT_CHAOS_FORM"); f && std::string(f) == "full") {
    gpurent::testing::chaos::g_full = true;
  }
  // The slow-loris client holds hundreds of sockets.
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0) {
    limit.rlim_cur = limit.rlim_max;
    setrlimit(RLIMIT_NOFILE, &limit);
  }
  int n = static_cast<int>(args.size());
  args.push_back(nullptr);  // argv[argc] is a null pointer; gtest shifts it down
  ::testing::InitGoogleTest(&n, args.data());
  return RUN_ALL_TESTS();
}
