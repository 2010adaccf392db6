// The one error the burn-in parsers throw: the text is not a finished run of the tool.
#pragma once

#include <cstddef>
#include <stdexcept>

namespace gpurent::burn_in {

// A captured burn-in output bigger than this is refused unread: the longest real logs (an
// nccl-tests run with NCCL_DEBUG=INFO on many ranks, gpu_burn's repainted progress lines)
// stay well below it, and every parser's work and memory are bounded by it.
inline constexpr std::size_t kMaxToolOutputBytes = 16 * 1024 * 1024;
// No line any of the tools prints comes near this (a 256-GPU gpu_burn progress line is ~13 KiB);
// a longer line is skipped unread, so no line is ever split into more tokens than that.
inline constexpr std::size_t kMaxToolLineBytes = 64 * 1024;

// What() is one sentence for an operator: what is missing or wrong, and where (a line number
// when there is one).
class ParseError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace gpurent::burn_in
