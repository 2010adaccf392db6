// The check every routed request passes before its handler runs: path parameters, query
// string names and values, and the headers read as data must be text the server can use
// (well-formed percent-escapes, UTF-8, no NUL). Anything else is 400 invalid_request naming
// the parameter, so no handler or database statement ever sees such bytes, and
// routes added later are covered without doing anything.
#pragma once

#include "api/http_types.h"
#include "api/router.h"

#include <array>
#include <string_view>

namespace gpurent::http {

// Why a piece of request text cannot be used; kNone when it can.
enum class TextProblem { kNone, kBadEscape, kNul, kBadUtf8 };

// A percent-encoded URL component (a path segment, or a query name or value with '+' as
// space), checked as it is decoded, without a copy.
TextProblem encoded_text_problem(std::string_view raw, bool plus_as_space);
// A header value, taken as it is.
TextProblem text_problem(std::string_view text);
// The reason printed in details.reason, e.g. "must be valid UTF-8".
std::string_view problem_reason(TextProblem problem);

// Headers whose values handlers read as data (credentials, keys, media types). Others are
// only ever compared with fixed values or ignored. Of Cookie only the session cookie is
// read, so only it is checked (reported as "Cookie"): a browser may carry other sites'
// cookies for the same domain in any bytes, and they must not lock a user out.
inline constexpr std::array<std::string_view, 4> kDataHeaders = {"Authorization", "X-CSRF-Token",
                                                                 "Idempotency-Key", "Content-Type"};

// Throws Error(kInvalidRequest) naming the first path parameter, query parameter or data
// header that is not usable text. `route` is the route `request` matched.
void check_request_input(const Route& route, const Request& request);

}  // namespace gpurent::http
