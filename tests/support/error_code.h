// The contract error code a call throws ("not_found", "invalid_state", …), or "none" when it
// throws none: what use-case tests compare, in one place.
#pragma once

#include "core/error.h"

#include <string>

namespace gpurent::testing {

template <typename Fn>
std::string error_code_of(Fn&& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return std::string(error_code_name(e.code()));
  }
  return "none";
}

}  // namespace gpurent::testing
