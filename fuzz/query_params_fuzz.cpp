// Fuzz target: a request target's path parameters and query string, as routing, the edge
// check every routed request passes (api/request_input.h) and list routes' QueryParams
// (api/handlers/query_params.h) split and percent-decode them. The input is the target as
// received, "/v1/items/{id}?limit=5&cursor=…", split at its first '?' as the server does.
//
// The checker and the decoder agree on every component: a component the checker passes
// decodes, to UTF-8 without NUL; one that does not decode is never passed. A request that
// passes the edge check hands handlers only such text, from the router's path parameters
// and from QueryParams alike. QueryParams either refuses with an invalid_request naming a
// parameter, or holds exactly the values Request::query_param finds; written out again,
// escaped, they read back the same. Its typed getters keep their documented ranges. Every
// refusal prints as the contract's JSON.
#include "api/handlers/query_params.h"
#include "api/http_types.h"
#include "api/request_input.h"
#include "api/router.h"
#include "api/utf8.h"
#include "core/error.h"
#include "core/id.h"
#include "fuzz/http_refusal.h"

#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace {

using gpurent::Error;
using gpurent::ErrorCode;
using gpurent::fuzz::check_field_refusal;
using gpurent::fuzz::check_refusal;
using namespace gpurent::http;

constexpr std::string_view kKnown[] = {"limit", "cursor", "since", "user_id", "state"};

bool usable(const std::string& text) {
  return text.find('\0') == std::string::npos && is_valid_utf8(text);
}

// The checker and the decoder must agree on one component.
void check_component(std::string_view raw, bool plus_as_space) {
  TextProblem problem = encoded_text_problem(raw, plus_as_space);
  auto decoded = percent_decode(raw, plus_as_space);
  if (problem == TextProblem::kNone && (!decoded || !usable(*decoded))) abort();
  if (decoded && usable(*decoded) && problem != TextProblem::kNone) abort();
  if (!decoded && problem == TextProblem::kNone) abort();
  if (problem_reason(problem).empty()) abort();
}

const Router& router() {
  static const Router r = [] {
    Router out;
    for (const char* pattern : {"/v1/items", "/v1/items/{id}", "/v1/items/{id}/parts/{part}"}) {
      out.add({.method = Method::kGet, .pattern = pattern});
    }
    return out;
  }();
  return r;
}

// Every byte but the unreserved ones escaped, a space as '+': what a careful client sends.
std::string escaped(std::string_view text) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : text) {
    if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
        c == '.' || c == '_' || c == '~') {
      out += static_cast<char>(c);
    } else if (c == ' ') {
      out += '+';
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 0xF];
    }
  }
  return out;
}

// A QueryParams over `query`, or nullopt when it refuses (as it must, naming a parameter).
std::optional<QueryParams> query_params(std::string_view query) {
  Request request;
  request.query = query;
  try {
    return QueryParams(request, {"limit", "cursor", "since", "user_id", "state"});
  } catch (const Error& e) {
    check_refusal(e, {ErrorCode::kInvalidRequest});
    if (!e.details().contains("field")) abort();
    return std::nullopt;
  }
}

// Each known parameter's value as text() gives it; nullopt when absent; "" when empty,
// which text() refuses.
std::vector<std::optional<std::string>> values(const QueryParams& params) {
  std::vector<std::optional<std::string>> out;
  for (std::string_view name : kKnown) {
    try {
      out.push_back(params.text(name));
      if (out.back() && out.back()->empty()) abort();
    } catch (const Error& e) {
      check_field_refusal(e, name);
      out.emplace_back("");
    }
  }
  return out;
}

void check_getters(const QueryParams& params) {
  try {
    int n = params.limit();
    if (n < 1 || n > kMaxPageLimit) abort();
  } catch (const Error& e) {
    check_field_refusal(e, "limit");
  }
  try {
    if (auto t = params.timestamp("since")) {
      // Clamped to the years stored times lie in.
      if (*t < gpurent::Timestamp{} || *t > *parse_rfc3339("9999-12-31T23:59:59.999999Z")) abort();
    }
  } catch (const Error& e) {
    check_field_refusal(e, "since");
  }
  try {
    if (auto id = params.id("user_id", gpurent::id_prefix::kUser)) {
      if (!gpurent::is_valid_id(gpurent::id_prefix::kUser, *id)) abort();
    }
  } catch (const Error& e) {
    check_field_refusal(e, "user_id");
  }
  try {
    (void)params.cursor();
  } catch (const Error& e) {
    check_field_refusal(e, "cursor");
  }
}

void check(std::string_view target) {
  auto q = target.find('?');
  std::string_view path = target.substr(0, q);
  std::string_view query = q == std::string_view::npos ? std::string_view() : target.substr(q + 1);

  // The components as the edge splits them: path segments, then query names and values.
  for (std::size_t pos = 1; pos <= path.size();) {
    auto slash = path.find('/', pos);
    if (slash == std::string_view::npos) slash = path.size();
    check_component(path.substr(pos, slash - pos), false);
    pos = slash + 1;
  }
  for (std::string_view rest = query; !rest.empty();) {
    auto amp = rest.find('&');
    std::string_view pair = rest.substr(0, amp);
    rest = amp == std::string_view::npos ? std::string_view() : rest.substr(amp + 1);
    auto eq = pair.find('=');
    check_component(pair.substr(0, eq), true);
    if (eq != std::string_view::npos) check_component(pair.substr(eq + 1), true);
  }

  RouteMatch match = router().match(Method::kGet, path);
  Request request;
  request.target = target;
  request.path = path;
  request.query = query;
  request.path_params = match.params;
  const Route fallback{.method = Method::kGet, .pattern = "/v1/items"};
  const Route& route = match.route ? *match.route : fallback;
  bool passed = false;
  try {
    check_request_input(route, request);
    passed = true;
  } catch (const Error& e) {
    check_refusal(e, {ErrorCode::kInvalidRequest});
    const auto& field = e.details().value("field", std::string());
    if (field.size() > 64 || !is_valid_utf8(field)) abort();
  }
  if (passed) {
    for (const auto& [name, value] : request.path_params) {
      if (value.empty() || !usable(value)) abort();
    }
  }

  auto params = query_params(query);
  if (!params) return;
  auto got = values(*params);
  for (std::size_t i = 0; i < got.size(); ++i) {
    // Strict QueryParams and the lenient lookup see the same value.
    if (request.query_param(kKnown[i]) != got[i]) abort();
    if (passed && got[i] && !usable(*got[i])) abort();
  }
  check_getters(*params);

  // Written out again, escaped, the parameters read back the same.
  std::string again;
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (!got[i]) continue;
    if (!again.empty()) again += '&';
    again += std::string(kKnown[i]) + "=" + escaped(*got[i]);
  }
  auto reread = query_params(again);
  if (!reread || values(*reread) != got) abort();
  if (passed) {
    Request clean;
    clean.query = again;
    try {
      check_request_input(fallback, clean);
    } catch (...) {
      abort();
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    check(std::string_view(reinterpret_cast<const char*>(data), size));
  } catch (...) {
    abort();  // a refusal other than gpurent::Error would be answered 500
  }
  return 0;
}
