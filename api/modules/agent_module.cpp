// The agents' side of the control plane: enrolment, admission, and each message's use case.
#include "api/modules/agent_module.h"

#include "agent_proto/health_rules.h"
#include "agent_proto/messages.h"
#include "api/json_body.h"
#include "api/modules/heartbeat_health.h"
#include "core/error.h"
#include "core/log.h"
#include "identity/ssh_public_key.h"

#include <sstream>

namespace gpurent {
namespace {

// The hello's sshd host keys with their fingerprints, each parsed as a registered SSH key is
// (the decoder checked only their shape); one that does not parse is left out with a log
// line rather than refusing the agent. Stored without the comment.
std::vector<inventory::HostKey> read_host_keys(const std::string& node,
                                               const std::vector<std::string>& lines) {
  std::vector<inventory::HostKey> out;
  for (const auto& line : lines) {
    try {
      auto key = identity::parse_ssh_public_key(line);
      std::string canonical = key.canonical();
      auto comment = canonical.find(' ', canonical.find(' ') + 1);
      out.push_back({key.type, canonical.substr(0, comment), key.fingerprint, {}});
    } catch (const Error& e) {
      log::warn("agent of node {} reported an SSH host key that does not parse: {}", node,
                e.what());
    }
  }
  return out;
}

namespace proto = agent_proto;

// The version every message to a node's agent is written in: what its hello offered (an
// agent one release behind reads only its own), this build's before any hello.
int version_for(const std::map<std::string, int>& versions, const std::string& node) {
  auto it = versions.find(node);
  return it == versions.end() ? proto::kProtocolVersion : it->second;
}

// The hello's probe key ("ssh-ed25519 BASE64", without its comment) when it parses as a
// registered SSH key does; one that does not is left out with a log line, as a host key is.
std::optional<std::string> read_probe_key(const std::string& node,
                                          const std::optional<std::string>& line) {
  if (!line) return std::nullopt;
  try {
    auto key = identity::parse_ssh_public_key(*line);
    if (key.type != "ssh-ed25519") throw Error::invalid_field("ssh_probe_key", "not Ed25519");
    return key.type + " " + identity::ssh_base64(key.blob);
  } catch (const Error& e) {
    log::warn("agent of node {} reported an SSH probe key that does not parse: {}", node, e.what());
    return std::nullopt;
  }
}

std::vector<std::string> split_names(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream in(text);
  for (std::string name; std::getline(in, name, ',');) out.push_back(name);
  return out;
}

// The listener's own key pair lives in memory only: made from the CA at each start, so there
// is no second private key on disk to guard.
constexpr auto kServerCertificateValidity = std::chrono::hours(24 * 90);
constexpr int kTasksPerDelivery = 64;
// How long an agent has for a task it was sent; its executor's own limit is shorter.
constexpr auto kTaskDeadline = std::chrono::hours(1);
// Healthy heartbeats wait at most this long to be written with others, and a batch holds at
// most this many: 10,000 agents every 10 s make ten transactions a second of about 100 rows.
constexpr auto kHeartbeatWindow = std::chrono::milliseconds(100);
constexpr std::size_t kHeartbeatBatch = 1000;
// The error a heartbeat is answered with while agent_heartbeat_max_pending are waiting.
constexpr std::string_view kErrorOverloaded = "overloaded";

std::chrono::microseconds since(Timestamp sent_at) {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now() -
                                                               sent_at);
}

// The heartbeat's GPUs whole, as they become the node's latest telemetry.
nlohmann::json telemetry_json(const proto::Heartbeat& beat) {
  nlohmann::json gpus = nlohmann::json::array();
  for (const auto& g : beat.gpus) gpus.push_back(proto::to_json(g));
  return gpus;
}

// Samples older than the retention deleted per poll: ahead of what 10,000 nodes add in one
// (a sample a minute each: ~2,500 rows in 15 s).
constexpr int kSamplesPurgedPerPoll = 10000;

}  // namespace

AgentModule::AgentModule(const ModuleContext& ctx, WorkerPool& workers, const Peers& peers)
    : config_(ctx.config),
      pool_(ctx.pool),
      clock_(ctx.clock),
      workers_(workers),
      ca_(CertificateAuthority::load_or_create(ctx.config.agent_pki_dir, "gpurent agents CA",
                                               ctx.clock)),
      nodes_(peers.nodes),
      host_keys_(peers.host_keys),
      identity_(ctx.clock, nodes_, ca_, ctx.config.agent_certificate_validity),
      tasks_(peers.tasks) {
  // A task made on any replica names its node; the replica holding that agent sends it.
  ctx.listener.subscribe("gpurent_agent_tasks", [this](const std::string& node_id) {
    if (!channel_of(node_id)) return;
    workers_.post([this, node_id] {
      try {
        deliver_tasks(node_id, /*resend_delivered=*/false);
      } catch (const std::exception& e) {
        log::warn("sending tasks to the agent of node {}: {}", node_id, e.what());
      }
    });
  });
}

AgentModule::~AgentModule() {
  stop();
}

unsigned short AgentModule::start() {
  if (config_.agent_listen_host.empty()) return 0;
  auto server = ca_.issue_server_certificate(split_names(config_.agent_hostnames),
                                             kServerCertificateValidity);
  listener_.emplace(
      http::AgentListenerOptions{.host = config_.agent_listen_host,
                                 .port = config_.agent_listen_port,
                                 .server_certificate_pem = server.certificate.certificate_pem,
                                 .server_key_pem = server.private_key_pem,
                                 .client_ca_pem = ca_.certificate_pem(),
                                 .max_outbox_messages = config_.agent_outbox_max_messages,
                                 .max_outbox_bytes = config_.agent_outbox_max_bytes},
      *this, workers_);
  heartbeats_.emplace(
      kHeartbeatWindow, kHeartbeatBatch, config_.agent_heartbeat_max_pending,
      [this](const std::vector<HeartbeatBatcher::Beat>& batch) { write_heartbeats(batch); });
  unsigned short port = listener_->start();
  poller_ = std::thread([this] { poll_loop(); });
  return port;
}

void AgentModule::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  poll_wake_.notify_all();
  if (poller_.joinable()) poller_.join();
  if (listener_) listener_->stop();
  // After the listener: what its last messages queued is written (and acked into closed
  // channels, which drop it).
  if (heartbeats_) heartbeats_->stop();
}

void AgentModule::add_metrics(http::Metrics& metrics) {
  metrics.add_collector([this](std::string& out) {
    auto line = [&out](const char* name, const char* type, std::uint64_t value) {
      out.append("# TYPE ").append(name).append(" ").append(type).append("\n");
      out.append(name).append(" ").append(std::to_string(value)).append("\n");
    };
    if (listener_) {
      auto s = listener_->stats();
      line("gpurent_agent_channels_open", "gauge", s.channels_open);
      line("gpurent_agent_channels_opened_total", "counter", s.channels_opened_total);
      line("gpurent_agent_refused_total", "counter", s.refused_total);
      line("gpurent_agent_messages_received_total", "counter", s.messages_received_total);
      line("gpurent_agent_messages_sent_total", "counter", s.messages_sent_total);
      line("gpurent_agent_outbox_messages", "gauge", s.outbox_messages);
      line("gpurent_agent_outbox_bytes", "gauge", s.outbox_bytes);
      line("gpurent_agent_outbox_overflows_total", "counter", s.outbox_overflows_total);
    }
    if (heartbeats_) {
      line("gpurent_agent_heartbeats_pending", "gauge", heartbeats_->pending());
      line("gpurent_agent_heartbeats_pending_max", "gauge", heartbeats_->max_pending());
      line("gpurent_agent_heartbeats_refused_total", "counter", heartbeats_->refused_total());
    }
    heartbeat_lag_.render(out, "gpurent_agent_heartbeat_commit_lag_seconds");
  });
}

void AgentModule::send_to(http::AgentChannel& channel, proto::Body body) {
  std::lock_guard lock(mutex_);
  channel.send(proto::encode({.id = "srv-" + std::to_string(++sent_),
                              .protocol_version = version_for(versions_, channel.node_id()),
                              .body = std::move(body)}));
}

void AgentModule::poll_loop() {
  constexpr int kNodesPerPoll = 1000;
  std::unique_lock lock(mutex_);
  while (!poll_wake_.wait_for(lock, config_.agent_task_poll, [this] { return stopping_; })) {
    lock.unlock();
    try {
      auto nodes = pool_.read("agent_task_poll",
                              [&](Tx& tx) { return tasks_.nodes_with_queued(tx, kNodesPerPoll); });
      for (const auto& node : nodes) {
        if (!channel_of(node)) continue;  // another replica's agent, or none connected
        log::info("sending the agent of node {} tasks its notification did not bring", node);
        deliver_tasks(node, /*resend_delivered=*/false);
      }
    } catch (const std::exception& e) {
      log::warn("looking for tasks not sent to agents: {}", e.what());
    }
    try {
      pool_.transact("agent_telemetry_purge", [&](Tx& tx) {
        return health_log_.purge_samples(tx, clock_.now() - config_.agent_telemetry_retention,
                                         kSamplesPurgedPerPoll);
      });
    } catch (const std::exception& e) {
      log::warn("deleting GPU telemetry older than the retention: {}", e.what());
    }
    lock.lock();
  }
}

nlohmann::json AgentModule::enroll(const nlohmann::json& body, const std::string& remote_ip) {
  http::JsonObjectReader in(body);
  std::string token = in.required_string("enrollment_token", 200);
  std::string csr = in.required_string("csr_pem", 16 * 1024);
  // What the agent found on the node; its hello reports it again on every connection, and
  // that is what the node's record takes.
  in.optional_value("inventory");
  in.finish();
  auto enrolled = pool_.transact(
      "agent_enroll", [&](Tx& tx) { return identity_.enroll(tx, token, csr, remote_ip); });
  log::info("node {} enrolled from {} (certificate {})", enrolled.node_id, remote_ip,
            enrolled.certificate.serial);
  return {{"node_id", enrolled.node_id},
          {"certificate_pem", enrolled.certificate.certificate_pem},
          {"ca_pem", enrolled.ca_pem}};
}

std::string AgentModule::admit(const std::string& serial, const std::string& remote_ip) {
  auto check = pool_.read("agent_admit", [&](Tx& tx) { return identity_.check(tx, serial); });
  if (check.verdict != inventory::CertificateVerdict::kAccepted) {
    log::warn("agent connection from {} refused: {} (certificate {}{})", remote_ip,
              inventory::to_string(check.verdict), serial,
              check.node_id.empty() ? "" : ", node " + check.node_id);
    throw http::AgentRefusal(403, "forbidden",
                             "This certificate may not connect: " +
                                 std::string(inventory::to_string(check.verdict)) + ".");
  }
  return check.node_id;
}

void AgentModule::opened(const std::shared_ptr<http::AgentChannel>& channel) {
  std::shared_ptr<http::AgentChannel> previous;
  {
    std::lock_guard lock(mutex_);
    auto& slot = channels_[channel->node_id()];
    previous = std::exchange(slot, channel);
  }
  // One channel per node: an agent that reconnects before its old connection timed out
  // replaces it.
  if (previous) previous->close("replaced by a new connection of the node's agent");
  log::info("agent of node {} connected from {}", channel->node_id(), channel->remote_ip());
}

void AgentModule::closed(const std::shared_ptr<http::AgentChannel>& channel) {
  std::lock_guard lock(mutex_);
  auto it = channels_.find(channel->node_id());
  if (it != channels_.end() && it->second == channel) {
    channels_.erase(it);
    seen_.erase(channel->node_id());
    versions_.erase(channel->node_id());
  }
}

std::shared_ptr<http::AgentChannel> AgentModule::channel_of(const std::string& node_id) {
  std::lock_guard lock(mutex_);
  auto it = channels_.find(node_id);
  return it == channels_.end() ? nullptr : it->second;
}

void AgentModule::received(const std::shared_ptr<http::AgentChannel>& channel, std::string text) {
  const std::string& node = channel->node_id();
  auto reply = [&](proto::Body body) { send_to(*channel, std::move(body)); };
  proto::Message message;
  try {
    message = proto::decode(text);
  } catch (const proto::UnsupportedVersion& e) {
    log::warn("agent of node {}: {}", node, e.what());
    reply(proto::Error{std::string(proto::kErrorUnsupportedVersion), e.what(), std::nullopt});
    channel->close("unsupported protocol version");
    return;
  } catch (const proto::ProtocolError& e) {
    log::warn("agent of node {} sent a malformed message: {}", node, e.what());
    reply(proto::Error{std::string(proto::kErrorMalformed), e.what(), std::nullopt});
    return;
  }
  Actor agent{.ip = channel->remote_ip()};
  if (const auto* hello = std::get_if<proto::Hello>(&message.body)) {
    {
      // The version decode() accepted: the connection speaks it from here on.
      std::lock_guard lock(mutex_);
      versions_[node] = message.protocol_version;
    }
    auto host_keys = read_host_keys(node, hello->ssh_host_keys);
    auto probe_key = read_probe_key(node, hello->ssh_probe_key);
    std::optional<std::string> mismatch;
    pool_.transact("agent_hello", [&](Tx& tx) {
      mismatch.reset();
      auto current = nodes_.get(tx, node);
      if (!current) throw Error(ErrorCode::kNotFound, "No such node.");
      if (hello->gpus.count != current->node.gpu_count) {
        mismatch = "the node has " + std::to_string(current->node.gpu_count) +
                   " GPUs on record and the agent found " + std::to_string(hello->gpus.count);
        return;
      }
      nodes_.record_agent(tx, node, hello->agent_version, hello->gpus.driver_version);
      // None in this hello clears an earlier one: the agent has nothing to probe with now.
      nodes_.record_ssh_probe_key(tx, node, probe_key);
      nodes_.set_topology(tx, node, hello->topology, "agent", agent);
      auto certified = host_keys;
      if (certify_) certify_(tx, node, current->node.hostname, certified);
      host_keys_.replace(tx, node, certified);
      if (current->node.state == "enrolling") {
        nodes_.transition(tx, node, inventory::NodeAction::kEnrolled,
                          "agent " + hello->agent_version + " connected", std::nullopt);
      }
    });
    if (mismatch) {
      log::warn("agent of node {}: {}", node, *mismatch);
      reply(proto::Error{"inventory_mismatch", *mismatch, message.id});
      return;
    }
    reply(proto::Ack{message.id});
    // A new connection: everything unfinished, since a task sent on the old one may have
    // been lost with it (the agent runs each id once).
    deliver_tasks(node, /*resend_delivered=*/true);
  } else if (const auto* beat = std::get_if<proto::Heartbeat>(&message.body)) {
    heartbeat(channel, message.id, *beat);
  } else if (const auto* result = std::get_if<proto::TaskResult>(&message.body)) {
    pool_.transact("agent_task_result", [&](Tx& tx) {
      auto task = tasks_.get(tx, result->task_id);
      // Another node's task is as unknown as none: an agent reports on its own work only.
      if (!task || task->node_id != node) return;
      // A repeated report changes nothing.
      if (!tasks_.complete(tx, result->task_id, result->ok, result->message)) return;
      if (on_task_finished_) on_task_finished_(tx, *task, result->ok);
    });
    reply(proto::Ack{message.id});
  } else if (std::holds_alternative<proto::TaskProgress>(message.body)) {
    reply(proto::Ack{message.id});
  } else if (const auto* error = std::get_if<proto::Error>(&message.body)) {
    log::warn("agent of node {} reported an error: {} {}", node, error->code, error->message);
  } else if (!std::holds_alternative<proto::Ack>(message.body)) {
    reply(proto::Error{std::string(proto::kErrorMalformed),
                       std::string(proto::type_name(message.body)) + " is sent by the server",
                       message.id});
  }
}

void AgentModule::write_heartbeats(const std::vector<HeartbeatBatcher::Beat>& batch) {
  std::vector<inventory::NodeStore::HeartbeatSeen> seen;
  std::vector<inventory::TelemetrySample> samples;
  seen.reserve(batch.size());
  for (const auto& b : batch) {
    seen.push_back({b.node_id, b.received_at});
    if (b.sample) samples.push_back(*b.sample);
  }
  pool_.transact("agent_heartbeats", [&](Tx& tx) {
    // Nodes or GPUs that were not ok are ok again: each change is in the health history.
    std::vector<inventory::HealthEvent> events;
    auto before = nodes_.record_healthy_heartbeats(tx, seen);
    for (const auto& [node, health] : before) {
      HeartbeatVerdict now{.node = {"ok", ""}};
      for (const auto& [index, _] : health.gpus) now.gpus[index] = {"ok", ""};
      auto at = std::find_if(batch.begin(), batch.end(), [&](const auto& b) {
                  return b.node_id == node;
                })->received_at;
      for (auto& e : health_changes(node, at, health, now)) events.push_back(std::move(e));
    }
    health_log_.record_events(tx, events);
    health_log_.record_samples(tx, samples);
  });
  for (const auto& b : batch) heartbeat_lag_.record(since(b.sent_at));
}

void AgentModule::heartbeat(const std::shared_ptr<http::AgentChannel>& channel,
                            const std::string& message_id, const proto::Heartbeat& beat) {
  const std::string& node = channel->node_id();
  auto now = clock_.now();
  std::optional<HeartbeatCounters> previous;
  bool sample_due = false;
  {
    std::lock_guard lock(mutex_);
    auto& seen = seen_[node];
    previous = std::exchange(seen.counters, counters_of(beat));
    sample_due = !seen.sampled_at || now - *seen.sampled_at >= config_.agent_telemetry_interval;
  }
  auto verdict = judge_heartbeat(node, now, beat, previous);
  std::optional<inventory::TelemetrySample> sample;
  // Every unhealthy heartbeat is kept: what the GPUs looked like when it went wrong.
  if (sample_due || !verdict.routine()) {
    sample = inventory::TelemetrySample{node, now, telemetry_json(beat), points_of(beat)};
    std::lock_guard lock(mutex_);
    seen_[node].sampled_at = now;
  }
  // A healthy heartbeat changes no state: it is written with others, and acked once written.
  if (verdict.routine() && heartbeats_) {
    auto added = heartbeats_->add({.node_id = node,
                                   .received_at = now,
                                   .sent_at = beat.sent_at,
                                   .sample = sample,
                                   .done = [this, channel, message_id](bool committed) {
                                     if (committed)
                                       return send_to(*channel, proto::Ack{message_id});
                                     // As when a heartbeat's own transaction fails: the agent
                                     // reconnects and goes on.
                                     channel->close("internal error");
                                   }});
    if (added == HeartbeatBatcher::Admission::kQueued) return;
    if (added == HeartbeatBatcher::Admission::kFull) {
      // The database is behind: this one is not recorded (nor held), and the agent is told
      // so; its next heartbeat comes as usual.
      return send_to(*channel, proto::Error{std::string(kErrorOverloaded),
                                            "heartbeat not recorded: " +
                                                std::to_string(heartbeats_->max_pending()) +
                                                " heartbeats are waiting to be written "
                                                "(agent_heartbeat_max_pending)",
                                            message_id});
    }
  }
  const std::string& why = verdict.node.reason;
  pool_.transact("agent_heartbeat", [&](Tx& tx) {
    nodes_.record_heartbeat(tx, node);
    auto stored = nodes_.health_state(tx, node);
    if (!stored) return;
    auto events = verdict.xid_events;
    for (auto& e : health_changes(node, now, *stored, verdict)) events.push_back(std::move(e));
    inventory::NodeHealthState health{verdict.node.health, {}};
    for (const auto& [index, gpu] : verdict.gpus) health.gpus[index] = gpu.health;
    nodes_.set_health(tx, node, health);
    health_log_.record_events(tx, events);
    if (sample) health_log_.record_samples(tx, {*sample});
    auto current = nodes_.get(tx, node);
    if (!current) return;
    const std::string& state = current->node.state;
    if (verdict.node.health == "critical" && state != "failed" && state != "retired") {
      // The node's GPUs cannot be trusted with work: out of service now, and what runs on
      // it is interrupted (and credited by billing).
      nodes_.transition(tx, node, inventory::NodeAction::kFail, why, std::nullopt);
      if (on_failed_) on_failed_(tx, node, why);
      log::warn("node {} failed: {}", node, why);
    } else if (verdict.node.health == "warning" && state == "available") {
      // Keep what runs; take no new work; maintenance once the rentals have ended.
      nodes_.transition(tx, node, inventory::NodeAction::kDrain, why, std::nullopt);
      log::warn("node {} draining: {}", node, why);
    }
  });
  heartbeat_lag_.record(since(beat.sent_at));
  send_to(*channel, proto::Ack{message_id});
}

void AgentModule::deliver_tasks(const std::string& node_id, bool resend_delivered) {
  auto channel = channel_of(node_id);
  if (!channel) return;
  std::vector<scheduler::AgentTask> tasks;
  try {
    tasks = pool_.transact("agent_deliver_tasks", [&](Tx& tx) {
      if (!resend_delivered) return tasks_.claim_queued(tx, node_id, kTasksPerDelivery);
      auto unfinished = tasks_.queued_for_node(tx, node_id, kTasksPerDelivery);
      for (const auto& t : unfinished) tasks_.mark_delivered(tx, t.id);
      return unfinished;
    });
  } catch (const std::exception&) {
    // The claim may have committed without this replica knowing (a COMMIT in doubt): its
    // tasks would be `delivered` yet never sent, and neither the poll (it looks for queued
    // ones) nor a notification would send them again. Closing the channel makes the agent
    // reconnect, and its hello resends every unfinished task.
    channel->close("the server lost track of the tasks it was sending; reconnect");
    throw;
  }
  for (const auto& t : tasks) {
    auto kind = proto::parse_task_kind(scheduler::to_string(t.kind));
    if (!kind) continue;
    std::lock_guard lock(mutex_);
    channel->send(proto::encode(
        {.id = "srv-" + std::to_string(++sent_),
         .protocol_version = version_for(versions_, node_id),
         .body = proto::Task{.task_id = t.id,
                             .kind = *kind,
                             .rental_id = t.rental_id,
                             .payload = t.payload,
                             .deadline = t.deadline.value_or(clock_.now() + kTaskDeadline)}}));
  }
}

}  // namespace gpurent
