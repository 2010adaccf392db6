// CandidateList: chunks shared between a copy and the copy brought up to date from it.
#include "scheduler/candidate_list.h"

#include <algorithm>

namespace gpurent::scheduler {

CandidateList::CandidateList(std::vector<Node> nodes) {
  add(std::move(nodes));
  index();
}

void CandidateList::add(std::vector<Node> nodes) {
  if (nodes.empty()) return;
  if (nodes.size() <= 2 * kChunk) {
    chunks_.push_back(std::make_shared<const std::vector<Node>>(std::move(nodes)));
    return;
  }
  for (std::size_t from = 0; from < nodes.size(); from += kChunk) {
    // The last piece takes what is left when less than a chunk would remain after it.
    std::size_t to = nodes.size() - from < 2 * kChunk ? nodes.size() : from + kChunk;
    chunks_.push_back(std::make_shared<const std::vector<Node>>(
        std::make_move_iterator(nodes.begin() + static_cast<std::ptrdiff_t>(from)),
        std::make_move_iterator(nodes.begin() + static_cast<std::ptrdiff_t>(to))));
    from = to - kChunk;
  }
}

void CandidateList::index() {
  offsets_.clear();
  size_ = 0;
  for (const auto& c : chunks_) {
    offsets_.push_back(size_);
    size_ += c->size();
  }
}

const CandidateList::Node& CandidateList::operator[](std::size_t i) const {
  auto k = static_cast<std::size_t>(std::upper_bound(offsets_.begin(), offsets_.end(), i) -
                                    offsets_.begin()) -
           1;
  return (*chunks_[k])[i - offsets_[k]];
}

CandidateList CandidateList::replaced(const std::vector<std::string>& changed,
                                      const std::vector<Node>& reloaded,
                                      std::size_t* rebuilt) const {
  if (rebuilt) *rebuilt = 0;
  // Chunk k holds the ids from its first node's up to the next chunk's first; the first
  // chunk also holds every id below its own first, the last every id above. A changed id
  // and a reloaded node go to the chunk whose range holds their id.
  auto chunk_of = [this](const std::string& id) -> std::size_t {
    auto it = std::upper_bound(
        chunks_.begin(), chunks_.end(), id,
        [](const std::string& v, const Chunk& c) { return v < c->front()->node_id; });
    return it == chunks_.begin() ? 0 : static_cast<std::size_t>(it - chunks_.begin()) - 1;
  };
  CandidateList out;
  if (chunks_.empty()) {
    out.add(reloaded);
    out.index();
    if (rebuilt) *rebuilt = out.chunks_.size();
    return out;
  }
  std::size_t next_changed = 0, next_reloaded = 0;
  for (std::size_t k = 0; k < chunks_.size(); ++k) {
    std::size_t changed_end = next_changed, reloaded_end = next_reloaded;
    while (changed_end < changed.size() && chunk_of(changed[changed_end]) == k) ++changed_end;
    while (reloaded_end < reloaded.size() && chunk_of(reloaded[reloaded_end]->node_id) == k) {
      ++reloaded_end;
    }
    if (changed_end == next_changed && reloaded_end == next_reloaded) {
      out.chunks_.push_back(chunks_[k]);  // untouched: shared
      continue;
    }
    // This chunk's nodes less the changed ones, merged with its reloaded ones, in id order.
    std::vector<Node> merged;
    merged.reserve(chunks_[k]->size() + (reloaded_end - next_reloaded));
    auto r = reloaded.begin() + static_cast<std::ptrdiff_t>(next_reloaded);
    auto r_end = reloaded.begin() + static_cast<std::ptrdiff_t>(reloaded_end);
    auto gone = changed.begin() + static_cast<std::ptrdiff_t>(next_changed);
    auto gone_end = changed.begin() + static_cast<std::ptrdiff_t>(changed_end);
    for (const auto& node : *chunks_[k]) {
      while (r != r_end && (*r)->node_id < node->node_id) merged.push_back(*r++);
      while (gone != gone_end && *gone < node->node_id) ++gone;
      if (gone != gone_end && *gone == node->node_id) continue;
      merged.push_back(node);
    }
    merged.insert(merged.end(), r, r_end);
    std::size_t before = out.chunks_.size();
    out.add(std::move(merged));
    if (rebuilt) *rebuilt += out.chunks_.size() - before;
    next_changed = changed_end;
    next_reloaded = reloaded_end;
  }
  out.index();
  return out;
}

}  // namespace gpurent::scheduler
