#include "tests/support/response_reader.h"

#include <cctype>
#include <stdexcept>

namespace gpurent::testing {

HttpResult read_http_response(std::string& buffer, const std::function<bool()>& fill, bool head) {
  std::size_t end;
  while ((end = buffer.find("\r\n\r\n")) == std::string::npos) {
    if (!fill()) throw std::runtime_error("no complete response head; got: " + buffer);
  }
  HttpResult result;
  std::string head_text = buffer.substr(0, end);
  buffer.erase(0, end + 4);
  auto line_end = head_text.find("\r\n");
  std::string status_line = head_text.substr(0, line_end);
  if (status_line.size() < 12) throw std::runtime_error("bad status line: " + status_line);
  result.status = std::stoi(status_line.substr(9, 3));
  std::size_t pos = line_end == std::string::npos ? head_text.size() : line_end + 2;
  while (pos < head_text.size()) {
    auto next = head_text.find("\r\n", pos);
    if (next == std::string::npos) next = head_text.size();
    std::string line = head_text.substr(pos, next - pos);
    auto colon = line.find(':');
    if (colon != std::string::npos) {
      std::string name = line.substr(0, colon);
      for (auto& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      std::string value = line.substr(colon + 1);
      while (!value.empty() && value.front() == ' ') value.erase(0, 1);
      result.headers[name] = value;
    }
    pos = next + 2;
  }
  std::size_t length = 0;
  if (!head && result.headers.count("content-length")) {
    length = std::stoul(result.headers["content-length"]);
  }
  while (buffer.size() < length) {
    if (!fill()) throw std::runtime_error("response body cut short");
  }
  result.body = buffer.substr(0, length);
  buffer.erase(0, length);
  return result;
}

}  // namespace gpurent::testing
