// What the HTTP edge's fuzz targets ask of every refusal: a gpurent::Error with one of the
// codes the parser documents, which the contract answers with a 4xx status, and whose JSON
// form prints. nlohmann's dump() throws on ill-formed UTF-8, so a refusal that echoed raw
// request bytes into its message or details would become a 500 while being answered.
#pragma once

#include "api/responses.h"
#include "core/error.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>
#include <initializer_list>
#include <string>
#include <string_view>

namespace gpurent::fuzz {

inline void check_refusal(const Error& e, std::initializer_list<ErrorCode> allowed) {
  if (std::find(allowed.begin(), allowed.end(), e.code()) == allowed.end()) abort();
  int status = http::status_for(e.code());
  if (status < 400 || status > 499) abort();
  try {
    (void)e.to_json().dump();
  } catch (...) {
    abort();
  }
}

// A refusal that names the field at fault, as invalid_request always does.
inline void check_field_refusal(const Error& e, std::string_view field) {
  check_refusal(e, {ErrorCode::kInvalidRequest});
  const auto& details = e.details();
  if (!details.contains("field") || !details["field"].is_string()) abort();
  if (details["field"].get_ref<const std::string&>() != field) abort();
}

}  // namespace gpurent::fuzz
