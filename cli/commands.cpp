// The commands. Each is a function of the parsed arguments and the API client.
#include "cli/commands.h"

#include "cli/exit_codes.h"
#include "cli/output.h"
#include "cli/ssh_login.h"
#include "core/limits.h"

#include <fstream>
#include <sstream>
#include <thread>

namespace gpurent::cli {
namespace {

using nlohmann::json;

constexpr long long kDefaultWaitSeconds = 30 * 60;
// One long-poll holds the request at most this long; the wait loop asks again after it.
constexpr long long kLongPollSeconds = 60;

std::string required(const ParsedArgs& args, const std::string& option) {
  auto v = args.get(option);
  if (!v || v->empty()) throw UsageError(args.command + " needs --" + option, args.command);
  return *v;
}

// Whether the rental, as the server sent it, may still come to `target`: the server lists
// the states it may reach (the CLI keeps no copy of the state machine).
bool can_still_become(const json& rental, const std::string& target) {
  const auto it = rental.find("reachable_states");
  if (it == rental.end() || !it->is_array()) return true;  // an older server: keep waiting
  for (const auto& s : *it) {
    if (s.is_string() && s.get<std::string>() == target) return true;
  }
  return false;
}

// Query string from the options that are set: "?a=1&b=2", or "".
std::string query(const ParsedArgs& args,
                  const std::vector<std::pair<std::string, std::string>>& option_to_param) {
  std::string q;
  for (const auto& [option, param] : option_to_param) {
    if (auto v = args.get(option)) q += (q.empty() ? "?" : "&") + param + "=" + url_encode(*v);
  }
  return q;
}

void print_json(CommandContext& ctx, const json& value) {
  ctx.out << value.dump(2) << "\n";
}

std::string gpus_of(const json& r) {
  return std::to_string(r.value("gpu_count", 0)) + " x " + r.value("gpu_model", "");
}

void print_rental(CommandContext& ctx, const json& r) {
  std::vector<std::pair<std::string, std::string>> fields{
      {"id", cell(r.value("id", json()))},
      {"name", cell(r.value("name", json()))},
      {"state", cell(r.value("state", json()))},
      {"gpus", gpus_of(r)},
      {"node", cell(r.value("node_id", json()))},
      {"start", cell(r.contains("period") ? r["period"].value("start", json()) : json())},
      {"end", cell(r.contains("period") ? r["period"].value("end", json()) : json())},
      {"days", cell(r.value("days", json()))},
      {"price per day",
       r.contains("price") ? format_money(r["price"].value("per_day", json())) : "-"},
      {"total", r.contains("price") ? format_money(r["price"].value("total", json())) : "-"},
  };
  if (r.contains("ssh") && r["ssh"].is_object()) {
    fields.emplace_back("ssh", r["ssh"].value("command", ""));
    fields.emplace_back("login", "gpurent ssh " + r.value("id", ""));
  }
  print_fields(ctx.out, fields);
}

json get_rental(CommandContext& ctx, const std::string& id) {
  return ctx.api.get("/v1/rentals/" + url_encode(id)).json();
}

int cmd_offers(CommandContext& ctx) {
  const auto& a = ctx.args;
  if (auto c = a.get("gpu-count")) parse_int_option("gpu-count", *c, 1, limits::kMaxRentalGpus);
  if (auto d = a.get("days"))
    parse_int_option("days", *d, limits::kMinRentalDays, limits::kMaxRentalDays);
  json page = ctx.api
                  .get("/v1/offers" + query(a, {{"gpu-model", "gpu_model"},
                                                {"gpu-count", "gpu_count"},
                                                {"interconnect", "interconnect"},
                                                {"start", "start"},
                                                {"days", "days"}}))
                  .json();
  if (ctx.json) {
    print_json(ctx, page);
    return kExitOk;
  }
  Table t({"MODEL", "GPUS", "INTERCONNECT", "VRAM", "PRICE/DAY", "NOW", "EARLIEST START", "SITE"});
  for (const auto& o : page.value("items", json::array())) {
    t.add({cell(o.value("gpu_model", json())), cell(o.value("gpu_count", json())),
           cell(o.value("interconnect", json())), cell(o.value("vram_total_gb", json())) + " GB",
           format_money(o.value("price_per_day", json())), cell(o.value("available_now", json())),
           cell(o.value("earliest_start", json())), cell(o.value("site", json()))});
  }
  if (t.empty())
    ctx.err << "No offers match.\n";
  else
    t.print(ctx.out);
  return kExitOk;
}

int cmd_availability(CommandContext& ctx) {
  const auto& a = ctx.args;
  required(a, "gpu-model");
  if (auto c = a.get("gpu-count")) parse_int_option("gpu-count", *c, 1, limits::kMaxRentalGpus);
  if (auto d = a.get("days")) parse_int_option("days", *d, 1, limits::kMaxAvailabilityDays);
  json page = ctx.api
                  .get("/v1/availability" + query(a, {{"gpu-model", "gpu_model"},
                                                      {"gpu-count", "gpu_count"},
                                                      {"interconnect", "interconnect"},
                                                      {"from", "from"},
                                                      {"days", "days"}}))
                  .json();
  if (ctx.json) {
    print_json(ctx, page);
    return kExitOk;
  }
  Table t({"DATE", "AVAILABLE"});
  for (const auto& d : page.value("days", json::array())) {
    t.add({cell(d.value("date", json())), cell(d.value("available", json()))});
  }
  t.print(ctx.out);
  return kExitOk;
}

int cmd_quote(CommandContext& ctx) {
  json q = ctx.api.post("/v1/quotes", booking_body(ctx.args)).json();
  if (ctx.json) {
    print_json(ctx, q);
    return kExitOk;
  }
  std::vector<std::pair<std::string, std::string>> fields{
      {"gpus", ctx.args.get("gpu-count").value_or("") + " x " + q.value("gpu_model", "")},
      {"available", cell(q.value("available", json()))},
      {"earliest start", cell(q.value("earliest_start", json()))},
  };
  if (q.contains("price")) {
    fields.emplace_back("price per day", format_money(q["price"].value("per_day", json())));
    fields.emplace_back("total", format_money(q["price"].value("total", json())));
  }
  print_fields(ctx.out, fields);
  for (const auto& alt : q.value("alternatives", json::array())) {
    ctx.err << "alternative: " << alt.value("gpu_count", 0) << " x " << alt.value("gpu_model", "")
            << " from " << cell(alt.value("start", json())) << "\n";
  }
  return kExitOk;
}

// With `wait`, waits for the rental to be active (its exit code); then prints it, even after a
// timeout: scripts need its id to release it.
int waited_and_printed(CommandContext& ctx, json& rental, bool wait, long long timeout_s) {
  int code = wait ? wait_for_state(ctx, rental, "active", timeout_s) : kExitOk;
  if (ctx.json)
    print_json(ctx, rental);
  else
    print_rental(ctx, rental);
  return code;
}

int cmd_rent(CommandContext& ctx) {
  const auto& a = ctx.args;
  long long timeout_s = kDefaultWaitSeconds;
  if (auto t = a.get("timeout")) timeout_s = parse_duration_seconds("timeout", *t);
  if (a.has("timeout") && !a.has("wait")) throw UsageError("--timeout needs --wait", a.command);
  json body = booking_body(a);
  json rental = ctx.api.post("/v1/rentals", body).json();
  std::string id = rental.value("id", "");
  if (auto path = a.get("id-file")) {
    // Written before any waiting, so a CI job's cleanup step can release the rental even if
    // this step is killed while it waits.
    std::ofstream file(*path, std::ios::trunc);
    file << id << "\n";
    if (!file) ctx.err << "gpurent: cannot write " << *path << "\n";
  }
  ctx.err << "Booked " << id << " (" << gpus_of(rental) << ", " << rental.value("days", 0) << " day"
          << (rental.value("days", 0) == 1 ? "" : "s") << "): " << rental.value("state", "")
          << "\n";
  return waited_and_printed(ctx, rental, a.has("wait"), timeout_s);
}

int cmd_list(CommandContext& ctx) {
  const auto& a = ctx.args;
  int limit = 50;
  if (auto l = a.get("limit")) limit = parse_int_option("limit", *l, 1, 500);
  std::string base = "/v1/rentals?limit=" + std::to_string(a.has("all") ? 500 : limit);
  if (auto s = a.get("state")) base += "&state=" + url_encode(*s);
  json items = json::array();
  json page;
  std::string cursor;
  for (;;) {
    page = ctx.api.get(base + (cursor.empty() ? "" : "&cursor=" + url_encode(cursor))).json();
    for (auto& r : page.value("items", json::array())) items.push_back(r);
    if (!a.has("all") || !page["next_cursor"].is_string()) break;
    cursor = page["next_cursor"].get<std::string>();
  }
  if (ctx.json) {
    print_json(ctx, {{"items", items}, {"next_cursor", page.value("next_cursor", json())}});
    return kExitOk;
  }
  Table t({"ID", "NAME", "STATE", "GPUS", "START", "END", "PRICE/DAY"});
  for (const auto& r : items) {
    json period = r.value("period", json::object());
    t.add({cell(r.value("id", json())), cell(r.value("name", json())),
           cell(r.value("state", json())), gpus_of(r), cell(period.value("start", json())),
           cell(period.value("end", json())),
           format_money(r.value("price", json::object()).value("per_day", json()))});
  }
  if (t.empty())
    ctx.err << "No rentals.\n";
  else
    t.print(ctx.out);
  if (!a.has("all") && page["next_cursor"].is_string()) ctx.err << "More with --all.\n";
  return kExitOk;
}

int cmd_show(CommandContext& ctx) {
  json r = get_rental(ctx, ctx.args.positionals[0]);
  if (ctx.json)
    print_json(ctx, r);
  else
    print_rental(ctx, r);
  return kExitOk;
}

int cmd_wait(CommandContext& ctx) {
  const auto& a = ctx.args;
  long long timeout_s = kDefaultWaitSeconds;
  if (auto t = a.get("timeout")) timeout_s = parse_duration_seconds("timeout", *t);
  std::string target = a.get("state").value_or("active");
  json rental = get_rental(ctx, a.positionals[0]);
  int code = wait_for_state(ctx, rental, target, timeout_s);
  if (ctx.json)
    print_json(ctx, rental);
  else
    print_rental(ctx, rental);
  return code;
}

int cmd_extend(CommandContext& ctx) {
  int days = parse_int_option("days", required(ctx.args, "days"), limits::kMinRentalDays,
                              limits::kMaxRentalDays);
  json r =
      ctx.api
          .post("/v1/rentals/" + url_encode(ctx.args.positionals[0]) + "/extend", {{"days", days}})
          .json();
  if (ctx.json)
    print_json(ctx, r);
  else
    print_rental(ctx, r);
  return kExitOk;
}

int cmd_terminate(CommandContext& ctx) {
  json body = json::object();
  if (auto reason = ctx.args.get("reason")) body["reason"] = *reason;
  json r = ctx.api.post("/v1/rentals/" + url_encode(ctx.args.positionals[0]) + "/terminate", body)
               .json();
  if (ctx.json)
    print_json(ctx, r);
  else
    ctx.err << r.value("id", "") << ": " << r.value("state", "") << "\n";
  return kExitOk;
}

// Up to two minutes for the node's checks, and the reply's way back.
constexpr std::chrono::seconds kDoctorReadTimeout{180};

int cmd_doctor(CommandContext& ctx) {
  json body = {{"allow_busy_gpus", ctx.args.has("allow-busy-gpus")}};
  json r = ctx.api
               .post("/v1/rentals/" + url_encode(ctx.args.positionals[0]) + "/doctor", body,
                     kDoctorReadTimeout)
               .json();
  std::string verdict = r.value("verdict", "");
  if (ctx.json) {
    print_json(ctx, r);
  } else {
    Table t({"CHECK", "VERDICT", "DETAIL"});
    for (const auto& c : r.value("checks", json::array())) {
      t.add({cell(c.value("name", json())), cell(c.value("verdict", json())),
             cell(c.value("detail", json()))});
    }
    t.print(ctx.out);
    for (const auto& c : r.value("checks", json::array())) {
      std::string advice = c.value("advice", "");
      if (!advice.empty() && c.value("verdict", "") != "ok") {
        ctx.out << "- " << c.value("name", "") << ": " << advice << "\n";
      }
    }
    ctx.out << "verdict: " << verdict << "\n";
  }
  return verdict == "failed" ? kExitUnhealthy : kExitOk;
}

// A notice that offers choices and has neither an answer nor the default applied yet.
bool awaits_answer(const json& n) {
  return !n.value("choices", json::array()).empty() && n.value("choice", json()).is_null() &&
         n.value("applied_at", json()).is_null();
}

std::string joined(const json& words, const std::string& separator) {
  std::string out;
  for (const auto& w : words) out += (out.empty() ? "" : separator) + cell(w);
  return out;
}

// What a notice waits for, or what became of it: the choices and by when, the answer given,
// or the default applied when none came; "-" for a notice that asks for nothing.
std::string notice_answer(const json& n) {
  if (!n.value("choice", json()).is_null()) {
    return "answered " + cell(n.value("choice", json())) + " at " +
           cell(n.value("chosen_at", json()));
  }
  const json choices = n.value("choices", json::array());
  if (choices.empty()) return "-";
  if (!n.value("applied_at", json()).is_null()) {
    return "no answer: default applied at " + cell(n.value("applied_at", json()));
  }
  return "choose " + joined(choices, ", ") + " by " + cell(n.value("respond_by", json()));
}

int cmd_notices(CommandContext& ctx) {
  auto rental = ctx.args.get("rental");
  json page =
      ctx.api.get(rental ? "/v1/rentals/" + url_encode(*rental) + "/notices" : "/v1/notices")
          .json();
  if (ctx.json) {
    print_json(ctx, page);
    return kExitOk;
  }
  const json items = page.value("items", json::array());
  Table t({"ID", "WHEN", "KIND", "RENTAL", "ANSWER", "MESSAGE"});
  for (const auto& n : items) {
    t.add({cell(n.value("id", json())), cell(n.value("effective_at", json())),
           cell(n.value("kind", json())), cell(n.value("rental_id", json())), notice_answer(n),
           cell(n.value("message", json()))});
  }
  if (t.empty()) {
    ctx.err << "No notices.\n";
    return kExitOk;
  }
  t.print(ctx.out);
  for (const auto& n : items) {
    if (!awaits_answer(n)) continue;
    ctx.err << "Answer by " << cell(n.value("respond_by", json())) << ": gpurent notices answer "
            << cell(n.value("id", json())) << " --rental " << cell(n.value("rental_id", json()))
            << " --choice " << joined(n.value("choices", json::array()), "|") << "\n";
  }
  return kExitOk;
}

// Which choices a notice offers is the server's to say (400 invalid_request otherwise): the
// CLI keeps no list of its own.
int cmd_notices_answer(CommandContext& ctx) {
  const auto& a = ctx.args;
  const std::string rental = required(a, "rental");
  const std::string choice = required(a, "choice");
  json n = ctx.api
               .post("/v1/rentals/" + url_encode(rental) + "/notices/" +
                         url_encode(a.positionals[0]) + "/choice",
                     {{"choice", choice}})
               .json();
  if (ctx.json) {
    print_json(ctx, n);
    return kExitOk;
  }
  print_fields(ctx.out, {{"id", cell(n.value("id", json()))},
                         {"rental", cell(n.value("rental_id", json()))},
                         {"kind", cell(n.value("kind", json()))},
                         {"answer", notice_answer(n)},
                         {"applied", cell(n.value("applied_at", json()))}});
  ctx.err << "Applied. gpurent show " << cell(n.value("rental_id", json()))
          << " shows the rental as it is now.\n";
  return kExitOk;
}

int cmd_reboot(CommandContext& ctx) {
  const auto& a = ctx.args;
  long long timeout_s = kDefaultWaitSeconds;
  if (auto t = a.get("timeout")) timeout_s = parse_duration_seconds("timeout", *t);
  if (a.has("timeout") && !a.has("wait")) throw UsageError("--timeout needs --wait", a.command);
  json rental =
      ctx.api.post("/v1/rentals/" + url_encode(a.positionals[0]) + "/reboot", json::object())
          .json();
  ctx.err << "Rebooting " << rental.value("id", "") << ": " << rental.value("state", "")
          << " until the node is back and the access is checked again\n";
  return waited_and_printed(ctx, rental, a.has("wait"), timeout_s);
}

int cmd_checkpoint(CommandContext& ctx) {
  const auto& a = ctx.args;
  const std::string path = "/v1/rentals/" + url_encode(a.positionals[0]) + "/checkpoint";
  if (a.has("set") && a.has("clear")) {
    throw UsageError("checkpoint takes --set or --clear, not both", a.command);
  }
  if (a.has("timeout") && !a.has("set")) throw UsageError("--timeout goes with --set", a.command);
  json c;
  if (auto command = a.get("set")) {
    if (command->empty()) throw UsageError("--set needs a command; --clear runs none", a.command);
    json body{{"command", *command}};
    // The limits are the server's (400 invalid_request names timeout_s).
    if (auto t = a.get("timeout")) body["timeout_s"] = parse_duration_seconds("timeout", *t);
    c = ctx.api.put(path, body).json();
    ctx.err << "Set: the node's agent runs it as the rental's login when a notice reaches "
               "the node.\n";
  } else if (a.has("clear")) {
    auto cleared = ctx.api.del(path);
    // A retried DELETE that found nothing has no body: ask what there is now.
    c = cleared.body.empty() ? ctx.api.get(path).json() : cleared.json();
    ctx.err << "Cleared: nothing runs on a notice.\n";
  } else {
    c = ctx.api.get(path).json();
  }
  if (ctx.json) {
    print_json(ctx, c);
    return kExitOk;
  }
  const json command = c.value("command", json());
  const json timeout = c.value("timeout_s", json());
  print_fields(ctx.out,
               {{"command", command.is_null() ? "- (none)" : cell(command)},
                {"timeout", timeout.is_number_integer() ? format_duration(timeout.get<long long>())
                                                        : cell(timeout)}});
  return kExitOk;
}

int cmd_handovers(CommandContext& ctx) {
  const std::string& id = ctx.args.positionals[0];
  json page = ctx.api.get("/v1/rentals/" + url_encode(id) + "/handovers").json();
  if (ctx.json) {
    print_json(ctx, page);
    return kExitOk;
  }
  const json items = page.value("items", json::array());
  // Credits come as minor units of the rental's currency, which the rental names.
  std::string currency;
  for (const auto& h : items) {
    if (h.value("credited_minor", json()).is_null()) continue;
    json r = get_rental(ctx, id);
    currency =
        r.value("price", json::object()).value("per_day", json::object()).value("currency", "");
    break;
  }
  Table t({"STARTED", "CAUSE", "FROM", "TO", "ENDED", "OUTCOME", "CREDITED", "REASON"});
  for (const auto& h : items) {
    const json credited = h.value("credited_minor", json());
    t.add({cell(h.value("started_at", json())), cell(h.value("cause", json())),
           cell(h.value("from_node_id", json())), cell(h.value("to_node_id", json())),
           cell(h.value("ended_at", json())), cell(h.value("outcome", json())),
           credited.is_null() ? "-"
                              : format_money({{"amount_minor", credited}, {"currency", currency}}),
           cell(h.value("reason", json()))});
  }
  if (t.empty())
    ctx.err << "No handovers.\n";
  else
    t.print(ctx.out);
  return kExitOk;
}

int cmd_keys_list(CommandContext& ctx) {
  json page = ctx.api.get("/v1/ssh-keys?limit=500").json();
  if (ctx.json) {
    print_json(ctx, page);
    return kExitOk;
  }
  Table t({"ID", "NAME", "TYPE", "FINGERPRINT", "CREATED"});
  for (const auto& k : page.value("items", json::array())) {
    t.add({cell(k.value("id", json())), cell(k.value("name", json())),
           cell(k.value("type", json())), cell(k.value("fingerprint", json())),
           cell(k.value("created_at", json()))});
  }
  if (t.empty())
    ctx.err << "No SSH keys.\n";
  else
    t.print(ctx.out);
  return kExitOk;
}

int cmd_keys_add(CommandContext& ctx) {
  const auto& a = ctx.args;
  std::string name = required(a, "name");
  std::string text;
  if (a.has("file") == a.has("public-key")) {
    throw UsageError("keys add needs --file or --public-key (one of them)", a.command);
  }
  if (auto path = a.get("file")) {
    std::ifstream in(*path);
    if (!in) throw UsageError("cannot read " + *path, a.command);
    std::getline(in, text);
    if (text.find("PRIVATE KEY") != std::string::npos) {
      throw UsageError(*path + " is a private key; give the .pub file", a.command);
    }
  } else {
    text = *a.get("public-key");
  }
  json k = ctx.api.post("/v1/ssh-keys", {{"name", name}, {"public_key", text}}).json();
  if (ctx.json)
    print_json(ctx, k);
  else
    ctx.out << k.value("id", "") << "  " << k.value("fingerprint", "") << "\n";
  return kExitOk;
}

int cmd_delete(CommandContext& ctx, const std::string& collection, const std::string& what) {
  ctx.api.del(collection + "/" + url_encode(ctx.args.positionals[0]));
  ctx.err << what << " " << ctx.args.positionals[0] << " deleted.\n";
  return kExitOk;
}

int cmd_tokens_list(CommandContext& ctx) {
  json page = ctx.api.get("/v1/api-tokens?limit=500").json();
  if (ctx.json) {
    print_json(ctx, page);
    return kExitOk;
  }
  Table t({"ID", "NAME", "PREFIX", "SCOPES", "EXPIRES", "LAST USED"});
  for (const auto& k : page.value("items", json::array())) {
    std::string scopes;
    for (const auto& s : k.value("scopes", json::array())) {
      scopes += (scopes.empty() ? "" : ",") + s.get<std::string>();
    }
    t.add({cell(k.value("id", json())), cell(k.value("name", json())),
           cell(k.value("prefix", json())), scopes, cell(k.value("expires_at", json())),
           cell(k.value("last_used_at", json()))});
  }
  if (t.empty())
    ctx.err << "No API tokens.\n";
  else
    t.print(ctx.out);
  return kExitOk;
}

int cmd_tokens_create(CommandContext& ctx) {
  const auto& a = ctx.args;
  json body{{"name", required(a, "name")}};
  json scopes = json::array();
  std::stringstream list(required(a, "scopes"));
  for (std::string s; std::getline(list, s, ',');) {
    if (!s.empty()) scopes.push_back(s);
  }
  body["scopes"] = scopes;
  if (auto v = a.get("expires-in-days"))
    body["expires_in_days"] =
        parse_int_option("expires-in-days", *v, 1, limits::kMaxTokenExpiryDays);
  if (auto v = a.get("max-days"))
    body["max_days"] = parse_int_option("max-days", *v, 1, limits::kMaxGuardrailDays);
  if (auto v = a.get("max-gpus"))
    body["max_concurrent_gpus"] = parse_int_option("max-gpus", *v, 0, limits::kMaxGuardrailGpus);
  if (auto v = a.get("spend-limit")) {
    long long minor = 0;
    try {
      std::size_t used = 0;
      minor = std::stoll(*v, &used);
      if (used != v->size() || minor < 0) throw std::invalid_argument("");
    } catch (const std::exception&) {
      throw UsageError("--spend-limit must be a whole amount in minor units, e.g. 500000",
                       a.command);
    }
    body["spend_limit"] = {{"amount_minor", minor},
                           {"currency", a.get("currency").value_or("RUB")}};
  } else if (a.has("currency")) {
    throw UsageError("--currency goes with --spend-limit", a.command);
  }
  json t = ctx.api.post("/v1/api-tokens", body).json();
  if (ctx.json) {
    print_json(ctx, t);
    return kExitOk;
  }
  // The new token is this command's output (shown once); everything else goes to stderr.
  ctx.out << t.value("token", "") << "\n";
  ctx.err << "Created " << t.value("id", "") << "; the token above is shown only now.\n";
  return kExitOk;
}

int cmd_balance(CommandContext& ctx) {
  json b = ctx.api.get("/v1/billing/balance").json();
  if (ctx.json) {
    print_json(ctx, b);
    return kExitOk;
  }
  std::vector<std::pair<std::string, std::string>> fields;
  for (const char* k : {"balance", "held", "available", "credit_limit", "spendable"}) {
    if (b.contains(k)) fields.emplace_back(k, format_money(b[k]));
  }
  print_fields(ctx.out, fields);
  return kExitOk;
}

int cmd_invoices_list(CommandContext& ctx) {
  json page = ctx.api.get("/v1/invoices?limit=500").json();
  if (ctx.json) {
    print_json(ctx, page);
    return kExitOk;
  }
  Table t({"ID", "NUMBER", "PERIOD", "STATUS", "TOTAL"});
  for (const auto& i : page.value("items", json::array())) {
    std::string period = i.contains("period") ? cell(i["period"].value("start", json())) + " .. " +
                                                    cell(i["period"].value("end", json()))
                                              : "-";
    t.add({cell(i.value("id", json())), cell(i.value("number", json())), period,
           cell(i.value("status", json())), format_money(i.value("total", json()))});
  }
  if (t.empty())
    ctx.err << "No invoices.\n";
  else
    t.print(ctx.out);
  return kExitOk;
}

int cmd_invoices_show(CommandContext& ctx) {
  json i = ctx.api.get("/v1/invoices/" + url_encode(ctx.args.positionals[0])).json();
  if (ctx.json) {
    print_json(ctx, i);
    return kExitOk;
  }
  print_fields(ctx.out, {{"id", cell(i.value("id", json()))},
                         {"number", cell(i.value("number", json()))},
                         {"status", cell(i.value("status", json()))},
                         {"subtotal", format_money(i.value("subtotal", json()))},
                         {"tax", format_money(i.value("tax", json()))},
                         {"total", format_money(i.value("total", json()))}});
  Table t({"KIND", "RENTAL", "DESCRIPTION", "DAYS", "AMOUNT"});
  for (const auto& l : i.value("lines", json::array())) {
    t.add({cell(l.value("kind", json())), cell(l.value("rental_id", json())),
           cell(l.value("description", json())), cell(l.value("days", json())),
           format_money(l.value("amount", json()))});
  }
  if (!t.empty()) {
    ctx.out << "\n";
    t.print(ctx.out);
  }
  return kExitOk;
}

int cmd_invoices_csv(CommandContext& ctx) {
  auto r = ctx.api.get("/v1/invoices/" + url_encode(ctx.args.positionals[0]) + "?format=csv");
  if (auto path = ctx.args.get("output")) {
    std::ofstream file(*path, std::ios::trunc | std::ios::binary);
    file << r.body;
    if (!file) throw UsageError("cannot write " + *path, ctx.args.command);
    ctx.err << "Wrote " << *path << "\n";
  } else {
    ctx.out << r.body;
  }
  return kExitOk;
}

}  // namespace

json booking_body(const ParsedArgs& a) {
  json body{{"gpu_model", required(a, "gpu-model")},
            {"gpu_count",
             parse_int_option("gpu-count", required(a, "gpu-count"), 1, limits::kMaxRentalGpus)},
            {"days", parse_int_option("days", required(a, "days"), limits::kMinRentalDays,
                                      limits::kMaxRentalDays)},
            {"image_id", required(a, "image")}};
  body["start"] = a.get("start").value_or("now");
  if (auto i = a.get("interconnect")) {
    if (*i != "nvlink" && *i != "any")
      throw UsageError("--interconnect must be nvlink or any", a.command);
    body["interconnect"] = *i;
  }
  auto keys = a.all("ssh-key");
  if (!keys.empty()) body["ssh_key_ids"] = keys;
  if (auto n = a.get("name")) body["name"] = *n;
  if (a.has("wait-for-capacity")) body["wait_for_capacity"] = true;
  return body;
}

int wait_for_state(CommandContext& ctx, json& rental, const std::string& target,
                   long long timeout_s) {
  const std::string id = rental.value("id", "");
  const auto started = ctx.now();
  const auto deadline = started + std::chrono::seconds(timeout_s);
  std::string shown;
  for (;;) {
    std::string state = rental.value("state", "");
    if (state != shown) {
      auto elapsed = std::chrono::duration_cast<std::chrono::seconds>(ctx.now() - started).count();
      ctx.err << id << ": " << state << " (" << elapsed << " s)\n";
      ctx.err.flush();
      shown = state;
    }
    if (state == target) return kExitOk;
    if (!can_still_become(rental, target)) {
      ctx.err << "gpurent: " << id << " is " << state << "; it will not become " << target << "\n";
      return kExitApiError;
    }
    auto left = std::chrono::duration_cast<std::chrono::seconds>(deadline - ctx.now()).count();
    if (left <= 0) {
      ctx.err << "gpurent: timed out after " << timeout_s << " s waiting for " << id
              << " to become " << target << "; it is " << state << "\n";
      return kExitTimeout;
    }
    long long poll = std::min<long long>(left, kLongPollSeconds);
    auto asked = ctx.now();
    rental = ctx.api
                 .get("/v1/rentals/" + url_encode(id) + "/wait?state=" + url_encode(target) +
                          "&timeout_s=" + std::to_string(poll),
                      std::chrono::seconds(poll + 30))
                 .json();
    // A server (or a proxy) that answers at once without news must not make this a tight loop.
    if (rental.value("state", "") == state && ctx.now() - asked < std::chrono::seconds(1)) {
      std::this_thread::sleep_for(std::chrono::seconds(1));
    }
  }
}

int run_command(CommandContext& ctx) {
  const std::string& c = ctx.args.command;
  if (c == "offers") return cmd_offers(ctx);
  if (c == "availability") return cmd_availability(ctx);
  if (c == "quote") return cmd_quote(ctx);
  if (c == "rent") return cmd_rent(ctx);
  if (c == "list") return cmd_list(ctx);
  if (c == "show") return cmd_show(ctx);
  if (c == "wait") return cmd_wait(ctx);
  if (c == "extend") return cmd_extend(ctx);
  if (c == "terminate") return cmd_terminate(ctx);
  if (c == "ssh") return run_ssh(ctx);
  if (c == "doctor") return cmd_doctor(ctx);
  if (c == "notices") return cmd_notices(ctx);
  if (c == "notices answer") return cmd_notices_answer(ctx);
  if (c == "reboot") return cmd_reboot(ctx);
  if (c == "checkpoint") return cmd_checkpoint(ctx);
  if (c == "handovers") return cmd_handovers(ctx);
  if (c == "keys list") return cmd_keys_list(ctx);
  if (c == "keys add") return cmd_keys_add(ctx);
  if (c == "keys delete") return cmd_delete(ctx, "/v1/ssh-keys", "SSH key");
  if (c == "tokens list") return cmd_tokens_list(ctx);
  if (c == "tokens create") return cmd_tokens_create(ctx);
  if (c == "tokens revoke") return cmd_delete(ctx, "/v1/api-tokens", "API token");
  if (c == "balance") return cmd_balance(ctx);
  if (c == "invoices list") return cmd_invoices_list(ctx);
  if (c == "invoices show") return cmd_invoices_show(ctx);
  if (c == "invoices csv") return cmd_invoices_csv(ctx);
  throw UsageError("unknown command \"" + c + "\"");
}

}  // namespace gpurent::cli
