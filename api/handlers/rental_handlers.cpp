// Rental routes: each parses, makes one call to the scheduler's use cases
// (scheduler/rentals.h) or views, and encodes the answer.
#include "api/handlers/rental_handlers.h"

#include "api/handlers/json_values.h"
#include "api/handlers/measured_json.h"
#include "api/handlers/query_params.h"
#include "api/handlers/rental_json.h"
#include "api/json_body.h"
#include "api/responses.h"
#include "core/crypto.h"
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

// The rental as its owner sees it: with the SSH details of an active one, and where a
// waiting one stands when the use case says.
nlohmann::json view_json(const scheduler::RentalView& v) {
  auto out = rental_json(v.rental);
  out["ssh"] = ssh_json(v.ssh);
  if (v.waitlist) {
    out["waitlist"] = {{"position", v.waitlist->position},
                       {"estimated_start", optional_json(v.waitlist->estimated_start)}};
  }
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
scheduler::BookingRequest read_booking(const Request& req) {
  auto body = parse_json_body(req);
  JsonObjectReader in(body);
  scheduler::BookingRequest r;
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
  return r;
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

nlohmann::json quote_json(const scheduler::Quote& quote, const scheduler::NoCapacity& none) {
  nlohmann::json alternatives = nlohmann::json::array();
  for (const auto& a : none.alternatives) alternatives.push_back(alternative_json(a));
  nlohmann::json preview = nullptr;
  if (quote.preview) {
    preview = {{"node_id", quote.preview->node_id}, {"gpu_indices", quote.preview->gpu_indices}};
  }
  return {{"gpu_model", quote.gpu_model},
          {"price",
           {{"per_day", quote.price_per_day.to_json()},
            {"total", quote.total.to_json()},
            {"list_per_day", quote.list_price_per_day.to_json()},
            {"discount_percent", quote.discount_percent}}},
          {"available", quote.available},
          {"period", period_json(quote.period)},
          {"earliest_start", optional_json(quote.earliest_start)},
          {"node_preview", preview},
          {"alternatives", alternatives}};
}

// The report's fields, its signature and the key's id, and the exact bytes signed: a checker
// verifies `payload` (the report without these four members) as it is, never a
// re-serialisation.
nlohmann::json signed_report_json(const scheduler::SignedReport& r) {
  nlohmann::json out = r.report;
  out["signature"] = crypto::base64(r.signature);
  out["key_id"] = r.key_id;
  out["algorithm"] = "Ed25519";
  out["payload"] = crypto::base64(r.payload);
  return out;
}

nlohmann::json events_json(const std::vector<scheduler::RentalEvent>& events) {
  nlohmann::json items = nlohmann::json::array();
  for (const auto& e : events) {
    items.push_back(
        {{"at", time_json(e.at)},
         {"from_state", e.from_state ? nlohmann::json(scheduler::to_string(*e.from_state))
                                     : nlohmann::json(nullptr)},
         {"to_state", scheduler::to_string(e.to_state)},
         {"reason", e.reason}});
  }
  return {{"items", items}};
}

nlohmann::json certificate_json(const scheduler::IssuedUserCertificate& issued) {
  return {{"certificate", issued.certificate},
          {"serial", std::to_string(issued.serial)},
          {"key_id", issued.key_id},
          {"principals", issued.principals},
          {"user", issued.user},
          {"valid_after", time_json(issued.valid_after)},
          {"valid_before", time_json(issued.valid_before)}};
}

// `state` as a query parameter: a rental state by name.
std::optional<RentalState> state_param(const QueryParams& query) {
  auto s = query.text("state");
  if (!s) return std::nullopt;
  auto state = scheduler::parse_rental_state(*s);
  if (!state) throw Error::invalid_field("state", "is not a rental state");
  return state;
}

// {} or {"reason": "…"}, or no body at all.
std::string terminate_reason(const Request& req) {
  std::string reason = "terminated by the customer";
  if (req.body.empty()) return reason;
  auto body = parse_json_body(req);
  JsonObjectReader in(body);
  if (auto given = in.optional_string("reason", 500))
    reason = printable_text("reason", *given, 500);
  in.finish();
  return reason;
}

// {"allow_busy_gpus": bool}, all optional; an empty body is none.
bool allow_busy_gpus(const Request& req) {
  if (req.body.empty()) return false;
  auto body = parse_json_body(req);
  JsonObjectReader in(body);
  bool allowed = in.optional_bool("allow_busy_gpus").value_or(false);
  in.finish();
  return allowed;
}

nlohmann::json doctor_json(const scheduler::DoctorReport& r) {
  nlohmann::json checks = nlohmann::json::array();
  for (const auto& c : r.checks) {
    checks.push_back(
        {{"name", c.name}, {"verdict", c.verdict}, {"detail", c.detail}, {"advice", c.advice}});
  }
  return {{"checks", std::move(checks)}, {"verdict", r.verdict}};
}

// {"days": n}
int extend_days(const Request& req) {
  auto body = parse_json_body(req);
  JsonObjectReader in(body);
  auto days = in.required_int("days", limits::kMinRentalDays, limits::kMaxRentalDays);
  in.finish();
  return static_cast<int>(days);
}

// {"public_key": "ssh-ed25519 …"}
identity::SshPublicKey certificate_key(const Request& req) {
  auto body = parse_json_body(req);
  JsonObjectReader in(body);
  std::string text = in.required_string("public_key", identity::kMaxSshPublicKeyTextBytes);
  in.finish();
  return identity::parse_ssh_public_key(text);
}

scheduler::LinkNeed link_need_param(const QueryParams& query, scheduler::LinkNeed otherwise) {
  auto i = query.text("interconnect");
  if (!i) return otherwise;
  auto need = scheduler::parse_link_need(*i);
  if (!need) throw Error::invalid_field("interconnect", "must be nvlink or any");
  return *need;
}

scheduler::OfferQuery offer_query(const Request& req) {
  QueryParams query(req, {"gpu_model", "gpu_count", "interconnect", "start", "days"});
  scheduler::OfferQuery q;
  q.gpu_model = query.text("gpu_model");
  q.gpu_count = query.whole_number("gpu_count", 1, limits::kMaxRentalGpus);
  if (query.text("interconnect")) q.link_need = link_need_param(query, scheduler::LinkNeed::kAny);
  q.days = query.whole_number("days", limits::kMinRentalDays, limits::kMaxRentalDays).value_or(1);
  if (auto s = query.text("start"); s && *s != "now") {
    // A date means the site's midnight there, as in a booking; an instant is one instant.
    if (s->size() == 10) {
      q.start_date = *s;
    } else {
      q.start = parse_rfc3339(*s);
      if (!q.start) throw Error::invalid_field("start", "must be now, an RFC 3339 time or a date");
    }
  }
  return q;
}

nlohmann::json offers_json(const std::vector<scheduler::Offer>& offers) {
  nlohmann::json items = nlohmann::json::array();
  for (const auto& o : offers) {
    nlohmann::json measured = measured_fields(o.measured, o.price_per_day, o.gpu_count);
    items.push_back({{"gpu_model", o.gpu_model},
                     {"gpu_count", o.gpu_count},
                     {"interconnect", o.interconnect},
                     {"link_need", scheduler::to_string(o.link_need)},
                     {"vram_total_gb", o.vram_total_gb},
                     {"price_per_day", o.price_per_day.to_json()},
                     {"available_now", o.available_now},
                     {"earliest_start", optional_json(o.earliest_start)},
                     {"earliest_date", optional_json(o.earliest_date)},
                     {"site", o.site},
                     {"measured", measured["measured"]},
                     {"price_per_measured_tflops_day", measured["price_per_measured_tflops_day"]},
                     {"price_per_measured_tensor_tflops_day",
                      measured["price_per_measured_tensor_tflops_day"]}});
  }
  return {{"items", items}};
}

struct AvailabilityQuery {
  std::string gpu_model;
  int gpu_count = 1;
  scheduler::LinkNeed link_need = scheduler::LinkNeed::kNvlink;
  std::string from;  // YYYY-MM-DD; today (UTC) when not asked
  int days = 30;
};

AvailabilityQuery availability_query(const Request& req, const Clock& clock) {
  QueryParams query(req, {"gpu_model", "gpu_count", "interconnect", "from", "days"});
  auto model = query.text("gpu_model");
  if (!model) throw Error::invalid_field("gpu_model", "is required");
  AvailabilityQuery q{.gpu_model = *model};
  q.gpu_count = query.whole_number("gpu_count", 1, limits::kMaxRentalGpus).value_or(1);
  q.link_need = link_need_param(query, q.link_need);
  q.days = query.whole_number("days", 1, limits::kMaxAvailabilityDays).value_or(q.days);
  q.from = query.text("from").value_or(format_rfc3339(clock.now()).substr(0, 10));
  return q;
}

nlohmann::json admin_rental_json(const RentalRecord& r) {
  auto item = rental_json(r);
  item["org_id"] = r.org_id;
  return item;
}

// How long GET …/wait holds a request at most (seconds), 60 when not asked.
constexpr int kMaxWaitSeconds = 300;

CallAgain wait_again(const QueryParams& query) {
  int timeout_s = query.whole_number("timeout_s", 0, kMaxWaitSeconds).value_or(60);
  return CallAgain{.delay = std::chrono::milliseconds(250),
                   .max_delay = std::chrono::milliseconds(2000),
                   .patience = std::chrono::seconds(timeout_s)};
}

}  // namespace

nlohmann::json node_rentals_json(Tx& tx, scheduler::RentalStore& rentals,
                                 const std::string& node_id) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& r : rentals.node_rentals(tx, node_id, 50)) out.push_back(admin_rental_json(r));
  return out;
}

void add_rental_routes(Router& router, RentalRoutesState& state) {
  router.add(
      {.method = Method::kPost,
       .pattern = "/v1/rentals",
       .handler =
           [&state](const Request& req, const Principal& p) {
             auto request = read_booking(req);
             try {
               auto rental = state.rentals->book(caller_of(req, p), std::move(request));
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
                    auto request = read_booking(req);
                    scheduler::NoCapacity none;
                    auto quote = state.rentals->quote(caller_of(req, p), std::move(request), &none);
                    return json_response(200, quote_json(quote, none));
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
                    auto page = state.rentals->list(caller_of(req, p), state_param(query),
                                                    query.limit(), query.cursor());
                    nlohmann::json items = nlohmann::json::array();
                    for (const auto& v : page.items) items.push_back(view_json(v));
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
                    return json_response(
                        200, view_json(state.rentals->show(caller_of(req, p), rental_id(req))));
                  },
              .needs_org = true,
              .scope = "rentals:read",
              .summary = "One rental.",
              .tag = "rentals"});

  if (state.rentals->issues_certificates()) {
    router.add({.method = Method::kPost,
                .pattern = "/v1/rentals/{id}/ssh-certificate",
                .handler =
                    [&state](const Request& req, const Principal& p) {
                      std::string id = rental_id(req);
                      auto issued =
                          state.rentals->certificate(caller_of(req, p), id, certificate_key(req));
                      return json_response(200, certificate_json(issued));
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
                    auto events = state.rentals->events(caller_of(req, p), rental_id(req));
                    return json_response(200, events_json(events));
                  },
              .needs_org = true,
              .scope = "rentals:read",
              .summary = "The rental's state changes, oldest first.",
              .tag = "rentals"});

  router.add({.method = Method::kGet,
              .pattern = "/v1/rentals/{id}/report",
              .handler =
                  [&state](const Request& req, const Principal& p) {
                    auto signed_report = state.reports->report(caller_of(req, p), rental_id(req));
                    return json_response(200, signed_report_json(signed_report));
                  },
              .needs_org = true,
              .scope = "rentals:read",
              .summary = "The rental's handover report (its GPUs, links, measured figures, "
                         "image, ECC), signed with the platform's report key.",
              .tag = "rentals"});

  router.add({.method = Method::kPost,
              .pattern = "/v1/rentals/{id}/doctor",
              .handler =
                  [&state](const Request& req, const Principal& p) {
                    std::string id = rental_id(req);
                    auto report =
                        state.doctor->examine(caller_of(req, p), id, allow_busy_gpus(req));
                    return json_response(200, doctor_json(report));
                  },
              .needs_org = true,
              .scope = "rentals:write",
              .summary = "Examine a live rental's node without disturbing it: driver against the "
                         "image, ECC, the links between its GPUs, NCCL when allowed; a verdict "
                         "and advice per check.",
              .tag = "rentals",
              // Not replayed: each call examines the node as it is now, and its task must be
              // committed (and so sent to the agent) while the request waits for the answer,
              // which an Idempotency-Key's enclosing transaction would hold back.
              .idempotency_key = false});

  router.add({.method = Method::kGet,
              .pattern = "/v1/rentals/{id}/telemetry",
              .handler =
                  [&state](const Request& req, const Principal& p) {
                    std::string id = rental_id(req);
                    QueryParams query(req, {"from", "to", "step"});
                    std::optional<std::chrono::seconds> step;
                    if (auto s = query.whole_number("step", 10, 31 * 86400)) {
                      step = std::chrono::seconds(*s);
                    }
                    return json_response(
                        200, state.telemetry->read(caller_of(req, p), id, query.timestamp("from"),
                                                   query.timestamp("to"), step));
                  },
              .needs_org = true,
              .scope = "rentals:read",
              .summary = "The rental's GPUs' telemetry within its period, averaged per step "
                         "(seconds, at least 10), and the energy they drew.",
              .tag = "rentals"});

  router.add({.method = Method::kGet,
              .pattern = "/v1/platform/report-key",
              .handler =
                  [&state](const Request&, const Principal&) {
                    return json_response(200,
                                         {{"algorithm", "Ed25519"},
                                          {"key_id", state.reports->key_id()},
                                          {"public_key_pem", state.reports->public_key_pem()}});
                  },
              .access = Access::kAnyone,
              .summary = "The public key handover reports are signed with (PEM), to check "
                         "them offline.",
              .tag = "rentals"});

  router.add({.method = Method::kPost,
              .pattern = "/v1/rentals/{id}/terminate",
              .handler =
                  [&state](const Request& req, const Principal& p) {
                    std::string id = rental_id(req);
                    auto rental =
                        state.rentals->terminate(caller_of(req, p), id, terminate_reason(req));
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
             int more = extend_days(req);
             try {
               return json_response(
                   200, rental_json(state.rentals->extend(caller_of(req, p), id, more)));
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
             auto target = state_param(query).value_or(RentalState::kActive);
             CallAgain again = wait_again(query);
             auto answer = state.rentals->wait(caller_of(req, p), id, target);
             Response r = json_response(200, view_json(answer.view));
             // Not there yet: the server calls the handler again from a timer, holding
             // no worker meanwhile, until the timeout; then this answer goes out.
             if (answer.keep_waiting) r.call_again = again;
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
                    scheduler::RentalFilter filter{
                        .org_id = query.id("org_id", id_prefix::kOrg),
                        .state = state_param(query),
                        .node_id = query.id("node_id", id_prefix::kNode)};
                    auto page = state.pool->read("rental_list_all", [&](Tx& tx) {
                      return state.store->list_all(tx, filter, query.limit(), query.cursor());
                    });
                    nlohmann::json items = nlohmann::json::array();
                    for (const auto& r : page.items) items.push_back(admin_rental_json(r));
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
             auto q = offer_query(req);
             auto offers = state.pool->read("catalog_offers",
                                            [&](Tx& tx) { return state.views->offers(tx, q); });
             return json_response(200, offers_json(offers));
           },
       .summary = "Rental shapes on sale, with whether they fit now and their earliest start.",
       .tag = "catalog"});

  router.add({.method = Method::kGet,
              .pattern = "/v1/availability",
              .handler =
                  [&state](const Request& req, const Principal&) {
                    auto q = availability_query(req, *state.clock);
                    auto calendar = state.pool->read("catalog_availability", [&](Tx& tx) {
                      return state.views->availability(tx, q.gpu_model, q.gpu_count, q.link_need,
                                                       q.from, q.days);
                    });
                    nlohmann::json out = nlohmann::json::array();
                    for (const auto& d : calendar)
                      out.push_back(
                          {{"date", d.date}, {"available", d.available}, {"from_now", d.from_now}});
                    return json_response(200, {{"days", out}});
                  },
              .summary = "How many rentals of a shape could start on each coming day.",
              .tag = "catalog"});
}

}  // namespace gpurent::http
