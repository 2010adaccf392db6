// The candidates a booking considers: every node that may take a rental of one GPU model, with
// its GPUs, link matrix, the allocations in the booking's window and its recent failures,
// loaded in one statement whatever the fleet's size (this runs on every booking and quote).
#pragma once

#include "core/db_pool.h"
#include "scheduler/placement.h"

#include <chrono>
#include <string>
#include <vector>

namespace gpurent::scheduler {

class CandidateStore {
 public:
  // How far back a node's failed or interrupted rentals count against it in placement.
  static constexpr std::chrono::hours kRecentFailureWindow{24 * 30};

  // The nodes of `gpu_model` that are `available` with health `ok`, by id, as placement
  // (placement.h) takes them:
  //  - gpus: the node's GPUs by index; one whose health is `warning` or `critical` is not
  //    healthy (`unknown` is: a node's health `ok` vouches for it until its agent reports);
  //  - links: the matrix from gpu_links (pairs without a row are SYS) when the node has rows
  //    there, else the matrix its declared interconnect implies for the model's link kind;
  //  - busy: every allocation overlapping `window`, as stored (the cleaning window included);
  //  - recent_failures: its rentals that became failed or interrupted in the
  //    kRecentFailureWindow before window.start.
  // Each one's site and declared interconnect come with it. One statement: callers that load
  // the whole model call keep_statistics first.
  std::vector<NodeCandidate> load(Tx& tx, const std::string& gpu_model, const Period& window);

  // When the fleet has grown by more than a fifth since the planner's statistics were taken
  // (or they never were), analyzes the fleet's tables in `tx`; whether it did. Right after a
  // bulk enrolment, before autovacuum's first pass (a minute or more), load()'s statement
  // was planned as if the fleet were empty and took seconds at 1,000 nodes instead of
  // milliseconds. One short statement when the statistics are fresh.
  bool keep_statistics(Tx& tx);

  // The same for the named nodes, whatever their model: those of them that are candidates
  // now. A few nodes cost a few index probes, not a pass over the fleet: what keeps a
  // replica's copy of the candidates current after a booking (capacity_index.h).
  std::vector<NodeCandidate> load_nodes(Tx& tx, const std::vector<std::string>& node_ids,
                                        const Period& window);
};

}  // namespace gpurent::scheduler
