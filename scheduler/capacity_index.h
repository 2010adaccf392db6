// Each replica's copy of what the catalog's views count (GET /v1/availability, GET
// /v1/offers): per GPU model, the bookable nodes with their GPUs, links, site and every
// allocation from two days before the copy was made to `reach` after. Loading a model's copy
// reads the whole fleet of that model (about 0.7 s at 10,000 nodes and 100,000 rentals); after
// that a read reloads only the nodes announced as changed since the last read — a booking
// announces one node — so a calendar costs a few index probes and the counting, not a pass
// over every allocation. See docs/PERFORMANCE.md, "Availability calendar".
//
// The announcements come from the database (migrations/0010_capacity_by_node.sql: every
// change to allocations, nodes, GPUs and links names its node on `gpurent_capacity`, in the
// change's own transaction) through the process's NotifyListener; the replica that made a
// change also reports it at once, since its own announcement reaches it a moment after the
// commit. While the listener is not connected, announcements are lost, so nothing is kept
// and every read loads from the database; on (re)connection everything is dropped.
//
// Bookings and quotes choose from this copy too (booking.h): a choice is confirmed by reading
// its node inside the booking's transaction, and the database's exclusion constraint has the
// last word, so a copy a few milliseconds behind costs at most a refused choice, whose node
// the booking then marks changed. The waitlist, whose transactions write before they place,
// loads its candidates itself, so that the shared copy never takes in uncommitted rows.
// Before a whole-model load the fleet's statistics are brought up to date when a bulk
// enrolment left them behind (CandidateStore::keep_statistics).
#pragma once

#include "core/clock.h"
#include "core/db_pool.h"
#include "scheduler/candidate_list.h"
#include "scheduler/candidate_store.h"
#include "scheduler/placement.h"

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace gpurent::scheduler {

class CapacityIndex {
 public:
  struct Options {
    // How far ahead of its load a model's copy holds allocations; a window reaching past it
    // is loaded from the database for that read.
    std::chrono::hours reach{24 * 400};
    // A copy older than this is loaded afresh on its next read (about a second at 10,000
    // nodes), to shed the allocations that have ended since; until then it still covers every
    // window from its start on.
    std::chrono::hours max_age{24 * 7};
  };

  // Shared, so that bringing a copy up to date copies pointers, not 10,000 link matrices;
  // and held in shared chunks, so that it copies the pointers of the chunks the announced
  // nodes fall in, not of every node (candidate_list.h).
  using Node = CandidateList::Node;
  using Candidates = std::shared_ptr<const CandidateList>;

  // `listening` says whether announcements are arriving (the listener is connected).
  CapacityIndex(const Clock& clock, CandidateStore& store, std::function<bool()> listening,
                Options options);
  CapacityIndex(const Clock& clock, CandidateStore& store, std::function<bool()> listening)
      : CapacityIndex(clock, store, std::move(listening), Options{}) {}

  // The candidates of `model`, as CandidateStore::load returns them (sorted by node id), each
  // with at least every busy period overlapping `window` (periods outside it may be there
  // too: callers compare times). From the model's copy when one covers the window, after
  // reloading the nodes announced since the last read; otherwise loaded. `tx` must give each
  // statement a snapshot of its own (PgPool::read, or a READ COMMITTED transaction): the
  // reload has to see every change whose announcement it consumes. One load or reload runs
  // at a time; meanwhile other reads get a usable copy as it stands (the nodes announced
  // since are not reloaded by them: a booking confirms its choice in the database anyway, and
  // a count a moment old is as good as any), or wait when there is none.
  Candidates candidates(Tx& tx, const std::string& model, const Period& window);

  // The node's allocations, state, health, GPUs or links changed: every copy reloads it on
  // its next read. Any thread.
  void node_changed(const std::string& node_id);
  // Everything may have changed (a reconnection, a TRUNCATE): every copy is dropped.
  void everything_changed();

  struct Stats {
    std::uint64_t copies_loaded = 0;           // whole-model loads kept as a copy
    std::uint64_t reloads = 0;                 // reads that reloaded announced nodes
    std::uint64_t nodes_reloaded = 0;          // announced nodes those reloads asked for
    std::uint64_t direct_loads = 0;            // reads answered from the database, nothing kept
    std::uint64_t served = 0;                  // reads answered from a copy
    std::uint64_t served_while_reloading = 0;  // answered from a copy as it stood, not waiting
    std::uint64_t chunks_rebuilt = 0;          // chunks the reloads made anew (the rest shared)
  };
  Stats stats() const;

 private:
  struct Copy {
    Period window;
    Timestamp loaded_at;
    Candidates nodes;
  };
  struct Model {
    std::optional<Copy> copy;
    std::set<std::string> pending;  // nodes announced since the copy was last brought up to date
  };

  Candidates load_directly(Tx& tx, const std::string& model, const Period& window);
  // The model's copy when it is young enough and covers `window`; null otherwise. mutex_ held.
  const Copy* usable_copy(const std::string& model, Timestamp now, const Period& window) const;

  const Clock& clock_;
  CandidateStore& store_;
  std::function<bool()> listening_;
  const Options options_;

  std::mutex refresh_;  // held across a load or reload, taken before mutex_
  mutable std::mutex mutex_;
  std::map<std::string, Model> models_;
  std::uint64_t generation_ = 0;  // everything_changed() calls
  Stats stats_;
};

}  // namespace gpurent::scheduler
