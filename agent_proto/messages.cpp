// Encodes and strictly decodes agent protocol messages. Both ends of the connection are
// untrusted to the other, so the decoder checks size, nesting, duplicate members, every
// member's type and range, and refuses anything it does not know.
#include "agent_proto/messages.h"
#include "agent_proto/wire_time.h"

#include "core/id.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <unordered_set>

namespace gpurent::agent_proto {
namespace {

using nlohmann::json;

// The path of an error found before the message's type is known.
constexpr std::string_view kMessagePath = "message";
// Input quoted back in errors is cut to this; errors end up in logs and error messages.
constexpr std::size_t kMaxQuote = 40;
constexpr std::size_t kMaxJsonErrorQuote = 160;
// RFC 1123.
constexpr std::size_t kMaxHostnameBytes = 253;
constexpr std::size_t kMaxHostnameLabelBytes = 63;

// ---- Errors ----

// Input as it may appear in an error: printable ASCII, cut short.
std::string quote(std::string_view s, std::size_t max_chars = kMaxQuote) {
  std::string out;
  for (char ch : s) {
    auto c = static_cast<unsigned char>(ch);
    out += (c >= 0x20 && c < 0x7f) ? ch : '?';
    if (out.size() >= max_chars) {
      out += "...";
      break;
    }
  }
  return out;
}

std::string member_path(const std::string& path, std::string_view key) {
  return path + "." + std::string(key);
}

std::string item_path(const std::string& path, std::size_t index) {
  return path + "[" + std::to_string(index) + "]";
}

[[noreturn]] void fail(std::string path, const std::string& reason) {
  throw ProtocolError(std::move(path), reason);
}

std::string describe(const json& value) {
  if (value.is_number()) return "a number";
  if (value.is_array() || value.is_object()) return std::string("an ") + value.type_name();
  return std::string("a ") + value.type_name();
}

// ---- Parsing: the JSON text itself ----

// A SAX pass over the text before it becomes a DOM: it stops at the nesting limit before
// anything deep is built, and sees each object's members in order, which the DOM (a map,
// last duplicate wins) no longer shows.
class StructureCheck {
 public:
  bool null() { return element(); }
  bool boolean(bool) { return element(); }
  bool number_integer(json::number_integer_t) { return element(); }
  bool number_unsigned(json::number_unsigned_t) { return element(); }
  bool number_float(json::number_float_t, const json::string_t&) { return element(); }
  bool string(json::string_t&) { return element(); }
  bool binary(json::binary_t&) { return element(); }
  bool start_object(std::size_t) { return open(true); }
  bool start_array(std::size_t) { return open(false); }
  bool end_object() { return close(); }
  bool end_array() { return close(); }

  bool key(json::string_t& name) {
    auto& frame = frames_.back();
    if (!frame.keys.insert(name).second && !duplicate_) duplicate_ = path_to(name);
    frame.key = name;
    return true;
  }

  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) {
    // "[json.exception.parse_error.101] parse error at line 1, …": the id helps nobody.
    std::string_view what = e.what();
    if (auto end = what.find("] "); end != std::string_view::npos) what.remove_prefix(end + 2);
    error_ = "is not valid JSON: " + quote(what, kMaxJsonErrorQuote);
    return false;
  }

  // Syntax or nesting: the text cannot be read at all.
  const std::optional<std::string>& error() const { return error_; }
  // The first member that appears twice in its object, as a path below the root
  // (".gpus[0].index").
  const std::optional<std::string>& duplicate() const { return duplicate_; }

 private:
  struct Frame {
    bool object = false;
    std::size_t index = 0;  // arrays: the element being read
    std::string key;        // objects: the member being read
    std::unordered_set<std::string> keys;
  };

  bool open(bool object) {
    if (frames_.size() >= static_cast<std::size_t>(kMaxNestingDepth)) {
      error_ =
          "nests objects and arrays deeper than " + std::to_string(kMaxNestingDepth) + " levels";
      return false;
    }
    frames_.push_back(Frame{object, 0, {}, {}});
    return true;
  }

  bool close() {
    frames_.pop_back();
    return element();
  }

  bool element() {
    if (!frames_.empty() && !frames_.back().object) ++frames_.back().index;
    return true;
  }

  std::string path_to(std::string_view key) const {
    std::string path;
    for (std::size_t i = 0; i + 1 < frames_.size(); ++i) {
      const auto& f = frames_[i];
      path += f.object ? "." + quote(f.key) : "[" + std::to_string(f.index) + "]";
    }
    return path + "." + quote(key);
  }

  std::vector<Frame> frames_;
  std::optional<std::string> error_;
  std::optional<std::string> duplicate_;
};

bool is_type_name(std::string_view name);

// Errors are named after the message's type as soon as the text says what that is.
std::string root_path(const json& root) {
  if (root.is_object()) {
    auto type = root.find("type");
    if (type != root.end() && type->is_string() && is_type_name(type->get<std::string>())) {
      return type->get<std::string>();
    }
  }
  return std::string(kMessagePath);
}

[[noreturn]] void refuse_text(const std::string& reason) {
  fail(std::string(kMessagePath), reason);
}

// What the JSON reader would get wrong or spend too long on.
void check_raw(std::string_view text) {
  if (text.size() > kMaxMessageBytes) {
    refuse_text("is " + std::to_string(text.size()) + " bytes; at most " +
                std::to_string(kMaxMessageBytes) + " are accepted");
  }
  // nlohmann's reader takes a NUL for the end of the input and would ignore what follows;
  // JSON text has none outside strings, and inside them only escaped.
  if (text.find('\0') != std::string_view::npos) refuse_text("contains a NUL byte");
  // The reader would skip it; nothing here writes one, and "nothing before the object" is
  // simpler to state than a list of exceptions.
  if (text.starts_with("\xEF\xBB\xBF")) refuse_text("starts with a byte order mark");
}

json parse(std::string_view text) {
  check_raw(text);
  StructureCheck check;
  json::sax_parse(text.begin(), text.end(), &check);
  if (check.error()) refuse_text(*check.error());
  json root;
  try {
    root = json::parse(text.begin(), text.end());
  } catch (const json::exception& e) {
    refuse_text("is not valid JSON: " + quote(e.what(), kMaxJsonErrorQuote));
  }
  if (check.duplicate()) fail(root_path(root) + *check.duplicate(), "appears twice in its object");
  return root;
}

// ---- Typed readers: each takes the member's full path for its errors ----

std::int64_t read_integer(const json& value, const std::string& path, std::int64_t min,
                          std::int64_t max) {
  auto range = "must be an integer from " + std::to_string(min) + " to " + std::to_string(max);
  if (!value.is_number_integer()) fail(path, range + ", not " + describe(value));
  // A value beyond int64 arrives as unsigned; it is out of range whatever the bounds.
  if (value.is_number_unsigned() && value.get<std::uint64_t>() > std::uint64_t(INT64_MAX)) {
    fail(path, range);
  }
  auto n = value.get<std::int64_t>();
  if (n < min || n > max) fail(path, range + ", not " + std::to_string(n));
  return n;
}

bool read_bool(const json& value, const std::string& path) {
  if (!value.is_boolean()) fail(path, "must be true or false, not " + describe(value));
  return value.get<bool>();
}

const std::string& read_string(const json& value, const std::string& path, std::size_t max_bytes,
                               bool may_be_empty) {
  if (!value.is_string()) fail(path, "must be a string, not " + describe(value));
  const auto& s = value.get_ref<const std::string&>();
  if (s.size() > max_bytes) {
    fail(path, "must be at most " + std::to_string(max_bytes) + " bytes, not " +
                   std::to_string(s.size()));
  }
  if (s.empty() && !may_be_empty) fail(path, "must not be empty");
  return s;
}

// Characters that would let text rewrite a log line or a terminal: C0 and C1 controls,
// DEL, and the bidirectional overrides (U+202A..U+202E, U+2066..U+2069). The parser has
// already refused anything that is not UTF-8.
bool is_unsafe_at(std::string_view s, std::size_t i) {
  auto byte = [&](std::size_t k) { return k < s.size() ? static_cast<unsigned char>(s[k]) : 0; };
  auto c = byte(i);
  if (c < 0x20 || c == 0x7f) return true;
  if (c == 0xc2 && byte(i + 1) >= 0x80 && byte(i + 1) <= 0x9f) return true;
  if (c == 0xe2 && byte(i + 1) == 0x80 && byte(i + 2) >= 0xaa && byte(i + 2) <= 0xae) return true;
  return c == 0xe2 && byte(i + 1) == 0x81 && byte(i + 2) >= 0xa6 && byte(i + 2) <= 0xa9;
}

// Free text (UTF-8) for people: progress, results, errors, model names.
std::string read_text(const json& value, const std::string& path, std::size_t max_bytes,
                      bool may_be_empty) {
  const auto& s = read_string(value, path, max_bytes, may_be_empty);
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (is_unsafe_at(s, i)) fail(path, "must not contain control or bidirectional characters");
  }
  return s;
}

// An ASCII token made of the characters `allowed` accepts; `what` shows the expected form.
template <typename Allowed>
std::string read_token(const json& value, const std::string& path, std::size_t max_bytes,
                       Allowed allowed, std::string_view what) {
  const auto& s = read_string(value, path, max_bytes, false);
  if (!std::all_of(s.begin(), s.end(), allowed)) {
    fail(path, "must be " + std::string(what) + ", not \"" + quote(s) + "\"");
  }
  return s;
}

bool is_alnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

// Message ids are the sender's choice; they are echoed in acks and logs, so kept plain.
std::string read_message_id(const json& value, const std::string& path) {
  return read_token(
      value, path, kMaxIdBytes,
      [](char c) { return is_alnum(c) || c == '_' || c == '-' || c == '.' || c == ':'; },
      "an id of letters, digits and _ - . :");
}

// Task and rental ids are the control plane's (core/id.h), so their exact form is known.
std::string read_typed_id(const json& value, const std::string& path, std::string_view prefix) {
  const auto& s = read_string(value, path, kMaxIdBytes, false);
  if (!is_valid_id(prefix, s)) {
    fail(path, "must be an id like \"" + std::string(prefix) + "_...\", not \"" + quote(s) + "\"");
  }
  return s;
}

std::string read_task_id(const json& value, const std::string& path) {
  return read_typed_id(value, path, id_prefix::kTask);
}

// RFC 1123: dot-separated labels of letters, digits and inner hyphens.
std::string read_hostname(const json& value, const std::string& path) {
  auto name = read_token(
      value, path, kMaxHostnameBytes, [](char c) { return is_alnum(c) || c == '-' || c == '.'; },
      "a host name (letters, digits, '-' and '.')");
  std::size_t start = 0;
  while (start <= name.size()) {
    auto end = std::min(name.find('.', start), name.size());
    auto label = std::string_view(name).substr(start, end - start);
    if (label.empty() || label.size() > kMaxHostnameLabelBytes || label.front() == '-' ||
        label.back() == '-') {
      fail(path, "\"" + quote(name) + "\" is not a valid host name (RFC 1123)");
    }
    start = end + 1;
  }
  return name;
}

// "550.54.15", "12.4": what nvidia-smi prints for driver and CUDA versions.
std::string read_dotted_version(const json& value, const std::string& path) {
  auto v = read_token(
      value, path, kMaxNameBytes, [](char c) { return (c >= '0' && c <= '9') || c == '.'; },
      "a version like \"550.54.15\"");
  if (v.front() == '.' || v.back() == '.' || v.find("..") != std::string::npos) {
    fail(path, "must be a version like \"550.54.15\", not \"" + quote(v) + "\"");
  }
  return v;
}

// "0.9.1", "0.9.1-3-gabc123", "1.0.0+debian~1".
std::string read_agent_version(const json& value, const std::string& path) {
  return read_token(
      value, path, kMaxNameBytes,
      [](char c) {
        return is_alnum(c) || c == '.' || c == '-' || c == '+' || c == '_' || c == '~';
      },
      "a version of letters, digits and . - + _ ~");
}

std::string read_error_code(const json& value, const std::string& path) {
  return read_token(
      value, path, kMaxIdBytes,
      [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_'; },
      "a lower_snake_case code");
}

// "<algorithm> <base64>[ <comment>]": the shape of an sshd host key file. The key blob
// itself is checked where it is stored; here only what keeps it one well-formed line.
std::string read_ssh_host_key(const json& value, const std::string& path) {
  auto key = read_token(
      value, path, kMaxSshHostKeyBytes, [](char c) { return c >= 0x20 && c < 0x7f; },
      "printable ASCII");
  static constexpr std::array<std::string_view, 5> kAlgorithms{
      "ssh-ed25519", "ssh-rsa", "ecdsa-sha2-nistp256", "ecdsa-sha2-nistp384",
      "ecdsa-sha2-nistp521"};
  auto sp = key.find(' ');
  auto algorithm = std::string_view(key).substr(0, sp);
  if (sp == std::string::npos ||
      std::find(kAlgorithms.begin(), kAlgorithms.end(), algorithm) == kAlgorithms.end()) {
    fail(path, "must be an OpenSSH public key line (\"ssh-ed25519 AAAA...\")");
  }
  auto rest = std::string_view(key).substr(sp + 1);
  auto blob = rest.substr(0, rest.find(' '));
  auto is_base64 = [](char c) { return is_alnum(c) || c == '+' || c == '/'; };
  auto data = blob.substr(0, blob.find_last_not_of('=') + 1);
  if (blob.empty() || blob.size() % 4 != 0 || blob.size() - data.size() > 2 ||
      !std::all_of(data.begin(), data.end(), is_base64)) {
    fail(path, "the key after \"" + std::string(algorithm) + "\" must be base64");
  }
  return key;
}

// The agent's probe key: a host key's shape, Ed25519 only (the agent makes it so).
std::string read_ssh_probe_key(const json& value, const std::string& path) {
  auto key = read_ssh_host_key(value, path);
  if (key.rfind("ssh-ed25519 ", 0) != 0) fail(path, "must be an ssh-ed25519 public key line");
  return key;
}

// The parser refuses numbers beyond a double, but a sender's own json may hold an infinity
// or a NaN, which dump() would write as null: refused before it changes meaning.
void check_finite(const json& value, const std::string& path) {
  if (value.is_number_float() && !std::isfinite(value.get<double>())) {
    fail(path, "must be a finite number");
  }
  if (value.is_object()) {
    for (const auto& [key, member] : value.items())
      check_finite(member, member_path(path, quote(key)));
  } else if (value.is_array()) {
    for (std::size_t i = 0; i < value.size(); ++i) check_finite(value[i], item_path(path, i));
  }
}

// Kind-specific objects (task payloads, results): their executors validate the content;
// here they are only bounded.
json read_object_payload(const json& value, const std::string& path) {
  if (!value.is_object()) fail(path, "must be an object, not " + describe(value));
  auto size = value.dump().size();
  if (size > kMaxPayloadBytes) {
    fail(path, "must encode to at most " + std::to_string(kMaxPayloadBytes) + " bytes, not " +
                   std::to_string(size));
  }
  return value;
}

// Calls `read(item, item_path)` for each element of an array of at most `max` elements.
template <typename Read>
auto read_list(const json& value, const std::string& path, std::size_t max, Read read) {
  if (!value.is_array()) fail(path, "must be an array, not " + describe(value));
  if (value.size() > max) {
    fail(path, "must have at most " + std::to_string(max) + " entries, not " +
                   std::to_string(value.size()));
  }
  std::vector<decltype(read(value, path))> out;
  out.reserve(value.size());
  for (std::size_t i = 0; i < value.size(); ++i) out.push_back(read(value[i], item_path(path, i)));
  return out;
}

// A list of strings in which each appears once.
template <typename Read>
std::vector<std::string> read_set(const json& value, const std::string& path, std::size_t max,
                                  Read read) {
  auto items = read_list(value, path, max, read);
  std::unordered_set<std::string_view> seen;
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (!seen.insert(items[i]).second) fail(item_path(path, i), "is listed twice");
  }
  return items;
}

// ---- Timestamps: RFC 3339 in UTC, microseconds when there are any (as XidEvent.at) ----

constexpr std::chrono::sys_days kFirstDay{std::chrono::year{0} / 1 / 1};
constexpr std::chrono::sys_days kLastDay{std::chrono::year{9999} / 12 / 31};

std::string format_time(Timestamp t, const std::string& path) {
  using namespace std::chrono;
  if (t < kFirstDay || t >= kLastDay + days{1}) fail(path, "must be within years 0000 to 9999");
  return format_wire_time(t);
}

std::optional<Timestamp> parse_time(std::string_view s) {
  return parse_wire_time(s);
}

Timestamp read_time(const json& value, const std::string& path) {
  const auto& text = read_string(value, path, kMaxQuote, false);
  auto t = parse_time(text);
  if (!t) {
    fail(path,
         "must be a UTC time like \"2026-07-03T22:10:46.123456Z\", not \"" + quote(text) + "\"");
  }
  return *t;
}

// ---- Objects ----

// The members every message has.
constexpr std::array<std::string_view, 3> kEnvelope{"type", "protocol_version", "id"};

// An object's members, checked against the names its reader knows (and, for a message, the
// envelope's) before any is read, so that a reader only handles names it knows.
class Members {
 public:
  Members(const json& value, std::string path, std::initializer_list<std::string_view> known,
          bool envelope = false)
      : value_(value), path_(std::move(path)) {
    if (!value.is_object()) fail(path_, "must be an object, not " + describe(value));
    for (const auto& [key, member] : value.items()) {
      bool is_known =
          std::find(known.begin(), known.end(), key) != known.end() ||
          (envelope && std::find(kEnvelope.begin(), kEnvelope.end(), key) != kEnvelope.end());
      if (!is_known) fail(member_path(path_, quote(key)), "unknown member");
    }
  }

  const json* find(std::string_view key) const {
    auto it = value_.find(key);
    return it == value_.end() ? nullptr : &*it;
  }
  const json& need(std::string_view key) const {
    if (const auto* v = find(key)) return *v;
    fail(at(key), "is required");
  }
  std::string at(std::string_view key) const { return member_path(path_, key); }

 private:
  const json& value_;
  std::string path_;
};

// ---- Bodies ----

GpuInventory read_inventory(const json& value, const std::string& path) {
  Members m(value, path, {"count", "model", "driver_version", "cuda_version"});
  GpuInventory inv;
  inv.count = static_cast<int>(read_integer(m.need("count"), m.at("count"), 1, kMaxGpus));
  inv.model = read_text(m.need("model"), m.at("model"), kMaxNameBytes, false);
  inv.driver_version = read_dotted_version(m.need("driver_version"), m.at("driver_version"));
  inv.cuda_version = read_dotted_version(m.need("cuda_version"), m.at("cuda_version"));
  return inv;
}

topology::Matrix read_topology(const json& value, const std::string& path, int gpu_count) {
  Members(value, path, {"gpus", "links"});  // matrix_from_json ignores unknown members
  topology::Matrix matrix;
  try {
    matrix = topology::matrix_from_json(value);
  } catch (const topology::ParseError& e) {
    fail(path, e.what());
  }
  if (matrix.gpus != gpu_count) {
    fail(member_path(path, "gpus"), "is " + std::to_string(matrix.gpus) +
                                        " but the inventory counts " + std::to_string(gpu_count) +
                                        " GPUs");
  }
  return matrix;
}

Body read_hello(const json& root, const std::string& path, int version) {
  Members m(root, path,
            {"agent_version", "hostname", "gpus", "topology", "ssh_host_keys", "ssh_probe_key",
             "recent_task_ids"},
            true);
  Hello h;
  h.agent_version = read_agent_version(m.need("agent_version"), m.at("agent_version"));
  h.hostname = read_hostname(m.need("hostname"), m.at("hostname"));
  h.gpus = read_inventory(m.need("gpus"), m.at("gpus"));
  h.topology = read_topology(m.need("topology"), m.at("topology"), h.gpus.count);
  if (version >= kSshHostKeysSince) {
    h.ssh_host_keys = read_set(m.need("ssh_host_keys"), m.at("ssh_host_keys"), kMaxSshHostKeys,
                               read_ssh_host_key);
  } else if (m.find("ssh_host_keys")) {
    fail(m.at("ssh_host_keys"), "is not part of protocol version " + std::to_string(version));
  }
  if (m.find("ssh_probe_key")) {
    if (version < kSshProbeKeySince) {
      fail(m.at("ssh_probe_key"), "is not part of protocol version " + std::to_string(version));
    }
    h.ssh_probe_key = read_ssh_probe_key(*m.find("ssh_probe_key"), m.at("ssh_probe_key"));
  }
  h.recent_task_ids =
      read_set(m.need("recent_task_ids"), m.at("recent_task_ids"), kMaxTaskIds, read_task_id);
  return h;
}

Body read_heartbeat(const json& root, const std::string& path, int) {
  Members m(root, path, {"sent_at", "gpus", "events", "running_task_ids"}, true);
  Heartbeat hb;
  hb.sent_at = read_time(m.need("sent_at"), m.at("sent_at"));
  hb.gpus = read_list(m.need("gpus"), m.at("gpus"), kMaxGpus, gpu_telemetry_from_json);
  std::unordered_set<int> indices;
  for (std::size_t i = 0; i < hb.gpus.size(); ++i) {
    if (!indices.insert(hb.gpus[i].index).second) {
      fail(member_path(item_path(m.at("gpus"), i), "index"),
           "GPU " + std::to_string(hb.gpus[i].index) + " is listed twice");
    }
  }
  hb.events =
      read_list(m.need("events"), m.at("events"), kMaxEventsPerHeartbeat, xid_event_from_json);
  hb.running_task_ids =
      read_set(m.need("running_task_ids"), m.at("running_task_ids"), kMaxTaskIds, read_task_id);
  return hb;
}

Body read_task(const json& root, const std::string& path, int version) {
  Members m(root, path, {"task_id", "kind", "rental_id", "payload", "deadline"}, true);
  Task t;
  t.task_id = read_task_id(m.need("task_id"), m.at("task_id"));
  const auto& kind = read_string(m.need("kind"), m.at("kind"), kMaxIdBytes, false);
  auto parsed = parse_task_kind(kind);
  if (!parsed) fail(m.at("kind"), "unknown task kind \"" + quote(kind) + "\"");
  t.kind = *parsed;
  if (!reads_task_kind(t.kind, version)) {
    fail(m.at("kind"),
         "\"" + kind + "\" is not part of protocol version " + std::to_string(version));
  }
  if (const auto* rental = m.find("rental_id")) {
    t.rental_id = read_typed_id(*rental, m.at("rental_id"), id_prefix::kRental);
  }
  t.payload = read_object_payload(m.need("payload"), m.at("payload"));
  t.deadline = read_time(m.need("deadline"), m.at("deadline"));
  return t;
}

Body read_task_progress(const json& root, const std::string& path, int) {
  Members m(root, path, {"task_id", "percent", "message"}, true);
  TaskProgress p;
  p.task_id = read_task_id(m.need("task_id"), m.at("task_id"));
  p.percent = static_cast<int>(read_integer(m.need("percent"), m.at("percent"), 0, 100));
  p.message = read_text(m.need("message"), m.at("message"), kMaxTextBytes, true);
  return p;
}

Body read_task_result(const json& root, const std::string& path, int) {
  Members m(root, path, {"task_id", "ok", "message", "result"}, true);
  TaskResult r;
  r.task_id = read_task_id(m.need("task_id"), m.at("task_id"));
  r.ok = read_bool(m.need("ok"), m.at("ok"));
  r.message = read_text(m.need("message"), m.at("message"), kMaxTextBytes, true);
  if (const auto* result = m.find("result")) {
    r.result = read_object_payload(*result, m.at("result"));
  }
  return r;
}

Body read_ack(const json& root, const std::string& path, int) {
  Members m(root, path, {"acked_id"}, true);
  return Ack{read_message_id(m.need("acked_id"), m.at("acked_id"))};
}

Body read_error(const json& root, const std::string& path, int) {
  Members m(root, path, {"code", "message", "offending_id"}, true);
  Error e;
  e.code = read_error_code(m.need("code"), m.at("code"));
  e.message = read_text(m.need("message"), m.at("message"), kMaxTextBytes, false);
  if (const auto* offending = m.find("offending_id")) {
    e.offending_id = read_message_id(*offending, m.at("offending_id"));
  }
  return e;
}

struct BodyType {
  std::string_view name;
  Body (*read)(const json& root, const std::string& path, int version);
};

// In Body's order, so that type_name can index it.
constexpr std::array<BodyType, std::variant_size_v<Body>> kBodyTypes{{
    {"hello", read_hello},
    {"heartbeat", read_heartbeat},
    {"task", read_task},
    {"task_progress", read_task_progress},
    {"task_result", read_task_result},
    {"ack", read_ack},
    {"error", read_error},
}};

const BodyType* find_type(std::string_view name) {
  for (const auto& type : kBodyTypes) {
    if (type.name == name) return &type;
  }
  return nullptr;
}

bool is_type_name(std::string_view name) {
  return find_type(name) != nullptr;
}

// ---- Writers: the members of each body; encode() adds the envelope ----

json write_body(const Hello& h, int version, const std::string& path) {
  json out = json::object();
  out["agent_version"] = h.agent_version;
  out["hostname"] = h.hostname;
  out["gpus"] = {{"count", h.gpus.count},
                 {"model", h.gpus.model},
                 {"driver_version", h.gpus.driver_version},
                 {"cuda_version", h.gpus.cuda_version}};
  out["topology"] = topology::to_json(h.topology);
  if (version >= kSshHostKeysSince) {
    out["ssh_host_keys"] = h.ssh_host_keys;
  } else if (!h.ssh_host_keys.empty()) {
    // Leaving them out would silently drop them.
    fail(member_path(path, "ssh_host_keys"),
         "is not part of protocol version " + std::to_string(version));
  }
  if (h.ssh_probe_key) {
    if (version < kSshProbeKeySince) {
      fail(member_path(path, "ssh_probe_key"),
           "is not part of protocol version " + std::to_string(version));
    }
    out["ssh_probe_key"] = *h.ssh_probe_key;
  }
  out["recent_task_ids"] = h.recent_task_ids;
  return out;
}

json write_body(const Heartbeat& hb, int, const std::string& path) {
  json out = json::object();
  out["sent_at"] = format_time(hb.sent_at, member_path(path, "sent_at"));
  out["gpus"] = json::array();
  for (const auto& gpu : hb.gpus) out["gpus"].push_back(to_json(gpu));
  out["events"] = json::array();
  for (const auto& event : hb.events) out["events"].push_back(to_json(event));
  out["running_task_ids"] = hb.running_task_ids;
  return out;
}

json write_body(const Task& t, int version, const std::string& path) {
  if (!reads_task_kind(t.kind, version)) {
    fail(member_path(path, "kind"), "\"" + std::string(to_string(t.kind)) +
                                        "\" is not part of protocol version " +
                                        std::to_string(version));
  }
  json out = json::object();
  out["task_id"] = t.task_id;
  out["kind"] = to_string(t.kind);
  if (t.rental_id) out["rental_id"] = *t.rental_id;
  check_finite(t.payload, member_path(path, "payload"));
  out["payload"] = t.payload;
  out["deadline"] = format_time(t.deadline, member_path(path, "deadline"));
  return out;
}

json write_body(const TaskProgress& p, int, const std::string&) {
  return {{"task_id", p.task_id}, {"percent", p.percent}, {"message", p.message}};
}

json write_body(const TaskResult& r, int, const std::string& path) {
  json out = {{"task_id", r.task_id}, {"ok", r.ok}, {"message", r.message}};
  if (r.result) {
    check_finite(*r.result, member_path(path, "result"));
    out["result"] = *r.result;
  }
  return out;
}

json write_body(const Ack& a, int, const std::string&) {
  return {{"acked_id", a.acked_id}};
}

json write_body(const Error& e, int, const std::string&) {
  json out = {{"code", e.code}, {"message", e.message}};
  if (e.offending_id) out["offending_id"] = *e.offending_id;
  return out;
}

// ---- The envelope ----

std::string version_refusal(int offered) {
  auto range = "this side reads versions " + std::to_string(kOldestAcceptedVersion) + " to " +
               std::to_string(kProtocolVersion);
  if (offered > kProtocolVersion) {
    return "protocol version " + std::to_string(offered) + " is newer than " + range +
           "; the control plane is upgraded before its agents";
  }
  return "protocol version " + std::to_string(offered) + " is no longer accepted; " + range +
         "; upgrade the agent";
}

int read_protocol_version(const json& root, const std::string& path) {
  auto at = member_path(path, "protocol_version");
  auto it = root.find("protocol_version");
  if (it == root.end()) fail(at, "is required");
  if (!it->is_number_integer()) fail(at, "must be an integer, not " + describe(*it));
  bool fits = it->is_number_unsigned()
                  ? it->get<std::uint64_t>() <= std::uint64_t(std::numeric_limits<int>::max())
                  : it->get<std::int64_t>() >= std::numeric_limits<int>::min() &&
                        it->get<std::int64_t>() <= std::numeric_limits<int>::max();
  if (!fits) fail(at, "is not a protocol version");
  auto version = it->get<int>();
  if (!negotiate(version)) throw UnsupportedVersion(at, version);
  return version;
}

// The type's name when the message names one as a string; its validity is checked after the
// version, so that a newer agent's new type reads as a version problem.
std::string read_type_name(const json& root) {
  auto at = member_path(std::string(kMessagePath), "type");
  auto it = root.find("type");
  if (it == root.end()) fail(at, "is required");
  return read_string(*it, at, kMaxIdBytes, false);
}

}  // namespace

UnsupportedVersion::UnsupportedVersion(std::string path, int offered)
    : ProtocolError(std::move(path), version_refusal(offered)), offered_(offered) {}

std::string_view to_string(TaskKind kind) {
  return kTaskKindNames[static_cast<std::size_t>(kind)];
}

std::optional<TaskKind> parse_task_kind(std::string_view name) {
  for (std::size_t i = 0; i < kTaskKindNames.size(); ++i) {
    if (kTaskKindNames[i] == name) return static_cast<TaskKind>(i);
  }
  return std::nullopt;
}

std::string_view type_name(const Body& body) {
  return kBodyTypes[body.index()].name;
}

std::string encode(const Message& message) {
  std::string path(type_name(message.body));
  json out =
      std::visit([&](const auto& body) { return write_body(body, message.protocol_version, path); },
                 message.body);
  out["type"] = path;
  out["protocol_version"] = message.protocol_version;
  out["id"] = message.id;
  std::string text;
  try {
    text = out.dump();
  } catch (const json::exception&) {
    fail(path, "holds a string that is not valid UTF-8");
  }
  if (text.size() > kMaxMessageBytes) {
    fail(path, "encodes to " + std::to_string(text.size()) + " bytes; at most " +
                   std::to_string(kMaxMessageBytes) + " fit in a message");
  }
  // The receiver's own check, here: whatever this side writes, the other side reads.
  decode(text);
  return text;
}

Message decode(std::string_view text) {
  json root = parse(text);
  if (!root.is_object()) refuse_text("must be a JSON object, not " + describe(root));
  auto name = read_type_name(root);
  const BodyType* type = find_type(name);
  auto path = type ? name : std::string(kMessagePath);
  int version = read_protocol_version(root, path);
  if (!type) fail(member_path(path, "type"), "unknown message type \"" + quote(name) + "\"");
  Message message;
  message.protocol_version = version;
  message.body = type->read(root, path, version);
  auto id = root.find("id");
  if (id == root.end()) fail(member_path(path, "id"), "is required");
  message.id = read_message_id(*id, member_path(path, "id"));
  return message;
}

bool valid_ssh_host_key(std::string_view line) {
  try {
    read_ssh_host_key(json(std::string(line)), "ssh_host_keys[0]");
    return true;
  } catch (const ProtocolError&) {
    return false;
  }
}

}  // namespace gpurent::agent_proto
