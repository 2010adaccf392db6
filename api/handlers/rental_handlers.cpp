// Rental routes. Each is one use case in one transaction: booking reads the org's
// guardrails and checks the SSH keys in the same transaction that allocates the GPUs, so a
// key deleted or a limit lowered meanwhile cannot slip through.
#include "api/handlers/rental_handlers.h"

#include "api/handlers/json_values.h"
#include "api/handlers/query_params.h"
#include "api/json_body.h"
#include "api/responses.h"
#include "core/db_errors.h"
#include "core/error.h"
#include "core/id.h"
#include "core/limits.h"
#include "identity/ssh_public_key.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>

namespace gpurent::http {
namespace {

using scheduler::RentalRecord;
using scheduler::RentalState;

nlohmann::json period_json(const scheduler::Period& p) {
  return {{"start", time_json(p.start)}, {"end", time_json(p.end)}};
}

nlohmann::json ssh_json(const std::optional<scheduler::SshDetails>& d) {
  if (!d) return nullptr;
  return {{"host", d->host},
          {"port", d->port},
          {"user", d->user},
          {"host_key_fingerprints", d->host_key_fingerprints},
          {"command", d->command},
          {"known_hosts", d->known_hosts},
          {"ssh_config", d->ssh_config}};
}

// What the owner may ask of the rental in its state, by name (scheduler/rental_state.h).
nlohmann::json actions_json(scheduler::RentalState state) {
  nlohmann::json out = nlohmann::json::array();
  for (auto a : scheduler::allowed_actions(state)) out.push_back(scheduler::to_string(a));
  return out;
}

// The states the rental may still come to (scheduler::reachable_from), by name.
nlohmann::json reachable_json(scheduler::RentalState state) {
  nlohmann::json out = nlohmann::json::array();
  for (auto s : scheduler::reachable_from(state)) out.push_back(scheduler::to_string(s));
  return out;
}

nlohmann::json rental_json(const RentalRecord& r) {
  return {{"id", r.id},
          {"name", r.name},
          {"state", scheduler::to_string(r.state)},
          {"final", scheduler::is_final(r.state)},
          {"allowed_actions", actions_json(r.state)},
          {"reachable_states", reachable_json(r.state)},
          {"gpu_model", r.gpu_model},
          {"gpu_count", r.gpu_count},
          {"interconnect", scheduler::to_string(r.link_need)},
          {"node_id", optional_json(r.node_id)},
          {"gpu_indices", r.gpu_indices},
          {"period", period_json(r.period)},
          {"days", r.days},
          {"image", {{"id", r.image_id}}},
          {"ssh_key_ids", r.ssh_key_ids},
          // Set by with_ssh() where the route reads the node: null until the rental is active.
          {"ssh", nullptr},
          {"price", {{"per_day", r.price_per_day.to_json()}, {"total", r.total_price().to_json()}}},
          {"pending_expires_at", optional_json(r.pending_expires_at)},
          {"created_at", time_json(r.created_at)},
          {"created_by", r.created_by},
          {"state_changed_at", time_json(r.state_changed_at)}};
}

// The rental as its owner sees it, with the SSH details of an active one.
nlohmann::json with_ssh(RentalRoutesState& state, Tx& tx, const RentalRecord& r) {
  auto out = rental_json(r);
  if (state.ssh) out["ssh"] = ssh_json(state.ssh->details(tx, r));
  return out;
}

// The rental id from the path; a malformed one is a rental that does not exist.
std::string rental_id(const Request& req) {
  return path_id(req, "id", id_prefix::kRental, "No such rental.");
}

scheduler::Start read_start(JsonObjectReader& in) {
  auto text = in.optional_string("start", 64);
  if (!text || *text == "now") return scheduler::StartNow{};
  if (text->size() == 10) return scheduler::StartDate{*text};
  auto at = parse_rfc3339(*text);
  if (!at) throw Error::invalid_field("start", "must be now, an RFC 3339 time or a date");
  return *at;
}

// {min_vram_gb?, bf16?, fp8?, architecture?}: at least one demand.
scheduler::ModelConstraints read_constraints(const nlohmann::json& value) {
  JsonObjectReader in(value, "constraints.");
  scheduler::ModelConstraints c;
  if (auto v = in.optional_int("min_vram_gb", 1, 4096)) c.min_vram_gb = static_cast<int>(*v);
  c.bf16 = in.optional_bool("bf16").value_or(false);
  c.fp8 = in.optional_bool("fp8").value_or(false);
  if (auto a = in.optional_string("architecture", 64)) {
    c.architecture = printable_text("constraints.architecture", *a, 64);
  }
  in.finish();
  if (c.empty()) {
    throw Error::invalid_field("constraints",
                               "must ask for something: min_vram_gb, bf16, fp8 or architecture");
  }
  return c;
}

// POST /v1/rentals and POST /v1/quotes take the same body.
scheduler::BookingRequest read_booking(const Request& req, const Principal& p) {
  auto body = parse_json_body(req);
  JsonObjectReader in(body);
  scheduler::BookingRequest r;
  r.org_id = *p.org_id;
  r.actor = actor_of(req, p);
  // A model by name, or constraints any model it takes must meet; one or the other.
  auto model = in.optional_string("gpu_model", 100);
  const auto* constraints = in.optional_value("constraints");
  if (model && constraints) {
    throw Error::invalid_field("constraints",
                               "cannot be given with gpu_model: name one or the other");
  }
  if (model) {
    r.gpu_model = *model;
  } else if (constraints) {
    r.constraints = read_constraints(*constraints);
  } else {
    throw Error::invalid_field("gpu_model", "is required (or constraints)");
  }
  r.gpu_count = static_cast<int>(in.required_int("gpu_count", 1, 64));
  auto interconnect = in.optional_string("interconnect", 16);
  if (interconnect) {
    auto need = scheduler::parse_link_need(*interconnect);
    if (!need) throw Error::invalid_field("interconnect", "must be nvlink or any");
    r.link_need = *need;
  }
  r.start = read_start(in);
  r.days =
      static_cast<int>(in.required_int("days", limits::kMinRentalDays, limits::kMaxRentalDays));
  r.image_id = in.required_string("image_id", 64);
  if (const auto* keys = in.optional_value("ssh_key_ids")) {
    if (!keys->is_array() || keys->size() > 20) {
      throw Error::invalid_field("ssh_key_ids", "must be a list of at most 20 SSH key ids");
    }
    for (const auto& k : *keys) {
      if (!k.is_string() || !is_valid_id(id_prefix::kSshKey, k.get<std::string>())) {
        throw Error::invalid_field("ssh_key_ids", "must hold SSH key ids (key_…)");
      }
      auto id = k.get<std::string>();
      if (std::find(r.ssh_key_ids.begin(), r.ssh_key_ids.end(), id) == r.ssh_key_ids.end()) {
        r.ssh_key_ids.push_back(std::move(id));
      }
    }
  }
  if (auto name = in.optional_string("name", 100)) r.name = printable_text("name", *name, 100);
  r.wait_for_capacity = in.optional_bool("wait_for_capacity").value_or(false);
  in.finish();
  r.token_limits = {p.guardrails.max_concurrent_gpus, p.guardrails.max_days,
                    p.guardrails.spend_limit_minor};
  return r;
}

// What the booking needs from identity, read in the booking's own transaction: the org's
// limits, and that every SSH key is the org's (another org's key is as unknown as none).
void complete_from_identity(Tx& tx, const RentalRoutesState& state, scheduler::BookingRequest& r) {
  if (auto org = state.orgs->get(tx, r.org_id)) {
    r.org_limits = {org->guardrails.max_concurrent_gpus, org->guardrails.max_days,
                    org->guardrails.spend_limit_minor};
  }
  for (const auto& id : r.ssh_key_ids) {
    if (!state.ssh_keys->get(tx, r.org_id, id)) {
      throw Error(
          ErrorCode::kInvalidRequest, "No such SSH key: " + id + ".",
          {{"field", "ssh_key_ids"}, {"reason", "names an SSH key this org does not have"}});
    }
  }
}

nlohmann::json alternative_json(const scheduler::Alternative& a) {
  return {{"gpu_model", a.gpu_model}, {"gpu_count", a.gpu_count}, {"start", time_json(a.start)}};
}

Response no_capacity_response(const scheduler::InsufficientCapacity& refusal) {
  const auto& d = refusal.details();
  nlohmann::json alternatives = nlohmann::json::array();
  for (const auto& a : d.alternatives) {
    alternatives.push_back(alternative_json(a));
  }
  Response r = error_response(
      Error(ErrorCode::kInsufficientCapacity, refusal.what(),
            {{"earliest_start", optional_json(d.earliest_start)}, {"alternatives", alternatives}}));
  // A booking that ended or a node back from maintenance can free GPUs at any time.
  r.set_header("Retry-After", "60");
  return r;
}

// The max_days guardrails of the org and of the caller's token, the stricter of the two.
std::optional<int> max_days_for(Tx& tx, const RentalRoutesState& state, const Principal& p) {
  std::optional<int> limit = p.guardrails.max_days;
  if (auto org = state.orgs->get(tx, *p.org_id); org && org->guardrails.max_days) {
    limit = limit ? std::min(*limit, *org->guardrails.max_days) : *org->guardrails.max_days;
  }
  return limit;
}

// A query parameter that is a whole number from 1 to `max`.
int small_int(std::string_view field, const std::string& text, int max) {
  int value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < 1 || value > max) {
    throw Error::invalid_field(field, "must be a whole number from 1 to " + std::to_string(max));
  }
  return value;
}

// This replica's own change is in its next calendar: the announcement that tells every
// replica reaches this one's listener only a moment after the commit.
// After the commit (the Idempotency-Key guard commits the booking with its response): a
// reload before it would see the node without the booking.
void capacity_changed(const RentalRoutesState& state, const scheduler::RentalRecord& rental) {
  if (!state.capacity || !rental.node_id) return;
  state.pool->after_commit(
      [capacity = state.capacity, node = *rental.node_id] { capacity->node_changed(node); });
}

// How long GET …/wait holds a request at most, and how often it looks again meanwhile.
constexpr int kMaxWaitSeconds = 300;

}  // namespace

nlohmann::json node_rentals_json(Tx& tx, scheduler::RentalStore& rentals,
                                 const std::string& node_id) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& r : rentals.node_rentals(tx, node_id, 50)) {
    auto item = rental_json(r);
    item["org_id"] = r.org_id;
    out.push_back(std::move(item));
  }
  return out;
}

void add_rental_routes(Router& router, RentalRoutesState& state) {
  router.add(
      {.method = Method::kPost,
       .pattern = "/v1/rentals",
       .handler =
           [&state](const Request& req, const Principal& p) {
             auto request = read_booking(req, p);
             try {
               auto rental = state.pool->transact("rental_book", [&](Tx& tx) {
                 complete_from_identity(tx, state, request);
                 return state.booking->book(tx, request);
               });
               capacity_changed(state, rental);
               return json_response(201, rental_json(rental));
             } catch (const scheduler::InsufficientCapacity& e) {
               return no_capacity_response(e);
             }
           },
       .needs_org = true,
       .scope = "rentals:write",
       .summary = "Book GPUs for whole days: placed at once, or waiting for capacity if asked.",
       .tag = "rentals"});

  router.add({.method = Method::kPost,
              .pattern = "/v1/quotes",
              .handler =
                  [&state](const Request& req, const Principal& p) {
                    auto request = read_booking(req, p);
                    scheduler::NoCapacity none;
                    auto quote = state.pool->read("rental_quote", [&](Tx& tx) {
                      complete_from_identity(tx, state, request);
                      return state.booking->quote(tx, request, &none);
                    });
                    nlohmann::json alternatives = nlohmann::json::array();
                    for (const auto& a : none.alternatives) {
                      alternatives.push_back(alternative_json(a));
                    }
                    nlohmann::json preview = nullptr;
                    if (quote.preview) {
                      preview = {{"node_id", quote.preview->node_id},
                                 {"gpu_indices", quote.preview->gpu_indices}};
                    }
                    return json_response(200,
                                         {{"gpu_model", quote.gpu_model},
                                          {"price",
                                           {{"per_day", quote.price_per_day.to_json()},
                                            {"total", quote.total.to_json()},
                                            {"list_per_day", quote.list_price_per_day.to_json()},
                                            {"discount_percent", quote.discount_percent}}},
                                          {"available", quote.available},
                                          {"period", period_json(quote.period)},
                                          {"earliest_start", optional_json(quote.earliest_start)},
                                          {"node_preview", preview},
                                          {"alternatives", alternatives}});
                  },
              .needs_org = true,
              .scope = "rentals:read",
              .summary = "Price and availability of a rental, booking nothing.",
              .tag = "rentals"});

  router.add({.method = Method::kGet,
              .pattern = "/v1/rentals",
              .handler =
                  [&state](const Request& req, const Principal& p) {
                    QueryParams query(req, {"state", "limit", "cursor"});
                    std::optional<RentalState> filter;
                    if (auto s = query.text("state")) {
                      filter = scheduler::parse_rental_state(*s);
                      if (!filter) throw Error::invalid_field("state", "is not a rental state");
                    }
                    nlohmann::json items = nlohmann::json::array();
                    auto page = state.pool->read("rental_list", [&](Tx& tx) {
                      auto rentals =
                          state.rentals->list(tx, *p.org_id, filter, query.limit(), query.cursor());
                      for (const auto& r : rentals.items) items.push_back(with_ssh(state, tx, r));
                      return rentals;
                    });
                    return list_response(200, std::move(items), page.next_cursor);
                  },
              .needs_org = true,
              .scope = "rentals:read",
              .summary = "The org's rentals, newest first, optionally of one state.",
              .tag = "rentals"});

  router.add({.method = Method::kGet,
              .pattern = "/v1/rentals/{id}",
              .handler =
                  [&state](const Request& req, const Principal& p) {
                    std::string id = rental_id(req);
                    nlohmann::json out;
                    state.pool->read("rental_get", [&](Tx& tx) {
                      auto rental = state.rentals->get(tx, *p.org_id, id);
                      if (!rental) throw Error(ErrorCode::kNotFound, "No such rental.");
                      out = with_ssh(state, tx, *rental);
                      if (rental->state == RentalState::kPending) {
                        auto standing = state.booking->standing(tx, *rental);
                        out["waitlist"] = {
                            {"position", standing.position},
                            {"estimated_start", optional_json(standing.estimated_start)}};
                      }
                      return 0;
                    });
                    return json_response(200, out);
                  },
              .needs_org = true,
              .scope = "rentals:read",
              .summary = "One rental.",
              .tag = "rentals"});

  if (state.ssh) {
    router.add({.method = Method::kPost,
                .pattern = "/v1/rentals/{id}/ssh-certificate",
                .handler =
                    [&state](const Request& req, const Principal& p) {
                      std::string id = rental_id(req);
                      auto body = parse_json_body(req);
                      JsonObjectReader in(body);
                      std::string text =
                          in.required_string("public_key", identity::kMaxSshPublicKeyTextBytes);
                      in.finish();
                      auto key = identity::parse_ssh_public_key(text);
                      scheduler::CertificateRequester requester{p.user.id, std::nullopt};
                      if (!p.token_id.empty()) requester.token_id = p.token_id;
                      auto issued = state.pool->transact("rental_ssh_certificate", [&](Tx& tx) {
                        auto r = state.rentals->get(tx, *p.org_id, id);
                        if (!r) throw Error(ErrorCode::kNotFound, "No such rental.");
                        return state.ssh->issue(tx, *r, key, requester);
                      });
                      return json_response(200, {{"certificate", issued.certificate},
                                                 {"serial", std::to_string(issued.serial)},
                                                 {"key_id", issued.key_id},
                                                 {"principals", issued.principals},
                                                 {"user", issued.user},
                                                 {"valid_after", time_json(issued.valid_after)},
                                                 {"valid_before", time_json(issued.valid_before)}});
                    },
                .needs_org = true,
                .scope = "rentals:write",
                .summary =
                    "Sign a public key into an SSH certificate for the rental: its own principal, "
                    "valid for exactly its period (scheduled, provisioning and active rentals).",
                .tag = "rentals"});
  }

  router.add({.method = Method::kGet,
              .pattern = "/v1/rentals/{id}/events",
              .handler =
                  [&state](const Request& req, const Principal& p) {
                    std::string id = rental_id(req);
                    auto [rental, events] = state.pool->transact("rental_events", [&](Tx& tx) {
                      auto r = state.rentals->get(tx, *p.org_id, id);
                      return std::make_pair(r, r ? state.rentals->events(tx, *p.org_id, id)
                                                 : std::vector<scheduler::RentalEvent>{});
                    });
                    if (!rental) throw Error(ErrorCode::kNotFound, "No such rental.");
                    nlohmann::json items = nlohmann::json::array();
                    for (const auto& e : events) {
                      items.push_back(
                          {{"at", time_json(e.at)},
                           {"from_state", e.from_state
                                              ? nlohmann::json(scheduler::to_string(*e.from_state))
                                              : nlohmann::json(nullptr)},
                           {"to_state", scheduler::to_string(e.to_state)},
                           {"reason", e.reason}});
                    }
                    return json_response(200, {{"items", items}});
                  },
              .needs_org = true,
              .scope = "rentals:read",
              .summary = "The rental's state changes, oldest first.",
              .tag = "rentals"});

  router.add({.method = Method::kPost,
              .pattern = "/v1/rentals/{id}/terminate",
              .handler =
                  [&state](const Request& req, const Principal& p) {
                    std::string id = rental_id(req);
                    // The body is optional: {} or {"reason": "…"}.
                    std::string reason = "terminated by the customer";
                    if (!req.body.empty()) {
                      auto body = parse_json_body(req);
                      JsonObjectReader in(body);
                      if (auto given = in.optional_string("reason", 500)) {
                        reason = printable_text("reason", *given, 500);
                      }
                      in.finish();
                    }
                    auto actor = actor_of(req, p);
                    auto rental = state.pool->transact("rental_terminate", [&](Tx& tx) {
                      auto r = state.rentals->lock(tx, *p.org_id, id);
                      if (!r) throw Error(ErrorCode::kNotFound, "No such rental.");
                      state.lifecycle->terminate(tx, *r, state.clock->now(), reason, actor.user_id);
                      return *state.rentals->get(tx, *p.org_id, id);
                    });
                    capacity_changed(state, rental);
                    return json_response(200, rental_json(rental));
                  },
              .needs_org = true,
              .scope = "rentals:write",
              .summary = "End a rental: cancelled before its start, released while it runs.",
              .tag = "rentals"});

  router.add(
      {.method = Method::kPost,
       .pattern = "/v1/rentals/{id}/extend",
       .handler =
           [&state](const Request& req, const Principal& p) {
             std::string id = rental_id(req);
             auto body = parse_json_body(req);
             JsonObjectReader in(body);
             int more = static_cast<int>(
                 in.required_int("days", limits::kMinRentalDays, limits::kMaxRentalDays));
             in.finish();
             try {
               auto extended = state.pool->transact("rental_extend", [&](Tx& tx) {
                 auto r = state.rentals->lock(tx, *p.org_id, id);
                 if (!r) throw Error(ErrorCode::kNotFound, "No such rental.");
                 billing::SpendLimits spend{.token_monthly_minor = p.guardrails.spend_limit_minor};
                 if (auto org = state.orgs->get(tx, *p.org_id)) {
                   spend.org_monthly_minor = org->guardrails.spend_limit_minor;
                 }
                 return state.booking->extend(tx, *r, more, max_days_for(tx, state, p), spend,
                                              actor_of(req, p).user_id);
               });
               capacity_changed(state, extended);
               return json_response(200, rental_json(extended));
             } catch (const scheduler::InsufficientCapacity& e) {
               return no_capacity_response(e);
             }
           },
       .needs_org = true,
       .scope = "rentals:write",
       .summary =
           "Add whole days to a rental on the same GPUs (409 when they are booked after it).",
       .tag = "rentals"});

  router.add(
      {.method = Method::kGet,
       .pattern = "/v1/rentals/{id}/wait",
       .handler =
           [&state](const Request& req, const Principal& p) {
             std::string id = rental_id(req);
             QueryParams query(req, {"state", "timeout_s"});
             RentalState target = RentalState::kActive;
             if (auto s = query.text("state")) {
               auto parsed = scheduler::parse_rental_state(*s);
               if (!parsed) throw Error::invalid_field("state", "is not a rental state");
               target = *parsed;
             }
             int timeout_s = 60;
             if (auto t = query.text("timeout_s")) {
               int value = -1;
               auto [end, ec] = std::from_chars(t->data(), t->data() + t->size(), value);
               if (ec != std::errc() || end != t->data() + t->size() || value < 0 ||
                   value > kMaxWaitSeconds) {
                 throw Error::invalid_field("timeout_s", "must be 0 to 300 seconds");
               }
               timeout_s = value;
             }
             nlohmann::json out;
             auto rental = state.pool->read("rental_wait", [&](Tx& tx) {
               auto found = state.rentals->get(tx, *p.org_id, id);
               if (found) out = with_ssh(state, tx, *found);
               return found;
             });
             if (!rental) throw Error(ErrorCode::kNotFound, "No such rental.");
             Response r = json_response(200, out);
             // Reached, or never will be: answer now. Otherwise look again later, holding no
             // worker meanwhile (the server calls the handler again from a timer), until the
             // timeout; then this answer, the rental as it is, goes out.
             if (rental->state != target && scheduler::can_reach(rental->state, target)) {
               r.call_again = CallAgain{.delay = std::chrono::milliseconds(250),
                                        .max_delay = std::chrono::milliseconds(2000),
                                        .patience = std::chrono::seconds(timeout_s)};
             }
             return r;
           },
       .needs_org = true,
       .scope = "rentals:read",
       .summary = "Long-poll until the rental reaches a state, fails, or the timeout passes.",
       .tag = "rentals"});

  router.add({.method = Method::kGet,
              .pattern = "/v1/admin/rentals",
              .handler =
                  [&state](const Request& req, const Principal&) {
                    QueryParams query(req, {"org_id", "state", "node_id", "limit", "cursor"});
                    scheduler::RentalFilter filter;
                    filter.org_id = query.id("org_id", id_prefix::kOrg);
                    filter.node_id = query.id("node_id", id_prefix::kNode);
                    if (auto s = query.text("state")) {
                      filter.state = scheduler::parse_rental_state(*s);
                      if (!filter.state)
                        throw Error::invalid_field("state", "is not a rental state");
                    }
                    auto page = state.pool->read("rental_list_all", [&](Tx& tx) {
                      return state.rentals->list_all(tx, filter, query.limit(), query.cursor());
                    });
                    nlohmann::json items = nlohmann::json::array();
                    for (const auto& r : page.items) {
                      auto item = rental_json(r);
                      item["org_id"] = r.org_id;
                      items.push_back(std::move(item));
                    }
                    return list_response(200, std::move(items), page.next_cursor);
                  },
              .platform_admin = true,
              .summary = "Every org's rentals, newest first, filtered by org, state or node.",
              .tag = "admin"});
  router.add(
      {.method = Method::kGet,
       .pattern = "/v1/offers",
       .handler =
           [&state](const Request& req, const Principal&) {
             QueryParams query(req, {"gpu_model", "gpu_count", "interconnect", "start", "days"});
             scheduler::OfferQuery q;
             q.gpu_model = query.text("gpu_model");
             if (auto c = query.text("gpu_count")) q.gpu_count = small_int("gpu_count", *c, 64);
             if (auto i = query.text("interconnect")) {
               auto need = scheduler::parse_link_need(*i);
               if (!need) throw Error::invalid_field("interconnect", "must be nvlink or any");
               q.link_need = *need;
             }
             if (auto d = query.text("days"))
               q.days = small_int("days", *d, limits::kMaxRentalDays);
             if (auto s = query.text("start"); s && *s != "now") {
               q.start = parse_rfc3339(s->size() == 10 ? *s + "T00:00:00Z" : *s);
               if (!q.start) {
                 throw Error::invalid_field("start", "must be now, an RFC 3339 time or a date");
               }
             }
             auto offers = state.pool->read("catalog_offers",
                                            [&](Tx& tx) { return state.views->offers(tx, q); });
             nlohmann::json items = nlohmann::json::array();
             for (const auto& o : offers) {
               items.push_back({{"gpu_model", o.gpu_model},
                                {"gpu_count", o.gpu_count},
                                {"interconnect", o.interconnect},
                                {"vram_total_gb", o.vram_total_gb},
                                {"price_per_day", o.price_per_day.to_json()},
                                {"available_now", o.available_now},
                                {"earliest_start", optional_json(o.earliest_start)},
                                {"earliest_date", optional_json(o.earliest_date)},
                                {"site", o.site}});
             }
             return json_response(200, {{"items", items}});
           },
       .summary = "Rental shapes on sale, with whether they fit now and their earliest start.",
       .tag = "catalog"});

  router.add(
      {.method = Method::kGet,
       .pattern = "/v1/availability",
       .handler =
           [&state](const Request& req, const Principal&) {
             QueryParams query(req, {"gpu_model", "gpu_count", "interconnect", "from", "days"});
             auto model = query.text("gpu_model");
             if (!model) throw Error::invalid_field("gpu_model", "is required");
             int count = 1;
             if (auto c = query.text("gpu_count")) count = small_int("gpu_count", *c, 64);
             scheduler::LinkNeed need = scheduler::LinkNeed::kNvlink;
             if (auto i = query.text("interconnect")) {
               auto parsed = scheduler::parse_link_need(*i);
               if (!parsed) throw Error::invalid_field("interconnect", "must be nvlink or any");
               need = *parsed;
             }
             int days = 30;
             if (auto d = query.text("days")) days = small_int("days", *d, 90);
             std::string from =
                 query.text("from").value_or(format_rfc3339(state.clock->now()).substr(0, 10));
             auto calendar = state.pool->read("catalog_availability", [&](Tx& tx) {
               return state.views->availability(tx, *model, count, need, from, days);
             });
             nlohmann::json out = nlohmann::json::array();
             for (const auto& d : calendar) {
               out.push_back({{"date", d.date}, {"available", d.available}});
             }
             return json_response(200, {{"days", out}});
           },
       .summary = "How many rentals of a shape could start on each coming day.",
       .tag = "catalog"});
}

}  // namespace gpurent::http
