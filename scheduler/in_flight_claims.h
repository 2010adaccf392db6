// The GPUs this replica's bookings have chosen and not yet committed. Every booking reads
// the same copy of the fleet (CapacityIndex) and placement is deterministic, so without this
// the bookings running at one moment all choose the same GPU: the first takes it, and the
// others wait on its turn lock until it commits, only to be refused and choose again, all
// together, one GPU later. A booking that sees the others' choices as busy chooses the next
// best GPU at once (the same node, when it has room), as placement would once those
// bookings commit. Another replica's bookings are not seen here: two replicas still meet
// now and then, and the exclusion constraint settles it.
//
// A claim lasts until the booking gives it up: its choice was refused, or its transaction
// ended (Tx::at_end), by when a committed allocation is in the copy (the booking announces
// its node on commit) and a rolled-back one has freed its GPUs. `lifetime` bounds a claim
// whose release never comes, so that no mistake can keep GPUs from this replica's bookings
// for longer. Pure and thread-safe; the time is given, so tests need no clock.
#pragma once

#include "scheduler/placement.h"

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace gpurent::scheduler {

class InFlightClaims {
 public:
  using Clock = std::chrono::steady_clock;

  explicit InFlightClaims(Clock::duration lifetime = std::chrono::seconds(30))
      : lifetime_(lifetime) {}

  struct Claim {
    std::uint64_t id = 0;  // this replica's own number for it
    std::string node_id;
    std::vector<int> gpu_indices;
    Period occupies;
    Clock::time_point expires;
  };

  // Records the choice; what to give back to release().
  Claim claim(const Placement& placement, const Period& occupies, Clock::time_point now);
  // Gives a claim up (its choice was refused, or its transaction ended). Releasing one
  // already released or expired does nothing, so a booking may release on refusal and again
  // at its transaction's end.
  void release(std::uint64_t id);

  // `candidates` (in node-id order, as CapacityIndex gives them) with the claims in force
  // over them: each candidate node that has some is replaced by a copy whose GPUs carry the
  // claims' periods as busy ones, kept alive in the returned list. Candidates without claims
  // are left as they are, unchanged and uncopied.
  std::vector<std::shared_ptr<const NodeCandidate>> apply(
      std::vector<const NodeCandidate*>& candidates, Clock::time_point now);

  std::size_t size() const;

 private:
  void expire(Clock::time_point now);  // mutex_ held

  const Clock::duration lifetime_;
  mutable std::mutex mutex_;
  std::vector<Claim> claims_;  // few: the bookings in flight on this replica
  std::uint64_t next_id_ = 0;
};

}  // namespace gpurent::scheduler
