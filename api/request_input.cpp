// Edge checks on the text a request carries outside its body, run by invoke() for every route.
#include "api/request_input.h"

#include "api/auth.h"
#include "api/utf8.h"
#include "core/error.h"

namespace gpurent::http {
namespace {

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Walks "/a/b/c" segment by segment, as the router splits it.
class Segments {
 public:
  explicit Segments(std::string_view path) : path_(path) {}
  bool next(std::string_view& segment) {
    if (pos_ > path_.size()) return false;
    auto slash = path_.find('/', pos_);
    if (slash == std::string_view::npos) slash = path_.size();
    segment = path_.substr(pos_, slash - pos_);
    pos_ = slash + 1;
    return true;
  }

 private:
  std::string_view path_;
  std::size_t pos_ = 1;  // past the leading '/'
};

[[noreturn]] void refuse(std::string_view what, std::string field, TextProblem problem) {
  std::string_view reason = problem_reason(problem);
  std::string message =
      "The " + std::string(what) + " '" + field + "' " + std::string(reason) + ".";
  throw Error(ErrorCode::kInvalidRequest, std::move(message),
              {{"field", std::move(field)}, {"reason", reason}});
}

void check_path_params(const Route& route, const Request& request) {
  if (route.pattern.find('{') == std::string::npos) return;
  Segments pattern(route.pattern), path(request.path);
  std::string_view part, value;
  while (pattern.next(part)) {
    // A request that did not come through the router (a direct call) may be shorter.
    if (!path.next(value)) return;
    if (part.size() < 3 || part.front() != '{' || part.back() != '}') continue;
    if (auto p = encoded_text_problem(value, false); p != TextProblem::kNone) {
      refuse("path parameter", std::string(part.substr(1, part.size() - 2)), p);
    }
  }
}

void check_query(std::string_view query) {
  while (!query.empty()) {
    auto amp = query.find('&');
    std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    auto eq = pair.find('=');
    std::string_view name = pair.substr(0, eq);
    std::string_view value =
        eq == std::string_view::npos ? std::string_view() : pair.substr(eq + 1);
    if (auto p = encoded_text_problem(name, true); p != TextProblem::kNone) {
      // An undecodable name is shown as sent; a decodable one as decoded, its bad bytes
      // escaped again.
      auto decoded = percent_decode(name, true);
      refuse("query parameter name", printable_name(decoded ? *decoded : name), p);
    }
    if (auto p = encoded_text_problem(value, true); p != TextProblem::kNone) {
      refuse("query parameter", printable_name(*percent_decode(name, true)), p);
    }
  }
}

}  // namespace

TextProblem encoded_text_problem(std::string_view raw, bool plus_as_space) {
  Utf8Validator utf8;
  for (std::size_t i = 0; i < raw.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(raw[i]);
    if (c == '%') {
      if (i + 2 >= raw.size()) return TextProblem::kBadEscape;
      int hi = hex_digit(raw[i + 1]), lo = hex_digit(raw[i + 2]);
      if (hi < 0 || lo < 0) return TextProblem::kBadEscape;
      c = static_cast<unsigned char>(hi * 16 + lo);
      i += 2;
    } else if (c == '+' && plus_as_space) {
      c = ' ';
    }
    if (c == 0) return TextProblem::kNul;
    if (!utf8.feed(c)) return TextProblem::kBadUtf8;
  }
  return utf8.complete() ? TextProblem::kNone : TextProblem::kBadUtf8;
}

TextProblem text_problem(std::string_view text) {
  if (text.find('\0') != std::string_view::npos) return TextProblem::kNul;
  return is_valid_utf8(text) ? TextProblem::kNone : TextProblem::kBadUtf8;
}

std::string_view problem_reason(TextProblem problem) {
  switch (problem) {
    case TextProblem::kNone:
      return "is acceptable";
    case TextProblem::kBadEscape:
      return "is not correctly percent-encoded";
    case TextProblem::kNul:
      return "must not contain a NUL byte";
    case TextProblem::kBadUtf8:
      return "must be valid UTF-8";
  }
  return "is not acceptable";
}

void check_request_input(const Route& route, const Request& request) {
  check_path_params(route, request);
  check_query(request.query);
  for (std::string_view name : kDataHeaders) {
    if (auto p = text_problem(request.header(name)); p != TextProblem::kNone) {
      refuse("header", std::string(name), p);
    }
  }
  if (auto p = text_problem(cookie_value(request, kSessionCookie)); p != TextProblem::kNone) {
    refuse("header", "Cookie", p);
  }
}

}  // namespace gpurent::http
