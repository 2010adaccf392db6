// A named set of a state machine's states, as C++ asks it (contains) and as SQL takes it: a
// statement says `state = ANY ($n::text[])` and is given sql(), so the states a query means
// live beside the machine that defines them and never as literals in SQL text.
#pragma once

#include "core/pg_array.h"

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

namespace gpurent {

// State: an enum whose enumerators run 0..N-1, with a to_string(State) found by
// argument-dependent lookup that gives the name the database stores.
template <typename State, std::size_t N>
class StateSet {
  static_assert(N <= 32, "a StateSet holds at most 32 states");

 public:
  constexpr StateSet() = default;
  constexpr StateSet(std::initializer_list<State> states) {
    for (State s : states) bits_ |= bit(s);
  }

  constexpr bool contains(State s) const { return (bits_ & bit(s)) != 0; }

  std::vector<State> members() const {
    std::vector<State> out;
    for (std::size_t i = 0; i < N; ++i) {
      if (bits_ & (std::uint32_t{1} << i)) out.push_back(static_cast<State>(i));
    }
    return out;
  }

  // {"a","b"}: the members' names, in the enum's order, as a text[] parameter.
  std::string sql() const {
    std::vector<std::string> names;
    for (State s : members()) names.emplace_back(to_string(s));
    return pg_array_literal(names);
  }

 private:
  static constexpr std::uint32_t bit(State s) {
    return std::uint32_t{1} << static_cast<std::uint32_t>(s);
  }
  std::uint32_t bits_ = 0;
};

}  // namespace gpurent
