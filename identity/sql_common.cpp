// Shared SQL helpers of the identity stores.
#include "identity/sql_common.h"

#include <cstdio>

namespace gpurent::identity {

std::string sql_timestamp(Timestamp t) {
  auto us = t.time_since_epoch().count();
  auto base = format_rfc3339(std::chrono::floor<std::chrono::seconds>(t));
  char frac[16];
  std::snprintf(frac, sizeof frac, ".%06lld",
                static_cast<long long>(((us % 1000000) + 1000000) % 1000000));
  std::string out = base.substr(0, base.size() - 1);
  out.append(frac).append("Z");
  return out;
}

}  // namespace gpurent::identity
