// HTTP/1.1 response serialisation with a per-thread cached Date header.
#include "api/wire.h"

#include <charconv>
#include <ctime>

namespace gpurent::http {
namespace {

// "Sun, 29 Nov 2026 16:00:00 GMT", formatted at most once per second per thread.
std::string_view http_date() {
  thread_local std::time_t cached_second = 0;
  thread_local char buf[40];
  thread_local std::size_t len = 0;
  std::time_t now = std::time(nullptr);
  if (now != cached_second) {
    std::tm tm{};
    gmtime_r(&now, &tm);
    len = std::strftime(buf, sizeof buf, "%a, %d %b %Y %H:%M:%S GMT", &tm);
    cached_second = now;
  }
  return {buf, len};
}

bool safe_header_text(std::string_view s) {
  return s.find_first_of("\r\n") == std::string_view::npos;
}

void append_number(std::string& out, std::size_t n) {
  char buf[24];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, n);
  out.append(buf, end);
}

}  // namespace

void serialize_response(const Response& response, std::string_view request_id, bool keep_alive,
                        bool head, std::string& out) {
  std::string_view body = response.body_view();
  int status = response.status;
  bool bodiless = status < 200 || status == 204 || status == 304;
  out.reserve(out.size() + 256 + (head || bodiless ? 0 : body.size()));
  out += "HTTP/1.1 ";
  append_number(out, static_cast<std::size_t>(status));
  out += ' ';
  out += reason_phrase(status);
  out += "\r\nServer: gpurent\r\nDate: ";
  out += http_date();
  if (!bodiless) {
    out += "\r\nContent-Type: ";
    out += response.content_type;
    out += "\r\nContent-Length: ";
    append_number(out, body.size());
  }
  out += "\r\nX-Request-Id: ";
  out += request_id;
  for (const auto& [name, value] : response.headers) {
    if (!safe_header_text(name) || !safe_header_text(value)) continue;
    out += "\r\n";
    out += name;
    out += ": ";
    out += value;
  }
  if (!keep_alive || response.close) out += "\r\nConnection: close";
  out += "\r\n\r\n";
  if (!head && !bodiless) out += body;
}

}  // namespace gpurent::http
