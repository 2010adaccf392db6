// The agents' transport: enrolment, admission, channels, and each message handed to the fleet.
#include "api/modules/agent_module.h"

#include "agent_proto/messages.h"
#include "api/json_body.h"
#include "core/error.h"
#include "core/log.h"

#include <sstream>

namespace gpurent {
namespace {

namespace proto = agent_proto;

// The version every message to a node's agent is written in: what its hello offered (an
// agent one release behind reads only its own), this build's before any hello.
int version_for(const std::map<std::string, int>& versions, const std::string& node) {
  auto it = versions.find(node);
  return it == versions.end() ? proto::kProtocolVersion : it->second;
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
      identity_(ctx.clock, peers.nodes, ca_, ctx.config.agent_certificate_validity),
      tasks_(peers.tasks),
      fleet_(ctx.pool, ctx.clock,
             {.nodes = peers.nodes,
              .host_keys = peers.host_keys,
              .health_log = peers.health_log,
              .tasks = peers.tasks,
              .lifecycle = peers.lifecycle,
              .host_certificates = &peers.ssh_access},
             {.telemetry_interval = ctx.config.agent_telemetry_interval,
              .telemetry_retention = ctx.config.agent_telemetry_retention,
              .silence_limit = ctx.config.agent_silence_limit}),
      poll_("agent poll", ctx.config.agent_task_poll, [this] { poll_once(); },
            {.tick_at_start = false}) {
  // Agents reconnect after this replica starts: silence counts from a full limit later.
  fleet_.judge_silence_from(ctx.clock.now() + ctx.config.agent_silence_limit);
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

void AgentModule::start() {
  // Every replica judges silence and purges telemetry, whether or not agents connect to it.
  poll_.start();
  if (config_.agent_listen_host.empty()) return;
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
  heartbeats_.emplace(kHeartbeatWindow, kHeartbeatBatch, config_.agent_heartbeat_max_pending,
                      [this](const std::vector<HeartbeatBatcher::Beat>& batch) {
                        std::vector<fleet::ControlPlane::Routine> routine;
                        routine.reserve(batch.size());
                        for (const auto& b : batch)
                          routine.push_back({b.node_id, b.received_at, b.sample});
                        fleet_.record_routine(routine);
                        for (const auto& b : batch) heartbeat_lag_.record(since(b.sent_at));
                      });
  agent_port_ = listener_->start();
}

void AgentModule::stop() {
  poll_.stop();
  if (listener_) listener_->stop();
  // After the listener: what its last messages queued is written (and acked into closed
  // channels, which drop it).
  if (heartbeats_) heartbeats_->stop();
}

void AgentModule::add_metrics(http::Metrics& metrics) {
  metrics.add_job("agent_task_poll", poll_.stats());
  metrics.add_collector([this](std::string& out) {
    using http::append_metric;
    if (listener_) {
      auto s = listener_->stats();
      append_metric(out, "gpurent_agent_channels_open", "gauge",
                    "Agents connected to this replica now (one WebSocket each).", s.channels_open);
      append_metric(out, "gpurent_agent_channels_opened_total", "counter",
                    "Agent channels opened since start.", s.channels_opened_total);
      append_metric(out, "gpurent_agent_refused_total", "counter",
                    "Agent connections refused: TLS failures, refused certificates, bad requests.",
                    s.refused_total);
      append_metric(out, "gpurent_agent_messages_received_total", "counter",
                    "Messages received from agents.", s.messages_received_total);
      append_metric(out, "gpurent_agent_messages_sent_total", "counter", "Messages sent to agents.",
                    s.messages_sent_total);
      append_metric(out, "gpurent_agent_outbox_messages", "gauge",
                    "Messages waiting to be sent to agents, all channels together.",
                    s.outbox_messages);
      append_metric(out, "gpurent_agent_outbox_bytes", "gauge",
                    "Bytes waiting to be sent to agents, all channels together.", s.outbox_bytes);
      append_metric(out, "gpurent_agent_outbox_overflows_total", "counter",
                    "Agent channels cut because their outbox was full.", s.outbox_overflows_total);
    }
    if (heartbeats_) {
      append_metric(out, "gpurent_agent_heartbeats_pending", "gauge",
                    "Routine heartbeats waiting to be written (queued or in the batch).",
                    heartbeats_->pending());
      append_metric(out, "gpurent_agent_heartbeats_pending_max", "gauge",
                    "Routine heartbeats that may wait at once; more are refused.",
                    heartbeats_->max_pending());
      append_metric(out, "gpurent_agent_heartbeats_refused_total", "counter",
                    "Heartbeats refused because the batch writer was full.",
                    heartbeats_->refused_total());
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

void AgentModule::poll_once() {
  constexpr int kNodesPerPoll = 1000;
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
    fleet_.fail_silent_nodes(clock_.now());
  } catch (const std::exception& e) {
    log::warn("looking for nodes whose agents fell silent: {}", e.what());
  }
  try {
    fleet_.purge_telemetry(clock_.now(), kSamplesPurgedPerPoll);
  } catch (const std::exception& e) {
    log::warn("deleting GPU telemetry older than the retention: {}", e.what());
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
    versions_.erase(channel->node_id());
    fleet_.forget(channel->node_id());
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
  if (const auto* hello_body = std::get_if<proto::Hello>(&message.body)) {
    hello(channel, message, *hello_body);
  } else if (const auto* beat = std::get_if<proto::Heartbeat>(&message.body)) {
    heartbeat(channel, message.id, *beat);
  } else if (const auto* result = std::get_if<proto::TaskResult>(&message.body)) {
    // Acked whether or not it changed anything: a repeat, or another node's task, is settled.
    fleet_.task_reported(node, *result);
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

void AgentModule::hello(const std::shared_ptr<http::AgentChannel>& channel,
                        const proto::Message& message, const proto::Hello& hello) {
  const std::string& node = channel->node_id();
  {
    // The version decode() accepted: the connection speaks it from here on.
    std::lock_guard lock(mutex_);
    versions_[node] = message.protocol_version;
  }
  auto mismatch = fleet_.hello(node, hello, Actor{.ip = channel->remote_ip()});
  if (mismatch) {
    log::warn("agent of node {}: {}", node, *mismatch);
    send_to(*channel, proto::Error{"inventory_mismatch", *mismatch, message.id});
    return;
  }
  send_to(*channel, proto::Ack{message.id});
  // A new connection: everything unfinished, since a task sent on the old one may have been
  // lost with it (the agent runs each id once).
  deliver_tasks(node, /*resend_delivered=*/true);
}

void AgentModule::heartbeat(const std::shared_ptr<http::AgentChannel>& channel,
                            const std::string& message_id, const proto::Heartbeat& beat) {
  auto judged = fleet_.judge(channel->node_id(), beat);
  // A healthy heartbeat changes no state: it is written with others, and acked once written.
  if (judged.routine() && heartbeats_) {
    auto added = heartbeats_->add({.node_id = judged.node_id,
                                   .received_at = judged.received_at,
                                   .sent_at = beat.sent_at,
                                   .sample = judged.sample,
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
  fleet_.record(judged);
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
  // An agent of the previous release cannot read the kinds this one introduced: such a task
  // fails here, as if its agent had refused it, rather than break the agent's channel.
  std::vector<std::pair<std::string, int>> unreadable;
  for (const auto& t : tasks) {
    auto kind = proto::parse_task_kind(scheduler::to_string(t.kind));
    if (!kind) continue;
    std::lock_guard lock(mutex_);
    int version = version_for(versions_, node_id);
    if (!proto::reads_task_kind(*kind, version)) {
      unreadable.emplace_back(t.id, version);
      continue;
    }
    channel->send(proto::encode(
        {.id = "srv-" + std::to_string(++sent_),
         .protocol_version = version_for(versions_, node_id),
         .body = proto::Task{.task_id = t.id,
                             .kind = *kind,
                             .rental_id = t.rental_id,
                             .payload = t.payload,
                             .deadline = t.deadline.value_or(clock_.now() + kTaskDeadline)}}));
  }
  for (const auto& [id, version] : unreadable) {
    fleet_.task_reported(node_id, {.task_id = id,
                                   .ok = false,
                                   .message = "the node's agent speaks protocol version " +
                                              std::to_string(version) + ", and this task needs " +
                                              std::to_string(proto::kNoticeAndRebootTasksSince) +
                                              ": upgrade the agent"});
  }
}

}  // namespace gpurent
