// The messages an agent and the control plane exchange (agent_proto/README.md): one set of
// structs, one encoder and one strict decoder, used by both sides so they cannot drift.
#pragma once

#include "agent_proto/protocol_error.h"
#include "agent_proto/telemetry.h"
#include "agent_proto/topology.h"
#include "core/clock.h"

#include <nlohmann/json.hpp>

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace gpurent::agent_proto {

// ---- Versions ----

// What this build writes. The control plane is upgraded before its agents, so it also reads
// the previous version: an agent one release behind keeps working through a rollout.
inline constexpr int kProtocolVersion = 4;
inline constexpr int kOldestAcceptedVersion = 3;
// Members that a version introduced; an older message must not carry them.
inline constexpr int kSshHostKeysSince = 2;
inline constexpr int kSshProbeKeySince = 3;
// Task kinds a version introduced: an older agent cannot read them, so the server never sends
// them to it (it fails such a task instead, api/modules/agent_module.cpp).
inline constexpr int kNoticeAndRebootTasksSince = 4;

// The version both sides speak after an agent offers `offered` in its hello: the offer
// itself when this side reads it, otherwise none (the server answers an error and closes).
// A newer offer is refused rather than talked down: agents never run ahead of the server.
constexpr std::optional<int> negotiate(int offered) {
  if (offered < kOldestAcceptedVersion || offered > kProtocolVersion) return std::nullopt;
  return offered;
}

// Thrown by decode() for a message whose protocol_version negotiate() refuses, so the
// receiver can answer with kErrorUnsupportedVersion instead of a generic refusal.
class UnsupportedVersion : public ProtocolError {
 public:
  UnsupportedVersion(std::string path, int offered);
  int offered() const { return offered_; }

 private:
  int offered_;
};

// ---- Limits (every one is checked by decode and so by encode) ----

// Checked on the raw text before any parsing.
inline constexpr std::size_t kMaxMessageBytes = 256 * 1024;
// Objects and arrays nested in one message, payloads included.
inline constexpr int kMaxNestingDepth = 32;
// Message, task and rental ids.
inline constexpr std::size_t kMaxIdBytes = 64;
// Free text: progress, result and error messages.
inline constexpr std::size_t kMaxTextBytes = 2048;
// Names and versions: GPU model, agent/driver/CUDA versions (host names: RFC 1123's 253).
inline constexpr std::size_t kMaxNameBytes = 128;
// Task payloads and results, as encoded JSON.
inline constexpr std::size_t kMaxPayloadBytes = 64 * 1024;
inline constexpr int kMaxGpus = topology::kMaxGpus;
inline constexpr std::size_t kMaxEventsPerHeartbeat = 256;
// recent_task_ids and running_task_ids.
inline constexpr std::size_t kMaxTaskIds = 256;
inline constexpr std::size_t kMaxSshHostKeys = 8;
// An OpenSSH public key line; a 16384-bit RSA key is under 3 KiB.
inline constexpr std::size_t kMaxSshHostKeyBytes = 4096;

// ---- Message bodies ----

// What nvidia-smi reports about the node's GPUs as a whole.
struct GpuInventory {
  int count = 0;               // 1..kMaxGpus
  std::string model;           // "NVIDIA H100 80GB HBM3", as nvidia-smi's name column
  std::string driver_version;  // "550.54.15"
  std::string cuda_version;    // "12.4"

  bool operator==(const GpuInventory&) const = default;
};

// Agent -> server, first on every connection.
struct Hello {
  std::string agent_version;  // "0.9.1", "0.9.1-3-gabc123"
  std::string hostname;       // RFC 1123
  GpuInventory gpus;
  topology::Matrix topology;  // gpus.count x gpus.count
  // OpenSSH public key lines of the node's sshd ("ssh-ed25519 AAAA… [comment]"), so the
  // rental can show the host key fingerprint. Since version 2; empty in a version 1 hello.
  std::vector<std::string> ssh_host_keys;
  // The agent's own SSH key ("ssh-ed25519 AAAA… [comment]"), whose private half never leaves
  // the node: install_access carries a short-lived probe certificate for it, with which the
  // agent proves a rental's login works before reporting access ready. Since version 3;
  // absent when the agent has no sshd to probe (the simulated backend).
  std::optional<std::string> ssh_probe_key;
  // Tasks this agent has run recently (it runs each id once): the server marks them
  // delivered instead of sending them again.
  std::vector<std::string> recent_task_ids;

  bool operator==(const Hello&) const = default;
};

// Agent -> server, periodically.
struct Heartbeat {
  Timestamp sent_at;
  std::vector<GpuTelemetry> gpus;  // indices unique
  std::vector<XidEvent> events;    // since the previous heartbeat
  std::vector<std::string> running_task_ids;

  bool operator==(const Heartbeat&) const = default;
};

// The names match scheduler/records.h's TaskKind; health_probe is the agent's own.
enum class TaskKind {
  kProvision,
  kInstallAccess,
  kRevokeAccess,
  kWipe,
  kHealthProbe,
  kBurnIn,
  kDoctor,
  kNotice,  // write the node's notice file, run the rental's checkpoint command
  kReboot   // the tenant's soft reboot of its whole node
};
inline constexpr std::array<std::string_view, 9> kTaskKindNames{
    "provision", "install_access", "revoke_access", "wipe",  "health_probe",
    "burn_in",   "doctor",         "notice",        "reboot"};
std::string_view to_string(TaskKind kind);
std::optional<TaskKind> parse_task_kind(std::string_view name);
// Whether an agent speaking `version` reads tasks of `kind`.
constexpr bool reads_task_kind(TaskKind kind, int version) {
  return (kind != TaskKind::kNotice && kind != TaskKind::kReboot) ||
         version >= kNoticeAndRebootTasksSince;
}

// Server -> agent. Delivered at least once; the agent runs each task_id once.
struct Task {
  std::string task_id;  // "tsk_…"
  TaskKind kind = TaskKind::kProvision;
  std::optional<std::string> rental_id;  // "rnt_…"; absent for node housekeeping
  // Kind-specific; its executor validates it. Here: an object, bounded, finite numbers.
  nlohmann::json payload = nlohmann::json::object();
  Timestamp deadline;

  bool operator==(const Task&) const = default;
};

// Agent -> server, while a task runs.
struct TaskProgress {
  std::string task_id;
  int percent = 0;  // 0..100
  std::string message;

  bool operator==(const TaskProgress&) const = default;
};

// Agent -> server, once per task id (and again for a redelivered id, from memory).
struct TaskResult {
  std::string task_id;
  bool ok = false;
  std::string message;
  std::optional<nlohmann::json> result;  // an object, bounded like a payload

  bool operator==(const TaskResult&) const = default;
};

// Either way: the message with this id was received and processed.
struct Ack {
  std::string acked_id;

  bool operator==(const Ack&) const = default;
};

// Codes this protocol defines; others are lower_snake_case too.
inline constexpr std::string_view kErrorMalformed = "malformed_message";
inline constexpr std::string_view kErrorUnsupportedVersion = "unsupported_protocol_version";

// Either way: a message was refused or could not be carried out.
struct Error {
  std::string code;     // lower_snake_case
  std::string message;  // for people and logs
  std::optional<std::string> offending_id;

  bool operator==(const Error&) const = default;
};

using Body = std::variant<Hello, Heartbeat, Task, TaskProgress, TaskResult, Ack, Error>;

struct Message {
  std::string id;  // chosen by the sender, unique per connection; what an ack names
  int protocol_version = kProtocolVersion;
  Body body;

  bool operator==(const Message&) const = default;
};

// The `type` member: "hello", "heartbeat", "task", "task_progress", "task_result", "ack",
// "error".
std::string_view type_name(const Body& body);

// ---- Wire form ----

// One JSON object. Throws ProtocolError naming the field when the message breaks a rule
// decode() enforces: a bug at the sender shows up there, not as a refusal at the receiver.
std::string encode(const Message& message);

// Throws ProtocolError, never anything else, for any input that is not a valid message: its
// path starts with the type ("heartbeat.gpus[3].index"), or "message" while the type is
// unknown. UnsupportedVersion for a protocol_version negotiate() refuses.
Message decode(std::string_view text);

// Whether `line` may stand in a hello's ssh_host_keys, as decode() judges it: the agent
// leaves out a host key file the server would refuse rather than have its hello refused.
bool valid_ssh_host_key(std::string_view line);

}  // namespace gpurent::agent_proto
