// Serialises a Response into HTTP/1.1 bytes: status line, headers, body.
#pragma once

#include "api/http_types.h"

#include <string>
#include <string_view>

namespace gpurent::http {

// Appends the whole response to `out`. `head` omits the body but keeps its length;
// 1xx, 204 and 304 carry neither. Header names or values holding CR or LF are dropped, so
// no handler can split a response.
void serialize_response(const Response& response, std::string_view request_id, bool keep_alive,
                        bool head, std::string& out);

}  // namespace gpurent::http
