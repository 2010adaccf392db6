// What this binary was built from, for /metrics' build_info.
#pragma once

namespace gpurent {

// The commit of the checkout it was built from (12 hex digits), or "unknown".
const char* build_commit();

}  // namespace gpurent
