// JSON body parsing and strict field access.
#include "api/json_body.h"

#include "api/utf8.h"
#include "core/error.h"

#include <cctype>
#include <string>
#include <vector>

namespace gpurent::http {

namespace {

// Far deeper than any request body of the contract, far shallower than a stack.
constexpr std::size_t kMaxJsonDepth = 64;

// Whether arrays and objects open more than `limit` deep, by counting brackets outside
// strings: cheap enough for every body, and exact for well-formed JSON.
bool nested_deeper_than(std::string_view text, std::size_t limit) {
  std::size_t depth = 0;
  bool in_string = false, escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > limit) return true;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return false;
}

// A second, event-only pass over a body the parser refused, to say where it went wrong:
// the path to the value at fault ("items[2].gpu_count") and its byte offset.
class JsonLocator final : public nlohmann::json_sax<nlohmann::json> {
 public:
  enum class Fault { kNone, kSyntax, kOutOfRange, kTooDeep };

  Fault fault() const { return fault_; }
  std::size_t offset() const { return offset_; }
  // The path to the value at fault; "body" for the document itself.
  const std::string& path() const { return path_; }
  // The member of the top-level object that holds the fault; "body" when there is none.
  const std::string& top_level_field() const { return top_; }

  bool null() override { return value(); }
  bool boolean(bool) override { return value(); }
  bool number_integer(number_integer_t) override { return value(); }
  bool number_unsigned(number_unsigned_t) override { return value(); }
  bool number_float(number_float_t, const string_t&) override { return value(); }
  bool string(string_t&) override { return value(); }
  bool binary(binary_t&) override { return value(); }
  bool start_object(std::size_t) override { return open(false); }
  bool key(string_t& name) override {
    frames_.back().key = name;
    return true;
  }
  bool end_object() override { return close(); }
  bool start_array(std::size_t) override { return open(true); }
  bool end_array() override { return close(); }
  bool parse_error(std::size_t position, const std::string&,
                   const nlohmann::detail::exception& e) override {
    // nlohmann reports an unrepresentable number through the same event as bad syntax.
    record(
        dynamic_cast<const nlohmann::json::out_of_range*>(&e) ? Fault::kOutOfRange : Fault::kSyntax,
        position);
    return false;
  }

 private:
  struct Frame {
    bool array = false;
    std::string key;
    std::size_t index = 0;  // arrays: the element being read
  };

  bool value() {
    if (!frames_.empty() && frames_.back().array) ++frames_.back().index;
    return true;
  }
  bool open(bool array) {
    if (frames_.size() >= kMaxJsonDepth) {
      record(Fault::kTooDeep, 0);
      return false;
    }
    frames_.push_back({array, "", 0});
    return true;
  }
  bool close() {
    frames_.pop_back();
    return value();
  }
  void record(Fault fault, std::size_t position) {
    fault_ = fault;
    offset_ = position;
    // A value inside a top-level array is "body[2]"; inside an object, "items[2].name".
    std::string path = !frames_.empty() && frames_[0].array ? "body" : "";
    for (const auto& f : frames_) {
      if (f.array) {
        // Appended piece by piece: GCC 12 at -O3 misreads "[" + to_string(...) as an
        // unbounded copy (-Wstringop-overflow).
        path += '[';
        path += std::to_string(f.index);
        path += ']';
      } else {
        if (!path.empty()) path += '.';
        path += f.key;
      }
    }
    path_ = path.empty() ? "body" : printable_name(path, 256);
    top_ = frames_.empty() || frames_[0].array ? "body" : printable_name(frames_[0].key);
  }

  std::vector<Frame> frames_;
  Fault fault_ = Fault::kNone;
  std::size_t offset_ = 0;
  std::string path_ = "body";
  std::string top_ = "body";
};

// Throws the error for a body that is too deep or holds an unrepresentable number.
[[noreturn]] void refuse_located(std::string_view body) {
  JsonLocator locator;
  nlohmann::json::sax_parse(body, &locator);
  switch (locator.fault()) {
    case JsonLocator::Fault::kTooDeep:
      throw Error(
          ErrorCode::kInvalidRequest,
          "Field '" + locator.top_level_field() + "' is nested more than " +
              std::to_string(kMaxJsonDepth) + " levels deep.",
          {{"field", locator.top_level_field()},
           {"reason", "is nested more than " + std::to_string(kMaxJsonDepth) + " levels deep"}});
    case JsonLocator::Fault::kOutOfRange:
      throw Error(ErrorCode::kInvalidRequest,
                  "Field '" + locator.path() + "' is a number out of range (byte " +
                      std::to_string(locator.offset()) + ").",
                  {{"field", locator.path()},
                   {"reason", "is a number out of range"},
                   {"offset", locator.offset()}});
    case JsonLocator::Fault::kSyntax:
    case JsonLocator::Fault::kNone:
      break;
  }
  throw Error(ErrorCode::kInvalidJson,
              "The request body is not valid JSON (error at byte " +
                  std::to_string(locator.offset()) + ").",
              {{"offset", locator.offset()}});
}

}  // namespace

bool has_media_type(const Request& request, std::string_view type) {
  std::string_view base = request.header("Content-Type");
  base = base.substr(0, base.find(';'));  // parameters (charset) do not matter
  while (!base.empty() && (base.back() == ' ' || base.back() == '\t')) base.remove_suffix(1);
  while (!base.empty() && (base.front() == ' ' || base.front() == '\t')) base.remove_prefix(1);
  if (base.size() != type.size()) return false;
  for (std::size_t i = 0; i < base.size(); ++i) {  // media types ignore case (RFC 9110)
    if (std::tolower(static_cast<unsigned char>(base[i])) != type[i]) return false;
  }
  return true;
}

nlohmann::json parse_json_body(const Request& request) {
  if (request.body.empty()) {
    throw Error(ErrorCode::kInvalidJson, "The request body is empty; a JSON object is expected.");
  }
  if (!has_media_type(request, "application/json")) {
    throw Error(ErrorCode::kInvalidRequest, "The body must be sent as application/json.",
                {{"field", "Content-Type"}, {"reason", "must be application/json"}});
  }
  // Deep nesting parses, but copying or printing such a value recurses once per level.
  if (nested_deeper_than(request.body, kMaxJsonDepth)) refuse_located(request.body);
  // nlohmann's parser also refuses ill-formed UTF-8 inside strings.
  try {
    return nlohmann::json::parse(request.body);
  } catch (const nlohmann::json::parse_error& e) {
    throw Error(
        ErrorCode::kInvalidJson,
        "The request body is not valid JSON (error at byte " + std::to_string(e.byte) + ").",
        {{"offset", e.byte}});
  } catch (const nlohmann::json::exception&) {
    // Well-formed, but not representable: a number beyond a double's range (1e400).
    refuse_located(request.body);
  }
}

}  // namespace gpurent::http
