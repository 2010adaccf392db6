// Minimal HTTP/1.1 response parsing shared by the plain and TLS test clients: a status line,
// headers, and a Content-Length body, read from a buffer that `fill` appends to.
#pragma once

#include "tests/support/http_client.h"

#include <functional>
#include <string>

namespace gpurent::testing {

// Takes one response off the front of `buffer`, calling `fill` (false: EOF, error or
// deadline) until it is whole. Throws std::runtime_error when it never is.
HttpResult read_http_response(std::string& buffer, const std::function<bool()>& fill, bool head);

}  // namespace gpurent::testing
