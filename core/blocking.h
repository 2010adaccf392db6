// Network threads must never block. A handler may still be tried on one when it usually
// answers from memory (a cached credential, a catalog snapshot): the attempt runs inside a
// NoBlockingScope, and whatever would block instead (taking a database connection,
// rebuilding a snapshot, resolving an unknown credential) throws WouldBlock, which abandons
// the attempt so the request runs again on a worker. Only handlers with no effects before
// their first blocking call may be tried this way (reads: Execution::kInlineUnlessBlocked).
#pragma once

#include <exception>

namespace gpurent {

struct WouldBlock : std::exception {
  const char* what() const noexcept override { return "would block on a network thread"; }
};

// While one lives on a thread, blocking_forbidden() is true there.
class NoBlockingScope {
 public:
  NoBlockingScope();
  ~NoBlockingScope();
  NoBlockingScope(const NoBlockingScope&) = delete;
  NoBlockingScope& operator=(const NoBlockingScope&) = delete;

 private:
  bool outer_;
};

bool blocking_forbidden() noexcept;

// Throws WouldBlock where blocking is forbidden: called first by everything that may block.
inline void may_block() {
  if (blocking_forbidden()) throw WouldBlock();
}

}  // namespace gpurent
