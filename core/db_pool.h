// A bounded pool of PostgreSQL connections (libpqxx 6) with RAII leases.
#pragma once

#include "core/db_errors.h"
#include "core/error.h"

#include <pqxx/pqxx>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace gpurent {

// A named SQL statement. The name shows in logs and pg_stat_statements; the SQL is always
// parameterised ($1, $2, …) and never built by concatenation.
struct Statement {
  const char* name;
  const char* sql;
};

struct PgPoolOptions {
  std::string url;
  int size = 8;
  std::chrono::milliseconds wait_timeout{2'000};
  std::chrono::milliseconds statement_timeout{10'000};
};

struct PgPoolStats {
  int size = 0;
  int open = 0;
  int in_use = 0;
  int waiting = 0;
  std::uint64_t acquired_total = 0;
  std::uint64_t wait_timeouts_total = 0;
  std::uint64_t connect_failures_total = 0;
  std::uint64_t broken_total = 0;
  // Round trips to PostgreSQL through leases: statements, PREPAREs, and each
  // transaction's BEGIN and COMMIT (or ROLLBACK). What a request costs the database.
  std::uint64_t round_trips_total = 0;
};

class PgPool {
  struct Slot {
    std::unique_ptr<pqxx::connection> conn;
    std::set<std::string> prepared;  // statements prepared on this connection
    bool broken = false;
  };

 public:
  explicit PgPool(PgPoolOptions options);
  ~PgPool();
  PgPool(const PgPool&) = delete;
  PgPool& operator=(const PgPool&) = delete;

  class Tx;

 private:
  struct Ambient;

 public:
  // A connection on loan; returned to the pool when destroyed.
  class Lease {
   public:
    Lease(Lease&& other) noexcept : pool_(other.pool_), slot_(std::move(other.slot_)) {}
    Lease& operator=(Lease&&) = delete;
    ~Lease();

    pqxx::connection& conn() { return *slot_->conn; }

    // Prepares `s` on this connection the first time it is used here.
    void prepare(const Statement& s);

    template <typename... Args>
    pqxx::result exec(pqxx::transaction_base& tx, const Statement& s, Args&&... args) {
      prepare(s);
      pool_->round_trips_.fetch_add(1, std::memory_order_relaxed);
      return tx.exec_prepared(s.name, std::forward<Args>(args)...);
    }

    // The connection failed; the pool closes it instead of reusing it.
    void mark_broken() { slot_->broken = true; }

   private:
    friend class PgPool;
    friend class Tx;
    Lease(PgPool* pool, std::unique_ptr<Slot> slot) : pool_(pool), slot_(std::move(slot)) {}
    PgPool* pool_;
    std::unique_ptr<Slot> slot_;
  };

  // What every store method takes: the use case's connection and transaction (or, from
  // read(), a connection outside any transaction). Stores run their statements through it
  // and never commit; the use case that opened it does.
  class Tx {
   public:
    // `unit`: the transaction's unit, null on a read() outside one.
    Tx(Lease& lease, pqxx::transaction_base& work, Ambient* unit)
        : lease_(lease), work_(work), unit_(unit) {}
    Tx(const Tx&) = delete;
    Tx& operator=(const Tx&) = delete;

    template <typename... Args>
    pqxx::result exec(const Statement& s, Args&&... args) {
      return lease_.exec(work_, s, std::forward<Args>(args)...);
    }

    // Runs fn(Tx&) inside a SAVEPOINT named `savepoint` (an SQL identifier): a constraint
    // violation rolls back fn's statements alone and comes back as a value, and this
    // transaction goes on (the scheduler tries the next candidate node after an exclusion
    // violation). Other errors are thrown as they are. Throws std::logic_error on a Tx from
    // read(), which has no transaction to save a point in.
    template <typename Fn>
    auto attempt(const std::string& savepoint, Fn&& fn) {
      if (!unit_) throw std::logic_error("a savepoint needs a transaction, not read()");
      lease_.pool_->round_trips_.fetch_add(1, std::memory_order_relaxed);  // SAVEPOINT
      return try_in_savepoint(work_, savepoint, [&] {
        // The statements run in the same transaction, after the SAVEPOINT; fn takes a Tx
        // so that a store cannot tell a savepoint from its caller's transaction.
        Tx inner(lease_, work_, unit_);
        return fn(inner);
      });
    }

    // One fixed statement with no parameters, unprepared: for tests and one-off DDL. Stores
    // use named, parameterised statements (exec above). Sent as exec_params, which fails the
    // statement alone: libpqxx 6's exec() would roll the transaction back, savepoint or not.
    pqxx::result exec_fixed(const std::string& sql) {
      lease_.pool_->round_trips_.fetch_add(1, std::memory_order_relaxed);
      return work_.exec_params(sql);
    }

    bool in_transaction() const { return unit_ != nullptr; }

    // Runs fn once the transaction this Tx works in ends, whether it commits or rolls back
    // (after the after_commit() steps of a commit); at once on a read() outside one. For
    // what a use case keeps in memory only while its writes are uncommitted (a booking's
    // in-flight claim). An exception from fn is logged, not thrown.
    void at_end(std::function<void()> fn);

   private:
    Lease& lease_;
    pqxx::transaction_base& work_;
    Ambient* unit_;
  };

  // Waits up to the pool's wait timeout for a connection. Throws Error(kUnavailable) when
  // none frees up in time or the database cannot be reached, and WouldBlock on a thread
  // where blocking is forbidden (core/blocking.h).
  Lease acquire();

  PgPoolStats stats() const;

  // Asks PostgreSQL to cancel whatever the leased connections are running (shutdown past
  // its deadline: the queries fail, their requests end, the process can exit).
  void cancel_all();
  const PgPoolOptions& options() const { return options_; }

  // The unit of work: runs fn(Tx&) in one read-write transaction named `name` and commits
  // it. A use case (a handler, a job) calls this once and passes the Tx to every store it
  // uses, so changes across identity, inventory, scheduling and billing commit or roll back
  // together; stores never open transactions of their own. Inside unit() on the same thread
  // it opens no transaction of its own but a SAVEPOINT of the unit's (see unit()).
  //
  // Runs the whole of fn again, a few times, on a serialization failure or deadlock and on a
  // connection lost before COMMIT was sent (the transaction certainly rolled back), so fn
  // must be safe to run again: no effects outside the database (after_commit() is for
  // those). Every way the database can fail to answer becomes Error(kUnavailable): a
  // connection lost during COMMIT (in doubt: the change may have been made; the error's
  // details say "outcome": "unknown"), one lost mid-statement after the retries, a refused
  // connect, a server shutting down, a statement timeout. An integrity constraint
  // violation becomes ConstraintViolation (its kind, constraint and SQLSTATE), so no caller
  // has to know libpqxx's exception types. Other database errors are rethrown.
  template <typename Fn>
  auto transact(const char* name, Fn&& fn) {
    if (Ambient* outer = joined()) return nested(*outer, name, fn);
    return run_unit(name, fn, /*joinable=*/false);
  }

  // transact(), and while fn runs, transact(), read() and after_commit() on this pool from
  // this thread join this transaction instead of committing on their own: a nested
  // transact() runs in a SAVEPOINT (its failure undoes its own statements alone), a read()
  // runs its statements here, so they see this transaction's writes. Nothing a nested call
  // does is durable until this unit commits, and nothing of it survives a rollback. The
  // Idempotency-Key guard runs a request's handler in one, so the work and its stored
  // response commit together or not at all.
  template <typename Fn>
  auto unit(const char* name, Fn&& fn) {
    if (Ambient* outer = joined()) return nested(*outer, name, fn);
    return run_unit(name, fn, /*joinable=*/true);
  }

  // Runs fn once the unit() in progress on this thread commits, and never if it rolls back;
  // at once when there is none. For effects outside the database that must follow a
  // commit: in-memory indexes, caches, wake-ups. An exception from fn is logged, not thrown.
  void after_commit(std::function<void()> fn);

  // Runs fn(Tx&) on one connection outside any transaction: a use case that only reads, with
  // one statement (or several that need no common snapshot), pays no BEGIN and COMMIT, each
  // a round trip of its own. The Tx refuses savepoints. Inside unit() it runs in the unit's
  // transaction instead. Errors map as in transact(); a read that lost its connection runs
  // again on a fresh one.
  template <typename Fn>
  auto read(const char* name, Fn&& fn) {
    if (Ambient* outer = joined()) {
      Tx tx(*outer->lease, *outer->top, outer);
      return fn(tx);
    }
    for (int attempt = 1;; ++attempt) {
      Lease lease = acquire();
      try {
        pqxx::nontransaction work(lease.conn(), name);
        Tx tx(lease, work, nullptr);
        return fn(tx);
      } catch (const pqxx::broken_connection&) {
        lost(lease, attempt);
      } catch (const pqxx::sql_error& e) {
        if (lease.conn().is_open()) failed(lease, e);
        lost(lease, attempt);
      }
    }
  }

 private:
  static constexpr int kMaxAttempts = 3;

  // The unit() in progress on a thread: its connection, the innermost open transaction or
  // savepoint, and what to run once it commits.
  struct Ambient {
    PgPool* pool;
    Lease* lease;
    pqxx::transaction_base* top;
    std::vector<std::function<void()>> after_commit;
    std::vector<std::function<void()>> at_end;
    ~Ambient() { run_at_end(*this); }
  };
  static void run_at_end(Ambient& ambient);
  static inline thread_local Ambient* ambient_ = nullptr;
  Ambient* joined() const { return ambient_ && ambient_->pool == this ? ambient_ : nullptr; }

  // Makes `a` this thread's unit for as long as it lives.
  class AmbientScope {
   public:
    explicit AmbientScope(Ambient* a) : previous_(ambient_) {
      if (a) ambient_ = a;
      active_ = a != nullptr;
    }
    ~AmbientScope() { leave(); }
    void leave() {
      if (active_) ambient_ = previous_;
      active_ = false;
    }

   private:
    Ambient* previous_;
    bool active_;
  };

  template <typename Fn>
  auto run_unit(const char* name, Fn& fn, bool joinable) {
    for (int attempt = 1;; ++attempt) {
      Lease lease = acquire();
      round_trips_.fetch_add(2, std::memory_order_relaxed);  // BEGIN, then COMMIT or ROLLBACK
      Ambient ambient{this, &lease, nullptr, {}};
      try {
        pqxx::work work(lease.conn(), name);
        ambient.top = &work;
        Tx tx(lease, work, &ambient);
        AmbientScope scope(joinable ? &ambient : nullptr);
        if constexpr (std::is_void_v<decltype(fn(tx))>) {
          fn(tx);
          scope.leave();
          commit(lease, work);
          run_after_commit(ambient);
          return;
        } else {
          auto result = fn(tx);
          scope.leave();
          commit(lease, work);
          run_after_commit(ambient);
          return result;
        }
      } catch (const pqxx::transaction_rollback&) {
        // Another transaction won a race; this one is sound and runs again. One that keeps
        // losing is a load problem, not the caller's: unavailable, worth retrying later.
        if (attempt >= kMaxAttempts)
          throw Error(ErrorCode::kUnavailable,
                      "The database kept refusing the transaction under concurrent load; "
                      "try again.");
      } catch (const pqxx::broken_connection&) {
        // Lost before COMMIT was sent (commit() reports a loss during COMMIT itself): the
        // server rolled the transaction back, so it runs again on a fresh connection.
        lost(lease, attempt);
      } catch (const pqxx::sql_error& e) {
        if (lease.conn().is_open()) failed(lease, e);
        lost(lease, attempt);  // "server closed the connection unexpectedly" mid-statement
      }
    }
  }

  // A nested transact() inside a unit: a SAVEPOINT of the unit's transaction. Failures that
  // doom the whole transaction (a lost race, a lost connection) go up to the unit, which
  // runs again; the rest roll back to the savepoint and are thrown as transact() maps them.
  template <typename Fn>
  auto nested(Ambient& outer, const char* name, Fn& fn) {
    round_trips_.fetch_add(1, std::memory_order_relaxed);  // SAVEPOINT (never RELEASEd)
    Savepoint point(*outer.top, name);
    Tx tx(*outer.lease, *outer.top, &outer);
    // Whatever fails, the unit returns to the savepoint, as a failed transact() leaves
    // nothing behind; then the failure goes on up as transact() maps it.
    auto roll_back = [&] {
      if (!outer.lease->conn().is_open()) return;
      round_trips_.fetch_add(1, std::memory_order_relaxed);
      point.rollback();
    };
    try {
      return fn(tx);
    } catch (const pqxx::sql_error& e) {
      if (dynamic_cast<const pqxx::transaction_rollback*>(&e) || !outer.lease->conn().is_open())
        throw;
      roll_back();
      failed(*outer.lease, e);
    } catch (...) {
      roll_back();
      throw;
    }
  }

  // COMMIT, with a connection lost during it reported as what it is: in doubt.
  static void commit(Lease& lease, pqxx::work& work);
  static void run_after_commit(Ambient& ambient);

  // A connection lost before COMMIT: not reused, and the work runs again on a fresh one
  // until `attempt` reaches the limit, then unavailable.
  static void lost(Lease& lease, int attempt);
  // A failure of the database rather than the statement (timeout, shutdown, resources) is
  // unavailable, an integrity violation a ConstraintViolation; anything else is rethrown as
  // it is. Called from inside the catch block of `e`.
  [[noreturn]] static void failed(Lease& lease, const pqxx::sql_error& e);

  std::unique_ptr<Slot> connect();
  void release(std::unique_ptr<Slot> slot);

  PgPoolOptions options_;
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<std::unique_ptr<Slot>> idle_;
  std::set<Slot*> leased_;
  int open_ = 0;  // connections that exist, idle or leased, plus ones being opened
  int in_use_ = 0;
  int waiting_ = 0;
  std::uint64_t acquired_total_ = 0;
  std::uint64_t wait_timeouts_total_ = 0;
  std::uint64_t connect_failures_total_ = 0;
  std::uint64_t broken_total_ = 0;
  std::atomic<std::uint64_t> round_trips_{0};
};

// What every store method takes (see PgPool::Tx).
using Tx = PgPool::Tx;

// `url` (either form libpq reads: a postgresql:// URI, one host or several, or key=value
// pairs) with `key` set to `value`, which libpq takes over an earlier setting of the same key.
// The URL is otherwise passed on as it is.
std::string conninfo_with(const std::string& url, const std::string& key, const std::string& value);
// The same, unless the URL sets `key` already: a default the operator's DATABASE_URL can
// override (connect_timeout).
std::string conninfo_with_default(const std::string& url, const std::string& key,
                                  const std::string& value);

}  // namespace gpurent
