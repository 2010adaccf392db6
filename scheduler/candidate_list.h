// A model's candidate nodes in node-id order, held in chunks of about kChunk nodes that lists
// share: bringing a copy up to date after some nodes changed (CapacityIndex) makes a list
// that shares every chunk but those the changed nodes fall in, so the cost of a booking's
// reload is the chunks it touches, not the fleet (at 10,000 nodes, 79 chunk pointers and a
// chunk or two rebuilt instead of 10,000 node pointers copied).
#pragma once

#include "scheduler/placement.h"

#include <cstddef>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

namespace gpurent::scheduler {

class CandidateList {
 public:
  using Node = std::shared_ptr<const NodeCandidate>;
  static constexpr std::size_t kChunk = 128;

  CandidateList() = default;
  // `nodes` in node-id order.
  explicit CandidateList(std::vector<Node> nodes);

  // This list with the nodes named in `changed` (ids, ascending) taken out and `reloaded`
  // (ascending by id: what is still a candidate of those) put in their place. `rebuilt`,
  // when given, is set to how many chunks were made anew rather than shared.
  CandidateList replaced(const std::vector<std::string>& changed, const std::vector<Node>& reloaded,
                         std::size_t* rebuilt = nullptr) const;

  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const Node& operator[](std::size_t i) const;

  // Every node, in node-id order.
  class const_iterator {
   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = Node;
    using difference_type = std::ptrdiff_t;
    using pointer = const Node*;
    using reference = const Node&;

    const_iterator() = default;
    reference operator*() const { return (*list_->chunks_[chunk_])[at_]; }
    pointer operator->() const { return &**this; }
    const_iterator& operator++() {
      if (++at_ == list_->chunks_[chunk_]->size()) {
        ++chunk_;
        at_ = 0;
      }
      return *this;
    }
    const_iterator operator++(int) {
      auto old = *this;
      ++*this;
      return old;
    }
    bool operator==(const const_iterator& o) const { return chunk_ == o.chunk_ && at_ == o.at_; }

   private:
    friend class CandidateList;
    const_iterator(const CandidateList* list, std::size_t chunk) : list_(list), chunk_(chunk) {}
    const CandidateList* list_ = nullptr;
    std::size_t chunk_ = 0;
    std::size_t at_ = 0;
  };
  const_iterator begin() const { return {this, 0}; }
  const_iterator end() const { return {this, chunks_.size()}; }

  std::size_t chunks() const { return chunks_.size(); }

 private:
  using Chunk = std::shared_ptr<const std::vector<Node>>;
  void add(std::vector<Node> nodes);  // appended after every chunk, split to size
  void index();                       // offsets_ and size_ from chunks_

  std::vector<Chunk> chunks_;         // none empty; ids ascend across them
  std::vector<std::size_t> offsets_;  // offsets_[k]: nodes before chunk k
  std::size_t size_ = 0;
};

}  // namespace gpurent::scheduler
