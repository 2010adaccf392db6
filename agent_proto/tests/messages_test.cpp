// Tests the agent protocol messages: every type's round trip and wire form, version
// negotiation, and a table of malformed and hostile inputs, each refused with a
// ProtocolError that names the offending member.
#include "agent_proto/messages.h"
#include "agent_proto/wire_time.h"

#include "tests/support/paths.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cctype>
#include <chrono>
#include <climits>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <set>
#include <string>
#include <vector>

namespace gpurent::agent_proto {

void PrintTo(const Message& message, std::ostream* os) {
  *os << encode(message);
}

namespace messages_test {

using nlohmann::json;
using ::testing::HasSubstr;

// ---- Samples ----

const std::string kTaskA = "tsk_0123456789abcdefghijkl";
const std::string kTaskB = "tsk_ABCDEFGHIJKLMNOPQRSTUV";
const std::string kRental = "rnt_0123456789abcdefghijkl";
const std::string kHostKey =
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBPat5FwK6Ik5M6U7QJJmH2Z+lTK7r8CsLIcDY6anbov "
    "root@gpu-node-17";
const std::string kProbeKey =
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl "
    "gpurent-probe";

Timestamp at(int hour, int minute, int second, int micros = 0) {
  using namespace std::chrono;
  return Timestamp(sys_days(year(2026) / 7 / 3).time_since_epoch() + hours(hour) + minutes(minute) +
                   seconds(second) + microseconds(micros));
}

// A distinct, well-formed task id for each n.
std::string task_id(std::size_t n) {
  static constexpr std::string_view kDigits =
      "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
  std::string id = "tsk_";
  for (int i = 0; i < 22; ++i) {
    id += kDigits[n % 62];
    n /= 62;
  }
  return id;
}

Hello sample_hello() {
  Hello h;
  h.agent_version = "0.9.1-3-gabc123";
  h.hostname = "gpu-node-17.fra1.example.net";
  h.gpus = {8, "NVIDIA H100 80GB HBM3", "550.54.15", "12.4"};
  h.topology = topology::declared_matrix(topology::Interconnect::kNvswitch, 8, "NV18");
  h.ssh_host_keys = {kHostKey};
  h.ssh_probe_key = kProbeKey;
  h.recent_task_ids = {kTaskA, kTaskB};
  return h;
}

GpuTelemetry sample_gpu(int index) {
  GpuTelemetry g;
  g.index = index;
  g.uuid = "GPU-6f0e3c2a-1b2c-4d5e-8f90-0123456789ab";
  g.name = "NVIDIA H100 80GB HBM3";
  g.pci_bus_id = "00000000:18:00.0";
  g.temperature_c = 41.5;
  g.power_w = 117.25;
  g.power_limit_w = 700;
  g.utilization_pct = 97;
  g.memory_used_mib = 70123;
  g.memory_total_mib = 81559;
  g.ecc_volatile_dbe = 0;
  g.remapped_rows_pending = false;
  g.throttle_reasons = {"sw_power_cap"};
  g.nvlink_crc_errors = 3;
  return g;
}

XidEvent sample_event() {
  XidEvent e;
  e.pci = "0000:18:00";
  e.xid = 79;
  e.pid = 4242;
  e.process = "python3";
  e.message = "GPU has fallen off the bus.";
  e.at = at(22, 10, 46, 123456);
  return e;
}

Heartbeat sample_heartbeat() {
  Heartbeat hb;
  hb.sent_at = at(22, 10, 50, 5);
  hb.gpus = {sample_gpu(0), sample_gpu(1)};
  hb.events = {sample_event()};
  hb.running_task_ids = {kTaskA};
  return hb;
}

Task sample_task() {
  Task t;
  t.task_id = kTaskA;
  t.kind = TaskKind::kInstallAccess;
  t.rental_id = kRental;
  t.payload = {{"principal", "rnt-0123"}, {"keys", {"ssh-ed25519 AAAA"}}, {"ttl_s", 86400}};
  t.deadline = at(23, 0, 0);
  return t;
}

TaskResult sample_result() {
  return {kTaskA, true, "access installed", json{{"authorized_keys", 2}, {"ratio", 0.5}}};
}

Message message(Body body, std::string id = "m-1", int version = kProtocolVersion) {
  return Message{std::move(id), version, std::move(body)};
}

// One valid message of every type, with every optional member present.
std::vector<Message> full_samples() {
  return {message(sample_hello()),
          message(sample_heartbeat()),
          message(sample_task()),
          message(TaskProgress{kTaskA, 40, "pulling image: 4.1 of 9.8 GiB"}),
          message(sample_result()),
          message(Ack{"m-0"}),
          message(Error{"unknown_task", "no task tsk_... on this node", "m-0"})};
}

// A valid message of `type` as JSON, to break one member at a time.
json valid(std::string_view type) {
  for (const auto& m : full_samples()) {
    if (type_name(m.body) == type) return json::parse(encode(m));
  }
  ADD_FAILURE() << "no sample of type " << type;
  return {};
}

// The valid message of `type` with the member at `pointer` set to `value` ("/gpus/count").
std::string with(std::string_view type, const std::string& pointer, const json& value) {
  auto j = valid(type);
  j[json::json_pointer(pointer)] = value;
  return j.dump();
}

std::string without(std::string_view type, const std::string& pointer) {
  auto j = valid(type);
  auto ptr = json::json_pointer(pointer);
  j[ptr.parent_pointer()].erase(ptr.back());
  return j.dump();
}

// The valid message's text with the first `from` replaced by `to`: for what a JSON value
// cannot hold (raw bytes, duplicate keys, number spellings).
std::string replaced(std::string_view type, const std::string& from, const std::string& to) {
  auto text = valid(type).dump();
  auto pos = text.find(from);
  EXPECT_NE(pos, std::string::npos) << from << " not in " << text;
  if (pos != std::string::npos) text.replace(pos, from.size(), to);
  return text;
}

// {"a":{"a":…1…}}: an object `levels` deep.
json nested(int levels) {
  json j = 1;
  for (int i = 0; i < levels; ++i) j = json{{"a", j}};
  return j;
}

json task_ids(std::size_t n) {
  json out = json::array();
  for (std::size_t i = 0; i < n; ++i) out.push_back(task_id(i));
  return out;
}

json repeated(std::size_t n, const json& item) {
  return json(std::vector<json>(n, item));
}

ProtocolError refusal(const std::string& text) {
  try {
    decode(text);
  } catch (const ProtocolError& e) {
    return e;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "not a ProtocolError: " << e.what();
    return ProtocolError("?", "?");
  }
  ADD_FAILURE() << "accepted: " << text.substr(0, 300);
  return ProtocolError("?", "?");
}

bool printable_ascii(std::string_view s) {
  for (unsigned char c : s) {
    if (c < 0x20 || c > 0x7e) return false;
  }
  return true;
}

// ---- Round trips and wire form ----

TEST(MessagesTest, EveryTypeRoundTrips) {
  for (const auto& m : full_samples()) {
    SCOPED_TRACE(std::string(type_name(m.body)));
    auto text = encode(m);
    EXPECT_EQ(decode(text), m);
    EXPECT_EQ(json::parse(text)["type"], type_name(m.body));
  }
}

TEST(MessagesTest, AbsentOptionalsAndEmptyListsRoundTrip) {
  Hello h = sample_hello();
  h.gpus.count = 1;
  h.topology = topology::declared_matrix(topology::Interconnect::kPcie, 1, "");
  h.ssh_host_keys.clear();
  h.ssh_probe_key.reset();
  h.recent_task_ids.clear();
  Heartbeat hb{at(0, 0, 0), {}, {}, {}};
  Task t = sample_task();
  t.rental_id.reset();
  t.payload = json::object();
  TaskResult r{kTaskB, false, "", std::nullopt};
  Error e{"malformed_message", "x", std::nullopt};
  for (const auto& m : {message(h), message(hb), message(t), message(r), message(e)}) {
    SCOPED_TRACE(std::string(type_name(m.body)));
    EXPECT_EQ(decode(encode(m)), m);
  }
  EXPECT_FALSE(json::parse(encode(message(t))).contains("rental_id"));
  EXPECT_FALSE(json::parse(encode(message(r))).contains("result"));
  EXPECT_FALSE(json::parse(encode(message(e))).contains("offending_id"));
  EXPECT_FALSE(json::parse(encode(message(h))).contains("ssh_probe_key"));
}

TEST(MessagesTest, WireFormIsCompactJsonWithTheEnvelope) {
  EXPECT_EQ(encode(message(Ack{"m-1"}, "m-2")),
            R"({"acked_id":"m-1","id":"m-2","protocol_version":4,"type":"ack"})");
  EXPECT_EQ(encode(message(TaskProgress{kTaskA, 0, ""}, "7")),
            R"({"id":"7","message":"","percent":0,"protocol_version":4,"task_id":")" + kTaskA +
                R"(","type":"task_progress"})");
}

// Notice and reboot tasks came with version 4: a version 3 agent is never sent one, and a
// version 3 message carrying one is refused either way.
TEST(MessagesTest, NoticeAndRebootTasksAreNotPartOfVersion3) {
  for (auto kind : {TaskKind::kNotice, TaskKind::kReboot}) {
    EXPECT_FALSE(reads_task_kind(kind, 3));
    EXPECT_TRUE(reads_task_kind(kind, 4));
    Task t = sample_task();
    t.kind = kind;
    EXPECT_THROW(encode(message(t, "m-1", 3)), ProtocolError);
    auto text = encode(message(t));
    auto old = json::parse(text);
    old["protocol_version"] = 3;
    try {
      decode(old.dump());
      ADD_FAILURE() << "accepted " << old.dump();
    } catch (const ProtocolError& e) {
      EXPECT_EQ(e.path(), "task.kind") << e.what();
      EXPECT_THAT(e.what(), HasSubstr("not part of protocol version 3"));
    }
  }
  EXPECT_TRUE(reads_task_kind(TaskKind::kProvision, 3));
  EXPECT_TRUE(reads_task_kind(TaskKind::kBurnIn, 3));
}

TEST(MessagesTest, EveryTaskKindRoundTrips) {
  for (auto name : kTaskKindNames) {
    auto kind = parse_task_kind(name);
    ASSERT_TRUE(kind) << name;
    EXPECT_EQ(to_string(*kind), name);
    Task t = sample_task();
    t.kind = *kind;
    EXPECT_EQ(decode(encode(message(t))), message(t));
  }
  EXPECT_FALSE(parse_task_kind("power_cycle"));
  EXPECT_FALSE(parse_task_kind("Provision"));
}

TEST(MessagesTest, TimesKeepMicrosecondsAndLeaveOutZeroFractions) {
  Heartbeat hb = sample_heartbeat();
  hb.sent_at = at(22, 10, 50);
  EXPECT_EQ(json::parse(encode(message(hb)))["sent_at"], "2026-07-03T22:10:50Z");
  hb.sent_at = at(22, 10, 50, 5);
  EXPECT_EQ(json::parse(encode(message(hb)))["sent_at"], "2026-07-03T22:10:50.000005Z");
  auto text = with("heartbeat", "/sent_at", "2026-07-03T22:10:50.5Z");
  EXPECT_EQ(std::get<Heartbeat>(decode(text).body).sent_at, at(22, 10, 50, 500000));
}

// The wire's one form of time: what format_wire_time writes, read back; RFC 3339's other
// spellings (an offset, a lower-case 't' or 'z', nanoseconds) and impossible dates refused.
TEST(MessagesTest, OnlyTheWiresOwnFormOfTimeIsRead) {
  for (Timestamp t : {at(0, 0, 0), at(22, 10, 50), at(22, 10, 50, 5), at(23, 59, 59, 999999)}) {
    EXPECT_EQ(parse_wire_time(format_wire_time(t)), t) << format_wire_time(t);
  }
  EXPECT_EQ(parse_wire_time("2026-07-03T22:10:50.5Z"), at(22, 10, 50, 500000));
  for (const char* refused :
       {"2026-07-03T22:10:50+00:00", "2026-07-03t22:10:50Z", "2026-07-03T22:10:50z",
        "2026-07-03T22:10:50.1234567Z", "2026-07-03T22:10:50.Z", "2026-07-03T22:10:50",
        "2026-02-30T22:10:50Z", "2026-07-03T24:00:00Z", "2026-07-03 22:10:50Z", ""}) {
    EXPECT_EQ(parse_wire_time(refused), std::nullopt) << refused;
  }
}

TEST(MessagesTest, KindSpecificObjectsKeepTheirContent) {
  Task t = sample_task();
  t.payload = {{"nested", {{"list", {1, -2.5, "three", nullptr, true}}}},
               {"big", 18446744073709551615ull},
               {"neg_zero", -0.0},
               {"text", std::string("line 1\nline 2\t\x01")}};
  EXPECT_EQ(std::get<Task>(decode(encode(message(t))).body).payload, t.payload);
}

TEST(MessagesTest, MinusZeroIsZeroWhereAnIntegerIsExpected) {
  // JSON has no negative integer zero: "-0" is the number 0 and is read as such; "-0.0"
  // is a fraction and is refused where an integer is expected (see the refusal table).
  auto text = replaced("task_progress", R"("percent":40)", R"("percent":-0)");
  EXPECT_EQ(std::get<TaskProgress>(decode(text).body).percent, 0);
}

TEST(MessagesTest, TheNestingLimitCountsEveryLevel) {
  // The message is level 1 and the payload level 2.
  EXPECT_NO_THROW(decode(with("task", "/payload", nested(kMaxNestingDepth - 1))));
  auto e = refusal(with("task", "/payload", nested(kMaxNestingDepth)));
  EXPECT_EQ(e.path(), "message");
  EXPECT_THAT(e.what(), HasSubstr("deeper than 32"));
}

TEST(MessagesTest, TheSizeLimitIsInclusive) {
  auto text = valid("ack").dump();
  text.insert(1, kMaxMessageBytes - text.size(), ' ');
  ASSERT_EQ(text.size(), kMaxMessageBytes);
  EXPECT_NO_THROW(decode(text));
  EXPECT_EQ(refusal(" " + text).path(), "message");
}

// ---- Versions ----

TEST(MessagesTest, NegotiationAcceptsTheCurrentAndThePreviousVersion) {
  struct Row {
    int offered;
    std::optional<int> accepted;
  };
  for (auto [offered, accepted] : {Row{INT_MIN, std::nullopt}, Row{-1, std::nullopt},
                                   Row{0, std::nullopt}, Row{2, std::nullopt}, Row{3, 3}, Row{4, 4},
                                   Row{5, std::nullopt}, Row{INT_MAX, std::nullopt}}) {
    EXPECT_EQ(negotiate(offered), accepted) << offered;
  }
  static_assert(negotiate(kProtocolVersion) == kProtocolVersion);
  static_assert(negotiate(kOldestAcceptedVersion) == kOldestAcceptedVersion);
  static_assert(kProtocolVersion - kOldestAcceptedVersion == 1);
}

TEST(MessagesTest, EveryTypeIsReadAtEveryAcceptedVersion) {
  for (int version = kOldestAcceptedVersion; version <= kProtocolVersion; ++version) {
    for (auto m : full_samples()) {
      SCOPED_TRACE(std::string(type_name(m.body)) + " v" + std::to_string(version));
      m.protocol_version = version;
      if (auto* h = std::get_if<Hello>(&m.body); h && version < kSshHostKeysSince) {
        h->ssh_host_keys.clear();
      }
      if (auto* h = std::get_if<Hello>(&m.body); h && version < kSshProbeKeySince) {
        h->ssh_probe_key.reset();
      }
      EXPECT_EQ(decode(encode(m)), m);
    }
  }
}

TEST(MessagesTest, AVersionOutsideTheRangeIsRefusedWithTheReason) {
  struct Row {
    int version;
    const char* reason;
  };
  for (auto [version, reason] :
       {Row{2, "no longer accepted"}, Row{1, "no longer accepted"}, Row{0, "no longer accepted"},
        Row{-7, "no longer accepted"}, Row{5, "newer than"}, Row{INT_MAX, "newer than"}}) {
    SCOPED_TRACE(version);
    try {
      decode(with("heartbeat", "/protocol_version", version));
      ADD_FAILURE() << "accepted";
    } catch (const UnsupportedVersion& e) {
      EXPECT_EQ(e.offered(), version);
      EXPECT_EQ(e.path(), "heartbeat.protocol_version");
      EXPECT_THAT(e.what(), HasSubstr(reason));
      EXPECT_THAT(e.what(), HasSubstr("versions 3 to 4"));
    }
  }
  EXPECT_THROW(encode(message(Ack{"m-0"}, "m-1", 5)), UnsupportedVersion);
  EXPECT_THROW(encode(message(Ack{"m-0"}, "m-1", 1)), UnsupportedVersion);
}

TEST(MessagesTest, AnUnknownTypeOfAnUnacceptedVersionIsAVersionProblem) {
  // A newer agent's new message type says what is really wrong: the version.
  EXPECT_THROW(decode(R"({"type":"telemetry_v5","protocol_version":5,"id":"1"})"),
               UnsupportedVersion);
}

TEST(MessagesTest, TheSshProbeKeyIsOptionalInEveryAcceptedVersion) {
  // Version 2, which could not carry it, is no longer accepted at all.
  auto v2 = message(sample_hello(), "m-1", 2);
  std::get<Hello>(v2.body).ssh_probe_key.reset();
  EXPECT_THROW(encode(v2), UnsupportedVersion);
  // Optional in version 3: a hello without it (an agent with no sshd to probe) is read.
  auto v3 = message(sample_hello());
  std::get<Hello>(v3.body).ssh_probe_key.reset();
  EXPECT_EQ(decode(encode(v3)), v3);
  std::get<Hello>(v3.body).ssh_probe_key = kProbeKey;
  auto wire = json::parse(encode(v3));
  EXPECT_EQ(wire["ssh_probe_key"], kProbeKey);
  EXPECT_EQ(decode(wire.dump()), v3);

  // Ed25519 only, at the sender too: the agent makes the key so.
  std::get<Hello>(v3.body).ssh_probe_key = "ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTY=";
  try {
    encode(v3);
    ADD_FAILURE() << "encoded";
  } catch (const ProtocolError& e) {
    EXPECT_EQ(e.path(), "hello.ssh_probe_key");
    EXPECT_THAT(e.what(), HasSubstr("ssh-ed25519"));
  }
}

// ---- What the sender is refused ----

TEST(MessagesTest, EncodeRefusesWhatDecodeWouldRefuse) {
  struct Row {
    const char* name;
    Message message;
    std::string path;
  };
  Task far = sample_task();
  far.deadline =
      Timestamp(std::chrono::sys_days(std::chrono::year(10000) / 1 / 1).time_since_epoch());
  Heartbeat twice = sample_heartbeat();
  twice.gpus[1].index = 0;
  Task infinite = sample_task();
  infinite.payload["ttl_s"] = std::numeric_limits<double>::infinity();
  TaskResult nan = sample_result();
  (*nan.result)["ratio"] = std::numeric_limits<double>::quiet_NaN();
  Hello mismatch = sample_hello();
  mismatch.gpus.count = 4;
  std::vector<Row> rows = {
      {"percent out of range", message(TaskProgress{kTaskA, 101, ""}), "task_progress.percent"},
      {"invalid UTF-8", message(TaskProgress{kTaskA, 1, "\xff"}), "task_progress"},
      {"control character", message(TaskProgress{kTaskA, 1, "a\nb"}), "task_progress.message"},
      {"empty message id", message(Ack{"m-0"}, ""), "ack.id"},
      {"malformed task id", message(TaskProgress{"42", 1, ""}), "task_progress.task_id"},
      {"year 10000", message(far), "task.deadline"},
      {"duplicate GPU", message(twice), "heartbeat.gpus[1].index"},
      {"topology mismatch", message(mismatch), "hello.topology.gpus"},
      // Written as null, they would change meaning on the way.
      {"infinite payload number", message(infinite), "task.payload.ttl_s"},
      {"NaN in a result", message(nan), "task_result.result.ratio"},
      {"payload not an object", message(Task{kTaskA, TaskKind::kWipe, {}, json::array(), {}}),
       "task.payload"},
  };
  for (const auto& row : rows) {
    SCOPED_TRACE(row.name);
    try {
      encode(row.message);
      ADD_FAILURE() << "encoded";
    } catch (const ProtocolError& e) {
      EXPECT_EQ(e.path(), row.path) << e.what();
    }
  }
}

TEST(MessagesTest, AHeartbeatTooBigForOneMessageIsRefusedAtTheSender) {
  // Every list within its limit, the whole over 256 KiB: the agent keeps the rest of the
  // events for the next heartbeat.
  Heartbeat hb = sample_heartbeat();
  hb.gpus.clear();
  for (int i = 0; i < kMaxGpus; ++i) {
    auto g = sample_gpu(i);
    g.uuid = g.name = g.pci_bus_id = std::string(128, 'g');
    hb.gpus.push_back(g);
  }
  XidEvent e = sample_event();
  e.message = std::string(512, 'm');
  e.process = e.pci = std::string(128, 'p');
  hb.events.assign(kMaxEventsPerHeartbeat, e);
  for (const auto& id : task_ids(kMaxTaskIds)) hb.running_task_ids.push_back(id);
  try {
    encode(message(hb));
    ADD_FAILURE() << "encoded";
  } catch (const ProtocolError& err) {
    EXPECT_EQ(err.path(), "heartbeat");
    EXPECT_THAT(err.what(), HasSubstr("at most 262144"));
  }
}

// ---- What the receiver refuses ----

struct Refused {
  std::string name;
  std::string text;
  std::string path;
  std::string reason;  // a part of what()
};

void PrintTo(const Refused& r, std::ostream* os) {
  *os << r.name;
}

std::vector<Refused> refusals() {
  const std::string ack = valid("ack").dump();
  return {
      // Not a message at all.
      {"empty", "", "message", "not valid JSON"},
      {"truncated", ack.substr(0, ack.size() - 1), "message", "not valid JSON"},
      {"trailing data", ack + " {}", "message", "not valid JSON"},
      {"comment", R"({"type":"ack" /* hi */})", "message", "not valid JSON"},
      {"array", "[]", "message", "must be a JSON object, not an array"},
      {"string", R"("ack")", "message", "must be a JSON object, not a string"},
      {"null", "null", "message", "must be a JSON object"},
      {"oversized", ack + std::string(kMaxMessageBytes, ' '), "message", "262144"},
      {"deep arrays", std::string(100000, '['), "message", "deeper than 32"},
      {"deep objects", with("task", "/payload", nested(200)), "message", "deeper than 32"},
      // Bytes the JSON grammar refuses.
      {"invalid UTF-8", replaced("ack", "m-0", "m\xff"), "message", "UTF-8"},
      {"overlong UTF-8", replaced("task_progress", "pulling", "\xc0\xaf"), "message", "UTF-8"},
      {"UTF-8 surrogate", replaced("task_progress", "pulling", "\xed\xa0\x80"), "message", "UTF-8"},
      {"lone surrogate escape", replaced("task_progress", "pulling", R"(\ud800)"), "message",
       "surrogate"},
      {"raw NUL in a string", replaced("task_progress", "pulling", std::string("a\0b", 3)),
       "message", "NUL"},
      {"byte order mark", "\xEF\xBB\xBF" + ack, "message", "byte order mark"},
      {"raw NUL after the object", ack + std::string(1, '\0'), "message", "NUL"},
      {"raw NUL before trailing data", ack + std::string(1, '\0') + "{", "message", "NUL"},
      // The envelope.
      {"type missing", without("ack", "/type"), "message.type", "is required"},
      {"type not a string", with("ack", "/type", 7), "message.type", "must be a string"},
      {"unknown type", with("ack", "/type", "reboot"), "message.type",
       "unknown message type \"reboot\""},
      {"version missing", without("ack", "/protocol_version"), "ack.protocol_version",
       "is required"},
      {"version a string", with("ack", "/protocol_version", "2"), "ack.protocol_version",
       "must be an integer"},
      {"version 2.0", with("ack", "/protocol_version", 2.0), "ack.protocol_version",
       "must be an integer"},
      {"version 1e300", replaced("ack", R"("protocol_version":4)", R"("protocol_version":1e300)"),
       "ack.protocol_version", "must be an integer"},
      {"version -0", replaced("ack", R"("protocol_version":4)", R"("protocol_version":-0)"),
       "ack.protocol_version", "version 0 is no longer accepted"},
      {"version 2^63", with("ack", "/protocol_version", 9223372036854775808ull),
       "ack.protocol_version", "is not a protocol version"},
      {"version 2^31", with("ack", "/protocol_version", 2147483648ll), "ack.protocol_version",
       "is not a protocol version"},
      {"version -2^31-1", with("ack", "/protocol_version", -2147483649ll), "ack.protocol_version",
       "is not a protocol version"},
      {"version 2^64",
       replaced("ack", R"("protocol_version":4)", R"("protocol_version":18446744073709551616)"),
       "ack.protocol_version", "must be an integer"},
      {"id missing", without("ack", "/id"), "ack.id", "is required"},
      {"id empty", with("ack", "/id", ""), "ack.id", "must not be empty"},
      {"id too long", with("ack", "/id", std::string(65, 'a')), "ack.id", "at most 64 bytes"},
      {"id with a space", with("ack", "/id", "m 1"), "ack.id", "an id of letters"},
      {"id escaped NUL", replaced("ack", R"("id":"m-1")", R"("id":"m\u00001")"), "ack.id",
       "an id of letters"},
      {"unknown member", with("ack", "/extra", 1), "ack.extra", "unknown member"},
      {"unknown member of an old type", with("ack", "/ssh_host_keys", 1), "ack.ssh_host_keys",
       "unknown member"},
      // Duplicate members, wherever they are.
      {"duplicate id", replaced("ack", R"("id":"m-1")", R"("id":"m-1","id":"m-2")"), "ack.id",
       "appears twice"},
      {"duplicate type", replaced("ack", R"("type":"ack")", R"("type":"ack","type":"ack")"),
       "ack.type", "appears twice"},
      {"duplicate in telemetry", replaced("heartbeat", R"("index":1)", R"("index":1,"index":2)"),
       "heartbeat.gpus[1].index", "appears twice"},
      // hello.
      {"hostname a number", with("hello", "/hostname", 5), "hello.hostname",
       "must be a string, not a number"},
      {"hostname label starts with -", with("hello", "/hostname", "-node.example"),
       "hello.hostname", "RFC 1123"},
      {"hostname empty label", with("hello", "/hostname", "node..example"), "hello.hostname",
       "RFC 1123"},
      {"hostname too long", with("hello", "/hostname", std::string(254, 'a')), "hello.hostname",
       "at most 253"},
      {"hostname with NUL", with("hello", "/hostname", std::string("node\0x", 6)), "hello.hostname",
       "a host name"},
      {"agent version with a space", with("hello", "/agent_version", "0.9 beta"),
       "hello.agent_version", "a version"},
      {"inventory not an object", with("hello", "/gpus", json::array()), "hello.gpus",
       "must be an object, not an array"},
      {"inventory unknown member", with("hello", "/gpus/vendor", "nvidia"), "hello.gpus.vendor",
       "unknown member"},
      {"GPU count a string", with("hello", "/gpus/count", "8"), "hello.gpus.count",
       "must be an integer"},
      {"GPU count 0", with("hello", "/gpus/count", 0), "hello.gpus.count", "from 1 to 64"},
      {"GPU count 65", with("hello", "/gpus/count", 65), "hello.gpus.count", "from 1 to 64"},
      {"GPU count beside the matrix", with("hello", "/gpus/count", 4), "hello.topology.gpus",
       "inventory counts 4"},
      {"model missing", without("hello", "/gpus/model"), "hello.gpus.model", "is required"},
      {"model too long", with("hello", "/gpus/model", std::string(129, 'x')), "hello.gpus.model",
       "at most 128 bytes"},
      {"model with an escape", with("hello", "/gpus/model", "\x1b[31mH100"), "hello.gpus.model",
       "control"},
      {"driver version not dotted", with("hello", "/gpus/driver_version", "550..54"),
       "hello.gpus.driver_version", "a version like"},
      {"CUDA version N/A", with("hello", "/gpus/cuda_version", "N/A"), "hello.gpus.cuda_version",
       "a version like"},
      {"topology missing", without("hello", "/topology"), "hello.topology", "is required"},
      {"topology unknown member", with("hello", "/topology/source", "smi"), "hello.topology.source",
       "unknown member"},
      {"topology not symmetric", with("hello", "/topology/links/0/1", "SYS"), "hello.topology",
       "not symmetric"},
      {"topology bad cell", with("hello", "/topology/links/0/1", 5), "hello.topology",
       "must be a string"},
      {"host key of an unknown algorithm", with("hello", "/ssh_host_keys/0", "ssh-dss AAAA"),
       "hello.ssh_host_keys[0]", "OpenSSH public key"},
      {"host key not base64", with("hello", "/ssh_host_keys/0", "ssh-ed25519 AA*A"),
       "hello.ssh_host_keys[0]", "base64"},
      {"host key twice", with("hello", "/ssh_host_keys/1", kHostKey), "hello.ssh_host_keys[1]",
       "listed twice"},
      {"too many host keys", with("hello", "/ssh_host_keys", repeated(9, kHostKey)),
       "hello.ssh_host_keys", "at most 8"},
      {"host key too long", with("hello", "/ssh_host_keys/0", "ssh-rsa " + std::string(4096, 'A')),
       "hello.ssh_host_keys[0]", "at most 4096"},
      {"host keys missing at version 2", without("hello", "/ssh_host_keys"), "hello.ssh_host_keys",
       "is required"},
      {"probe key not ed25519",
       with("hello", "/ssh_probe_key", "ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTY="),
       "hello.ssh_probe_key", "must be an ssh-ed25519 public key line"},
      {"probe key not base64", with("hello", "/ssh_probe_key", "ssh-ed25519 AA*A"),
       "hello.ssh_probe_key", "base64"},
      {"probe key a list", with("hello", "/ssh_probe_key", json::array({kProbeKey})),
       "hello.ssh_probe_key", "must be a string"},

      {"recent task id malformed", with("hello", "/recent_task_ids/0", "task-1"),
       "hello.recent_task_ids[0]", "an id like \"tsk_...\""},
      {"recent task id twice", with("hello", "/recent_task_ids/1", kTaskA),
       "hello.recent_task_ids[1]", "listed twice"},
      {"too many recent task ids", with("hello", "/recent_task_ids", task_ids(257)),
       "hello.recent_task_ids", "at most 256"},
      // heartbeat.
      {"sent_at not a time", with("heartbeat", "/sent_at", "yesterday"), "heartbeat.sent_at",
       "UTC time"},
      {"sent_at 30 February", with("heartbeat", "/sent_at", "2026-02-30T00:00:00Z"),
       "heartbeat.sent_at", "UTC time"},
      {"sent_at with an offset", with("heartbeat", "/sent_at", "2026-07-03T22:10:46+02:00"),
       "heartbeat.sent_at", "UTC time"},
      {"sent_at a number", with("heartbeat", "/sent_at", 1783116646), "heartbeat.sent_at",
       "must be a string"},
      {"gpus an object", with("heartbeat", "/gpus", json::object()), "heartbeat.gpus",
       "must be an array"},
      {"65 GPUs", with("heartbeat", "/gpus", repeated(65, {{"index", 0}})), "heartbeat.gpus",
       "at most 64"},
      {"GPU index twice", with("heartbeat", "/gpus/1/index", 0), "heartbeat.gpus[1].index",
       "listed twice"},
      {"GPU unknown member", with("heartbeat", "/gpus/1/fan_pct", 30), "heartbeat.gpus[1].fan_pct",
       "unknown member"},
      {"GPU temperature 1e300", with("heartbeat", "/gpus/0/temperature_c", 1e300),
       "heartbeat.gpus[0].temperature_c", ""},
      {"GPU a string", with("heartbeat", "/gpus/0", "GPU0"), "heartbeat.gpus[0]", ""},
      {"257 events",
       with("heartbeat", "/events",
            repeated(257, {{"pci", "0000:18:00"}, {"xid", 79}, {"message", ""}})),
       "heartbeat.events", "at most 256"},
      {"event without xid", without("heartbeat", "/events/0/xid"), "heartbeat.events[0].xid", ""},
      {"running task twice", with("heartbeat", "/running_task_ids/1", kTaskA),
       "heartbeat.running_task_ids[1]", "listed twice"},
      {"too many running tasks", with("heartbeat", "/running_task_ids", task_ids(257)),
       "heartbeat.running_task_ids", "at most 256"},
      // task.
      {"task id missing", without("task", "/task_id"), "task.task_id", "is required"},
      {"task id of a rental", with("task", "/task_id", kRental), "task.task_id",
       "an id like \"tsk_...\""},
      {"unknown kind", with("task", "/kind", "power_cycle"), "task.kind",
       "unknown task kind \"power_cycle\""},
      {"kind in capitals", with("task", "/kind", "WIPE"), "task.kind", "unknown task kind"},
      {"rental id null", with("task", "/rental_id", nullptr), "task.rental_id",
       "must be a string, not a null"},
      {"rental id of a task", with("task", "/rental_id", kTaskB), "task.rental_id",
       "an id like \"rnt_...\""},
      {"payload missing", without("task", "/payload"), "task.payload", "is required"},
      {"payload an array", with("task", "/payload", json::array()), "task.payload",
       "must be an object, not an array"},
      {"payload too big", with("task", "/payload/blob", std::string(kMaxPayloadBytes, 'x')),
       "task.payload", "at most 65536"},
      {"payload 1e400", replaced("task", R"("ttl_s":86400)", R"("ttl_s":1e400)"), "message",
       "number overflow"},
      {"deadline a number", with("task", "/deadline", 0), "task.deadline", "must be a string"},
      {"deadline with seven fraction digits",
       with("task", "/deadline", "2026-07-03T23:00:00.1234567Z"), "task.deadline", "UTC time"},
      // task_progress.
      {"percent 101", with("task_progress", "/percent", 101), "task_progress.percent",
       "from 0 to 100, not 101"},
      {"percent -1", with("task_progress", "/percent", -1), "task_progress.percent",
       "from 0 to 100"},
      {"percent 50.5", with("task_progress", "/percent", 50.5), "task_progress.percent",
       "must be an integer"},
      {"percent -0.0", replaced("task_progress", R"("percent":40)", R"("percent":-0.0)"),
       "task_progress.percent", "must be an integer"},
      {"percent 1e300", with("task_progress", "/percent", 1e300), "task_progress.percent",
       "must be an integer"},
      {"percent true", with("task_progress", "/percent", true), "task_progress.percent",
       "must be an integer"},
      {"message too long", with("task_progress", "/message", std::string(2049, 'x')),
       "task_progress.message", "at most 2048 bytes"},
      {"message escaped NUL", with("task_progress", "/message", std::string("a\0b", 3)),
       "task_progress.message", "control"},
      {"message newline", with("task_progress", "/message", "a\nb"), "task_progress.message",
       "control"},
      {"message C1 control", with("task_progress", "/message", "a\u0085b"), "task_progress.message",
       "control"},
      {"message bidi override", with("task_progress", "/message", "a\u202eb"),
       "task_progress.message", "bidirectional"},
      {"message DEL", with("task_progress", "/message", "a\x7f"), "task_progress.message",
       "control"},
      // task_result.
      {"ok a string", with("task_result", "/ok", "true"), "task_result.ok",
       "must be true or false"},
      {"ok missing", without("task_result", "/ok"), "task_result.ok", "is required"},
      {"result an array", with("task_result", "/result", json::array({1})), "task_result.result",
       "must be an object"},
      {"result too big", with("task_result", "/result/log", std::string(kMaxPayloadBytes, 'x')),
       "task_result.result", "at most 65536"},
      // ack and error.
      {"acked id a number", with("ack", "/acked_id", 7), "ack.acked_id", "must be a string"},
      {"error code with capitals", with("error", "/code", "Bad_Code"), "error.code",
       "lower_snake_case"},
      {"error message empty", with("error", "/message", ""), "error.message", "must not be empty"},
      {"offending id too long", with("error", "/offending_id", std::string(100, 'x')),
       "error.offending_id", "at most 64 bytes"},
  };
}

// A duplicate member two levels into a payload: only raw editing can write it.
Refused duplicate_in_payload() {
  auto text = with("task", "/payload", json::parse(R"({"s":[{"n":1},{"m":2}]})"));
  auto pos = text.find(R"({"m":2})");
  text.replace(pos, 7, R"({"m":2,"m":3})");
  return {"duplicate in a payload", text, "task.payload.s[1].m", "appears twice"};
}

std::vector<Refused> refusal_rows() {
  auto rows = refusals();
  rows.push_back(duplicate_in_payload());
  return rows;
}

std::string row_name(const ::testing::TestParamInfo<Refused>& info) {
  std::string name;
  for (char c : info.param.name) name += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return name;
}

class RefusedInput : public ::testing::TestWithParam<Refused> {};

TEST_P(RefusedInput, IsAProtocolErrorNamingTheMember) {
  const auto& row = GetParam();
  auto e = refusal(row.text);
  EXPECT_EQ(e.path(), row.path) << e.what();
  EXPECT_THAT(e.what(), HasSubstr(row.reason));
  // Errors go to logs and back to the other side as text.
  EXPECT_TRUE(printable_ascii(e.what())) << e.what();
}

INSTANTIATE_TEST_SUITE_P(Table, RefusedInput, ::testing::ValuesIn(refusal_rows()), row_name);

TEST(MessagesTest, RefusalNamesAreUnique) {
  std::set<std::string> names;
  for (const auto& row : refusal_rows()) EXPECT_TRUE(names.insert(row.name).second) << row.name;
}

// ---- The fuzz corpus ----

// Every seed is a valid message, so that the fuzzer starts from inputs that reach the
// readers of every type.
TEST(MessagesTest, EverySeedOfTheFuzzCorpusIsAValidMessage) {
  auto dir = std::filesystem::path(gpurent::testing::source_dir()) / "fuzz/corpus/agent_message";
  std::set<std::string> types;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".json") continue;
    SCOPED_TRACE(entry.path().filename().string());
    std::ifstream in(entry.path(), std::ios::binary);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    try {
      auto m = decode(text);
      types.insert(std::string(type_name(m.body)));
      EXPECT_EQ(decode(encode(m)), m);
    } catch (const ProtocolError& e) {
      ADD_FAILURE() << e.what();
    }
  }
  EXPECT_EQ(types.size(), std::variant_size_v<Body>);
}

}  // namespace messages_test
}  // namespace gpurent::agent_proto
