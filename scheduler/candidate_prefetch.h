// Loading candidates' heap blocks ahead of use. Reading the fleet's candidates is bound by
// memory, not arithmetic: each node's GPU list, each GPU's busy list and each row of a link
// matrix is a heap block of its own, and 10,000 nodes are tens of MiB, mostly outside the
// caches. A pass over them (placement's, the calendar's) loads what it will read a few nodes
// ahead, in two steps (the lists first, then the blocks they point to), so that those misses
// overlap instead of being waited for one by one; it made placement decisions about three
// times faster.
#pragma once

#include "scheduler/placement.h"

#include <cstddef>
#include <cstdint>
#include <string>

namespace gpurent::scheduler {

constexpr std::size_t kListsAhead = 8;
constexpr std::size_t kBlocksAhead = 4;

// Always inlined: as a call of its own, GCC 12 finds the prefetches free of side effects,
// deems the helper pure and drops the call altogether.
[[gnu::always_inline]] inline void prefetch_bytes(const void* data, std::size_t bytes) {
  const auto* p = static_cast<const char*>(data);
  for (std::size_t offset = 0; offset < bytes; offset += 64) __builtin_prefetch(p + offset);
}

[[gnu::always_inline]] inline void prefetch_gpu_list(const NodeCandidate& node) {
  prefetch_bytes(node.gpus.data(), node.gpus.size() * sizeof(CandidateGpu));
}

// The busy lists of the GPUs in `gpus` (a mask of indices), and with `rows` their rows of the
// link matrix.
[[gnu::always_inline]] inline void prefetch_gpu_blocks(const NodeCandidate& node,
                                                       std::uint64_t gpus, bool rows) {
  const auto& matrix = node.links.links;
  for (const auto& gpu : node.gpus) {
    if (gpu.index < 0 || gpu.index >= topology::kMaxGpus ||
        (gpus & (std::uint64_t{1} << gpu.index)) == 0) {
      continue;
    }
    __builtin_prefetch(gpu.busy.data());
    if (rows && gpu.index < static_cast<int>(matrix.size())) {
      const auto& row = matrix[gpu.index];
      prefetch_bytes(row.data(), row.size() * sizeof(std::string));
    }
  }
}

}  // namespace gpurent::scheduler
