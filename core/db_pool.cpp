// PgPool: bounded connections, lazy connect, reconnect after a broken connection.
#include "core/db_pool.h"

#include "core/blocking.h"
#include "core/log.h"

#include <pqxx/pqxx>

#include <algorithm>

namespace gpurent {

PgPool::PgPool(PgPoolOptions options) : options_(std::move(options)) {}

PgPool::~PgPool() = default;

PgPool::Lease::~Lease() {
  if (slot_) pool_->release(std::move(slot_));
}

void PgPool::Lease::prepare(const Statement& s) {
  if (slot_->prepared.count(s.name)) return;
  pool_->round_trips_.fetch_add(1, std::memory_order_relaxed);  // sent with its first use
  slot_->conn->prepare(s.name, s.sql);
  slot_->prepared.insert(s.name);
}

std::string conninfo_with(const std::string& url, const std::string& key,
                          const std::string& value) {
  bool uri = url.rfind("postgresql://", 0) == 0 || url.rfind("postgres://", 0) == 0;
  // Appended in steps: GCC 12 at -O3 warns falsely about a concatenation here.
  std::string out = url;
  out += uri ? (url.find('?') == std::string::npos ? "?" : "&") : " ";
  out.append(key).append("=").append(value);
  return out;
}

std::string conninfo_with_default(const std::string& url, const std::string& key,
                                  const std::string& value) {
  return url.find(key) == std::string::npos ? conninfo_with(url, key, value) : url;
}

std::unique_ptr<PgPool::Slot> PgPool::connect() {
  auto slot = std::make_unique<Slot>();
  // A connect nobody answers (the address of a primary that failed over and went silent, a
  // firewall dropping packets) would wait until the kernel gives up on its SYNs, about two
  // minutes holding a worker and a slot of the pool, while /readyz hangs with it. Bounded by
  // the pool's own wait (libpq counts whole seconds, 2 at least; per host when the URL names
  // several), it fails like any unreachable database: unavailable, and the next request
  // tries again. A connect_timeout in the URL wins.
  auto wait_s = (options_.wait_timeout.count() + 999) / 1000;
  slot->conn = std::make_unique<pqxx::connection>(conninfo_with_default(
      options_.url, "connect_timeout", std::to_string(std::max<long long>(2, wait_s))));
  pqxx::nontransaction tx(*slot->conn, "session_setup");
  // Every statement on this connection is bounded, and times are read in UTC.
  tx.exec("SET statement_timeout = " + std::to_string(options_.statement_timeout.count()) +
          "; SET TIME ZONE 'UTC'");
  return slot;
}

PgPool::Lease PgPool::acquire() {
  may_block();  // never on a network thread (core/blocking.h)
  std::unique_lock lock(mutex_);
  auto deadline = std::chrono::steady_clock::now() + options_.wait_timeout;
  ++waiting_;
  bool ready =
      cv_.wait_until(lock, deadline, [this] { return !idle_.empty() || open_ < options_.size; });
  --waiting_;
  if (!ready) {
    ++wait_timeouts_total_;
    throw Error(ErrorCode::kUnavailable,
                "The service is busy: no database connection was free in time.");
  }
  ++acquired_total_;
  ++in_use_;
  if (!idle_.empty()) {
    auto slot = std::move(idle_.back());
    idle_.pop_back();
    leased_.insert(slot.get());
    return Lease(this, std::move(slot));
  }
  // Open a new connection outside the lock: connecting takes a round trip or more.
  ++open_;
  lock.unlock();
  try {
    auto slot = connect();
    lock.lock();
    leased_.insert(slot.get());
    lock.unlock();
    return Lease(this, std::move(slot));
  } catch (const std::exception& e) {
    if (!lock.owns_lock()) lock.lock();
    --open_;
    --in_use_;
    ++connect_failures_total_;
    lock.unlock();
    cv_.notify_one();
    log::warn("database connection failed: {}", e.what());
    throw Error(ErrorCode::kUnavailable, "The database is unreachable.");
  }
}

void PgPool::release(std::unique_ptr<Slot> slot) {
  bool reuse = !slot->broken && slot->conn && slot->conn->is_open();
  std::vector<std::unique_ptr<Slot>> stale;
  {
    std::lock_guard lock(mutex_);
    --in_use_;
    leased_.erase(slot.get());
    if (reuse) {
      idle_.push_back(std::move(slot));
    } else {
      // One broken connection usually means the server restarted or the network dropped:
      // the idle ones are stale too, so close them all and reconnect on demand.
      --open_;
      ++broken_total_;
      open_ -= static_cast<int>(idle_.size());
      stale.swap(idle_);
    }
  }
  cv_.notify_all();
  // Connections close here, outside the lock.
}

void PgPool::cancel_all() {
  std::lock_guard lock(mutex_);
  for (Slot* slot : leased_) {
    try {
      slot->conn->cancel_query();
    } catch (const std::exception& e) {
      log::warn("cancelling a query failed: {}", e.what());
    }
  }
}

void PgPool::commit(Lease& lease, pqxx::work& work) {
  try {
    work.commit();
  } catch (const pqxx::in_doubt_error&) {
    // The connection went while COMMIT was on its way or its answer was: PostgreSQL may
    // have committed. Treating it as rolled back would let a retry do the work twice, so
    // the caller is told the outcome is unknown; the Idempotency-Key guard keeps its
    // record in the same transaction, so a retry with the key learns which it was.
    lease.mark_broken();
    throw Error(ErrorCode::kUnavailable,
                "The database connection was lost while committing, so whether the change was "
                "made is unknown; retry with the same Idempotency-Key, or look before retrying.",
                {{"outcome", "unknown"}});
  }
}

void PgPool::run_after_commit(Ambient& ambient) {
  for (auto& fn : ambient.after_commit) {
    try {
      fn();
    } catch (const std::exception& e) {
      log::warn("an after-commit step failed: {}", e.what());
    }
  }
}

void PgPool::run_at_end(Ambient& ambient) {
  auto steps = std::move(ambient.at_end);
  for (auto& fn : steps) {
    try {
      fn();
    } catch (const std::exception& e) {
      log::warn("an end-of-transaction step failed: {}", e.what());
    }
  }
}

void PgPool::Tx::at_end(std::function<void()> fn) {
  if (unit_) {
    unit_->at_end.push_back(std::move(fn));
    return;
  }
  try {
    fn();
  } catch (const std::exception& e) {
    log::warn("an end-of-transaction step failed: {}", e.what());
  }
}

void PgPool::after_commit(std::function<void()> fn) {
  if (Ambient* a = joined()) {
    a->after_commit.push_back(std::move(fn));
    return;
  }
  try {
    fn();
  } catch (const std::exception& e) {
    log::warn("an after-commit step failed: {}", e.what());
  }
}

void PgPool::lost(Lease& lease, int attempt) {
  lease.mark_broken();
  if (attempt >= kMaxAttempts) {
    throw Error(ErrorCode::kUnavailable, "The database connection was lost; try again.");
  }
}

void PgPool::failed(Lease& lease, const pqxx::sql_error& e) {
  if (!lease.conn().is_open()) lease.mark_broken();
  if (auto why = unavailable_reason(e.sqlstate())) throw Error(ErrorCode::kUnavailable, *why);
  if (auto violation = ConstraintViolation::from(e)) throw *violation;
  throw;
}

PgPoolStats PgPool::stats() const {
  std::lock_guard lock(mutex_);
  return {options_.size,
          open_,
          in_use_,
          waiting_,
          acquired_total_,
          wait_timeouts_total_,
          connect_failures_total_,
          broken_total_,
          round_trips_.load(std::memory_order_relaxed)};
}

}  // namespace gpurent
