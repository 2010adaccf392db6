// Fuzz target: JSON request bodies (api/json_body.h), read by every POST and PATCH before
// anything else looks at them. The input is the body, sent as application/json.
//
// parse_json_body either returns exactly the value nlohmann's own parser makes of the text,
// no deeper than 64 levels, or refuses with invalid_json, or with invalid_request for a
// well-formed body nested deeper than that or holding a number no double holds; every
// refusal prints as the contract's JSON. An object is then read through JsonObjectReader
// as handlers read theirs: each getter returns the member it names exactly when the member
// has the type and range asked for, and otherwise refuses naming that field (with its
// prefix inside a nested object); finish() refuses exactly when some member was never asked
// for, naming one of those.
#include "api/json_body.h"

#include "core/error.h"
#include "core/limits.h"
#include "fuzz/http_refusal.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <cstdlib>
#include <limits>
#include <optional>
#include <set>
#include <string>
#include <string_view>

namespace {

using gpurent::Error;
using gpurent::ErrorCode;
using gpurent::fuzz::check_field_refusal;
using gpurent::fuzz::check_refusal;
using gpurent::http::JsonObjectReader;
using nlohmann::json;

class JsonContentType final : public gpurent::http::HeaderSource {
 public:
  std::string_view get(std::string_view name) const override {
    return name == "Content-Type" ? "application/json; charset=utf-8" : "";
  }
};

// The deepest nesting of arrays and objects, counted by events: no recursion, so a hostile
// depth cannot overflow the checker's stack either.
class DepthCounter final : public nlohmann::json_sax<json> {
 public:
  std::size_t max_depth = 0;
  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override { return open(); }
  bool key(string_t&) override { return true; }
  bool end_object() override { return close(); }
  bool start_array(std::size_t) override { return open(); }
  bool end_array() override { return close(); }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override {
    return false;
  }

 private:
  bool open() {
    if (++depth_ > max_depth) max_depth = depth_;
    return true;
  }
  bool close() {
    --depth_;
    return true;
  }
  std::size_t depth_ = 0;
};

// The member a getter should see: absent and null are the same to handlers.
const json* member(const json& object, const std::string& field) {
  auto it = object.find(field);
  return it == object.end() || it->is_null() ? nullptr : &*it;
}

// Whether `v` is an integer within [min, max], and which.
std::optional<std::int64_t> int_in_range(const json& v, std::int64_t min, std::int64_t max) {
  if (v.is_number_unsigned()) {
    auto u = v.get<std::uint64_t>();
    if (u > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) return {};
    auto n = static_cast<std::int64_t>(u);
    if (n < min || n > max) return {};
    return n;
  }
  if (v.is_number_integer()) {
    auto n = v.get<std::int64_t>();
    if (n < min || n > max) return {};
    return n;
  }
  return {};
}

struct Reader {
  const json& object;
  JsonObjectReader in;
  std::string prefix;

  Reader(const json& o, std::string p) : object(o), in(o, p), prefix(std::move(p)) {}

  void optional_int(const std::string& field, std::int64_t min, std::int64_t max) {
    const json* v = member(object, field);
    auto want = v ? int_in_range(*v, min, max) : std::nullopt;
    try {
      auto got = in.optional_int(field, min, max);
      if (got != want) abort();
    } catch (const Error& e) {
      if (!v || want) abort();
      check_field_refusal(e, prefix + field);
    }
  }

  void required_int(const std::string& field, std::int64_t min, std::int64_t max) {
    const json* v = member(object, field);
    auto want = v ? int_in_range(*v, min, max) : std::nullopt;
    try {
      if (in.required_int(field, min, max) != want) abort();
    } catch (const Error& e) {
      if (want) abort();
      check_field_refusal(e, prefix + field);
    }
  }

  void optional_string(const std::string& field, std::size_t max) {
    const json* v = member(object, field);
    bool fits = v && v->is_string() && v->get_ref<const std::string&>().size() <= max;
    try {
      auto got = in.optional_string(field, max);
      if (got.has_value() != fits) abort();
      if (got && *got != v->get_ref<const std::string&>()) abort();
    } catch (const Error& e) {
      if (!v || fits) abort();
      check_field_refusal(e, prefix + field);
    }
  }

  void required_string(const std::string& field, std::size_t max) {
    const json* v = member(object, field);
    bool fits = v && v->is_string() && v->get_ref<const std::string&>().size() <= max;
    try {
      std::string got = in.required_string(field, max);
      if (!fits || got != v->get_ref<const std::string&>()) abort();
    } catch (const Error& e) {
      if (fits) abort();
      check_field_refusal(e, prefix + field);
    }
  }

  void optional_bool(const std::string& field) {
    const json* v = member(object, field);
    try {
      auto got = in.optional_bool(field);
      if (got.has_value() != (v != nullptr)) abort();
      if (got && (!v->is_boolean() || *got != v->get<bool>())) abort();
    } catch (const Error& e) {
      if (!v || v->is_boolean()) abort();
      check_field_refusal(e, prefix + field);
    }
  }

  const json* optional_value(const std::string& field) {
    const json* got = in.optional_value(field);
    if (got != member(object, field)) abort();
    return got;
  }

  // `asked`: every field a getter was called for, whatever it answered.
  void finish(const std::set<std::string>& asked) {
    std::set<std::string> unread;
    for (const auto& [key, _] : object.items()) {
      if (!asked.count(key)) unread.insert(key);
    }
    try {
      in.finish();
      if (!unread.empty()) abort();
    } catch (const Error& e) {
      if (unread.empty()) abort();
      check_refusal(e, {ErrorCode::kInvalidRequest});
      const auto& field = e.details().value("field", std::string());
      if (field.rfind(prefix, 0) != 0 || !unread.count(field.substr(prefix.size()))) abort();
    }
  }
};

// Reads `value` with fields of every kind, the shape of a booking request: integers at the
// edges of int64 and of small ranges, strings with short limits, a flag, a nested object.
void read_as_handler(const json& value) {
  std::optional<Reader> r;
  try {
    r.emplace(value, "");
    if (!value.is_object()) abort();
  } catch (const Error& e) {
    if (value.is_object()) abort();
    check_field_refusal(e, "body");
    return;
  }
  r->required_int("gpu_count", 1, 64);
  r->optional_int("days", gpurent::limits::kMinRentalDays, gpurent::limits::kMaxRentalDays);
  r->optional_int("offset", -10, -1);
  r->optional_int("big", std::numeric_limits<std::int64_t>::min(),
                  std::numeric_limits<std::int64_t>::max());
  r->required_string("gpu_model", 64);
  r->optional_string("name", 8);
  r->optional_bool("bf16");
  std::set<std::string> asked = {"gpu_count", "days", "offset", "big",
                                 "gpu_model", "name", "bf16",   "constraints"};
  if (const json* c = r->optional_value("constraints")) {
    try {
      Reader nested(*c, "constraints.");
      if (!c->is_object()) abort();
      nested.optional_int("min_vram_gb", 1, 4096);
      nested.optional_string("architecture", 64);
      nested.finish({"min_vram_gb", "architecture"});
    } catch (const Error& e) {
      if (c->is_object()) abort();
      check_field_refusal(e, "constraints");
    }
  }
  r->finish(asked);
}

void check(std::string_view body) {
  JsonContentType headers;
  gpurent::http::Request request;
  request.method = gpurent::http::Method::kPost;
  request.body = body;
  request.headers = &headers;

  json reference = json::parse(body, nullptr, false);
  DepthCounter depth;
  bool well_formed = !body.empty() && !reference.is_discarded();
  if (well_formed) json::sax_parse(body, &depth);

  json value;
  try {
    value = gpurent::http::parse_json_body(request);
  } catch (const Error& e) {
    if (well_formed && depth.max_depth <= 64) abort();
    check_refusal(e, {ErrorCode::kInvalidJson, ErrorCode::kInvalidRequest});
    if (well_formed && e.code() != ErrorCode::kInvalidRequest) abort();  // too deep, then
    return;
  }
  if (!well_formed || depth.max_depth > 64 || value != reference) abort();
  // What a handler is given can be printed and read back, as responses and logs do.
  if (json::parse(value.dump()) != value) abort();
  read_as_handler(value);
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
