// The thread's no-blocking mark.
#include "core/blocking.h"

namespace gpurent {
namespace {

thread_local bool forbidden = false;

}  // namespace

NoBlockingScope::NoBlockingScope() : outer_(forbidden) {
  forbidden = true;
}

NoBlockingScope::~NoBlockingScope() {
  forbidden = outer_;
}

bool blocking_forbidden() noexcept {
  return forbidden;
}

}  // namespace gpurent
