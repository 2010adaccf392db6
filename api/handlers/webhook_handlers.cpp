// Webhook routes: each turns one request into one WebhookStore call in a transaction of its
// own, for the caller's org only. Managing webhooks is an owner's or admin's business
// (members:write): a webhook sends the org's rental and balance events wherever it points.
#include "api/handlers/webhook_handlers.h"

#include "api/handlers/json_values.h"
#include "api/handlers/query_params.h"
#include "api/json_body.h"
#include "api/responses.h"
#include "core/error.h"
#include "core/id.h"
#include "webhooks/events.h"
#include "webhooks/webhook_url.h"

#include <nlohmann/json.hpp>

#include <set>
#include <variant>

namespace gpurent::http {
namespace {

constexpr const char* kWebhookScope = "members:write";
constexpr std::size_t kMaxEvents = webhooks::kEventTypes.size();

nlohmann::json webhook_json(const webhooks::WebhookRecord& w) {
  return {
      {"id", w.id}, {"url", w.url}, {"events", w.events}, {"created_at", time_json(w.created_at)}};
}

nlohmann::json attempt_json(const webhooks::AttemptRecord& a) {
  return {{"attempt", a.attempt},
          {"at", time_json(a.at)},
          {"duration_ms", a.duration_ms},
          {"status", optional_json(a.status)},
          {"error", optional_json(a.error)}};
}

nlohmann::json delivery_json(const webhooks::DeliveryRecord& d) {
  nlohmann::json attempts = nlohmann::json::array();
  for (const auto& a : d.attempt_log) attempts.push_back(attempt_json(a));
  bool pending = d.state == webhooks::DeliveryState::kPending;
  return {{"id", webhooks::delivery_id_text(d.id)},
          {"event_id", d.event_id},
          {"event_type", d.event_type},
          {"state", webhooks::to_string(d.state)},
          {"attempts", d.attempts},
          {"next_attempt_at", pending ? time_json(d.next_attempt_at) : nlohmann::json(nullptr)},
          {"last_status", optional_json(d.last_status)},
          {"last_error", optional_json(d.last_error)},
          {"created_at", time_json(d.created_at)},
          {"finished_at", optional_json(d.finished_at)},
          {"attempt_log", std::move(attempts)}};
}

// The webhook id from the path; a malformed one is simply a webhook that does not exist.
std::string webhook_id(const Request& req) {
  return path_id(req, "id", webhooks::kWebhookPrefix, "No such webhook.");
}

bool is_local_name(const std::string& host) {
  std::string h = host;
  if (!h.empty() && h.back() == '.') h.pop_back();
  return h == "localhost" || (h.size() > 10 && h.ends_with(".localhost"));
}

// The URL as stored: parsed strictly, and refused when it names an internal address outright
// (a name is checked again at every delivery, whatever it resolves to then).
std::string checked_url(const std::string& text, bool allow_internal) {
  auto parsed = webhooks::parse_webhook_url(text);
  if (auto* error = std::get_if<webhooks::UrlError>(&parsed)) {
    throw Error::invalid_field("url", error->reason);
  }
  const auto& url = std::get<webhooks::WebhookUrl>(parsed);
  if (!allow_internal) {
    bool internal = is_local_name(url.host);
    if (url.host_is_ip) internal = webhooks::is_internal_address(*webhooks::parse_ip(url.host));
    if (internal) {
      throw Error::invalid_field("url",
                                 "must not point to a loopback, private or link-local address");
    }
  }
  return url.text();
}

std::vector<std::string> checked_events(const nlohmann::json* value) {
  if (!value) throw Error::invalid_field("events", "is required");
  if (!value->is_array() || value->empty() || value->size() > kMaxEvents) {
    throw Error::invalid_field(
        "events", "must be a list of 1 to " + std::to_string(kMaxEvents) + " event names");
  }
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (std::size_t i = 0; i < value->size(); ++i) {
    const auto& item = (*value)[i];
    std::string field = "events[" + std::to_string(i) + "]";
    if (!item.is_string() || !webhooks::is_event_type(item.get<std::string>())) {
      throw Error::invalid_field(field, "is not an event a webhook can subscribe to");
    }
    if (!seen.insert(item.get<std::string>()).second) {
      throw Error::invalid_field(field, "is named twice");
    }
    out.push_back(item.get<std::string>());
  }
  return out;
}

}  // namespace

// After the commit (the Idempotency-Key's unit may still be open): a load before it would
// keep the webhooks as they were.
void subscriptions_changed(WebhookRoutesState& state) {
  if (!state.subscriptions) return;
  state.pool->after_commit([&state] { state.subscriptions->changed(); });
}

void add_webhook_routes(Router& router, WebhookRoutesState& state) {
  router.add({.method = Method::kGet,
              .pattern = "/v1/webhooks",
              .handler =
                  [&state](const Request& req, const Principal& p) {
                    const std::string& org_id = *p.org_id;
                    QueryParams query(req, {"limit", "cursor"});
                    auto page = state.pool->read("webhook_list", [&](Tx& tx) {
                      return state.store->list(tx, org_id, query.limit(), query.cursor());
                    });
                    nlohmann::json items = nlohmann::json::array();
                    for (const auto& w : page.items) items.push_back(webhook_json(w));
                    return list_response(200, std::move(items), page.next_cursor);
                  },
              .needs_org = true,
              .scope = kWebhookScope,
              .summary = "The organisation's webhooks, oldest first.",
              .tag = "webhooks"});

  router.add({.method = Method::kPost,
              .pattern = "/v1/webhooks",
              .handler =
                  [&state](const Request& req, const Principal& p) {
                    const std::string& org_id = *p.org_id;
                    auto body = parse_json_body(req);
                    JsonObjectReader in(body);
                    std::string url_text = in.required_string("url", webhooks::kMaxUrlBytes);
                    auto events = checked_events(in.optional_value("events"));
                    in.finish();
                    std::string url = checked_url(url_text, state.allow_internal);
                    auto [record, secret] = state.pool->transact("webhook_create", [&](Tx& tx) {
                      return state.store->create(tx, org_id, url, events, actor_of(req, p));
                    });
                    subscriptions_changed(state);
                    auto out = webhook_json(record);
                    // The only time the secret leaves the server.
                    out["secret"] = secret;
                    return json_response(201, out);
                  },
              .needs_org = true,
              .scope = kWebhookScope,
              .waits_for_announcement = true,
              .summary = "Create a webhook; its signing secret is shown only in this answer.",
              .tag = "webhooks"});

  router.add({.method = Method::kGet,
              .pattern = "/v1/webhooks/{id}",
              .handler =
                  [&state](const Request& req, const Principal& p) {
                    const std::string& org_id = *p.org_id;
                    std::string id = webhook_id(req);
                    auto hook = state.pool->read(
                        "webhook_get", [&](Tx& tx) { return state.store->get(tx, org_id, id); });
                    if (!hook) throw Error(ErrorCode::kNotFound, "No such webhook.");
                    return json_response(200, webhook_json(*hook));
                  },
              .needs_org = true,
              .scope = kWebhookScope,
              .summary = "One webhook of the organisation (without its secret).",
              .tag = "webhooks"});

  router.add({.method = Method::kDelete,
              .pattern = "/v1/webhooks/{id}",
              .handler =
                  [&state](const Request& req, const Principal& p) {
                    const std::string& org_id = *p.org_id;
                    std::string id = webhook_id(req);
                    bool removed = state.pool->transact("webhook_remove", [&](Tx& tx) {
                      return state.store->remove(tx, org_id, id, actor_of(req, p));
                    });
                    if (!removed) throw Error(ErrorCode::kNotFound, "No such webhook.");
                    subscriptions_changed(state);
                    Response r;
                    r.status = 204;
                    return r;
                  },
              .needs_org = true,
              .scope = kWebhookScope,
              .waits_for_announcement = true,
              .summary = "Delete a webhook; what it had still to deliver is dropped.",
              .tag = "webhooks"});

  router.add({.method = Method::kGet,
              .pattern = "/v1/webhooks/{id}/deliveries",
              .handler =
                  [&state](const Request& req, const Principal& p) {
                    const std::string& org_id = *p.org_id;
                    std::string id = webhook_id(req);
                    QueryParams query(req, {"limit", "cursor"});
                    auto page = state.pool->transact("webhook_deliveries", [&](Tx& tx) {
                      if (!state.store->get(tx, org_id, id)) {
                        throw Error(ErrorCode::kNotFound, "No such webhook.");
                      }
                      return state.store->deliveries(tx, id, query.limit(), query.cursor());
                    });
                    nlohmann::json items = nlohmann::json::array();
                    for (const auto& d : page.items) items.push_back(delivery_json(d));
                    return list_response(200, std::move(items), page.next_cursor);
                  },
              .needs_org = true,
              .scope = kWebhookScope,
              .summary = "The webhook's delivery log, newest first, each with its attempts.",
              .tag = "webhooks"});

  router.add({.method = Method::kPost,
              .pattern = "/v1/webhooks/{id}/test",
              .handler =
                  [&state](const Request& req, const Principal& p) {
                    const std::string& org_id = *p.org_id;
                    std::string id = webhook_id(req);
                    auto ping = state.pool->transact(
                        "webhook_ping", [&](Tx& tx) { return state.store->ping(tx, org_id, id); });
                    if (!ping) throw Error(ErrorCode::kNotFound, "No such webhook.");
                    return json_response(
                        202, {{"event_id", ping->first},
                              {"delivery_id", webhooks::delivery_id_text(ping->second)}});
                  },
              .needs_org = true,
              .scope = kWebhookScope,
              .summary = "Send the webhook a webhook.ping event; watch its delivery log for it.",
              .tag = "webhooks"});
}

}  // namespace gpurent::http
