// The restore drill (docs/DEPLOYMENT.md, "Restore drill"): an installation with orgs, money,
// invoices and rentals in every state of the rental state machine, made through the API, is
// backed up as an operator would (`pg_dump --format=custom` and `gpurentd keys backup`), lost
// (its database dropped, its state folder removed), and restored into a new PostgreSQL
// cluster and a new state folder (`pg_restore`, `gpurentd keys restore`). The restored server
// must answer what the lost one answered, its ledger must pass the invariants, new postings
// and certificates must follow the old ones, and an agent enrolled before the backup must
// connect with the certificate it already has. Then point-in-time recovery: a base backup
// and the archived WAL replayed to a time before a mistaken posting.
#include "agent_proto/messages.h"
#include "core/embedded_postgres.h"
#include "core/subprocess.h"
#include "tests/chaos/invariants.h"
#include "tests/support/agent_client.h"
#include "tests/support/paths.h"
#include "tests/support/rental_fleet_fixture.h"
#include "tests/support/sanitizer_report.h"
#include "tests/support/test_keys.h"
#include "tests/support/wait_for.h"

#include <gtest/gtest.h>

#include <pwd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace gpurent::testing::restore_drill_e2e {

using nlohmann::json;
namespace fs = std::filesystem;
namespace proto = agent_proto;

constexpr const char* kPassphrase = "the drill's backup passphrase";

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// A PostgreSQL client program of the server's version (pg_dump, pg_restore, psql).
std::string pg_tool(const std::string& name) {
  return EmbeddedPostgresOptions{}.bin_dir + "/" + name;
}

// `gpurentd keys ARGS` with the passphrase on stdin: its exit code and output.
SubprocessResult keys(const std::string& args) {
  std::string dir = make_temp_dir("gpurent-drill-keys");
  std::ofstream(dir + "/stdin") << kPassphrase << "\n";
  std::string cmd = gpurentd_path() + " keys " + args + " --log_format=json <" + dir + "/stdin >" +
                    dir + "/out 2>&1";
  int status = std::system(cmd.c_str());
  SubprocessResult r{.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1,
                     .output = read_file(dir + "/out")};
  fs::remove_all(dir);
  EXPECT_EQ(find_sanitizer_report(r.output), "") << "keys " << args;
  return r;
}

// The money checks that are not in chaos::check_database: an invoice's totals are the sum of
// its lines. Each row is one invoice that breaks it.
long long invoices_not_their_lines(const std::string& url) {
  pqxx::connection c(url);
  pqxx::read_transaction tx(c);
  return tx
      .exec(
          "SELECT count(*) FROM invoices i WHERE total_minor <> coalesce((SELECT"
          " sum(amount_minor) FROM invoice_lines l WHERE l.invoice_id = i.id), 0)"
          " OR tax_minor <> coalesce((SELECT sum(tax_minor) FROM invoice_lines l"
          " WHERE l.invoice_id = i.id), 0) OR subtotal_minor + tax_minor <> total_minor")[0][0]
      .as<long long>();
}

// A waiting rental's estimated start is worked out from the calendar at the time of asking,
// not stored: the restored server, asked at another time, may round it to another second.
// Everything else of an answer is compared as it is.
std::string without_estimates(const std::string& body) {
  json doc = json::parse(body, nullptr, false);
  if (doc.is_discarded()) return body;
  auto strip = [](json& rental) {
    if (rental.is_object() && rental.contains("waitlist") && rental["waitlist"].is_object()) {
      rental["waitlist"].erase("estimated_start");
    }
  };
  strip(doc);
  if (doc.is_object() && doc.contains("items") && doc["items"].is_array()) {
    for (auto& item : doc["items"]) strip(item);
  }
  return doc.dump();
}

std::string violations_text(const std::vector<chaos::Violation>& violations) {
  std::string s;
  for (const auto& v : violations) s += v.invariant + ": " + v.detail + "\n";
  return s;
}

class RestoreDrillE2E : public RentalFleetTest {
 protected:
  // Orgs get their money from the admin's credits, through the API, not from SQL.
  RestoreDrillE2E() { fund_new_orgs_minor_ = 0; }

  void SetUp() override {
    state_ = make_temp_dir("gpurent-drill-state");
    server_ = std::make_unique<ServerProcess>(options(db_.url(), state_));
    ASSERT_NE(server_->agent_port(), 0);
    ca_pem_ = read_file(state_ + "/pki/ca.crt");
    ASSERT_FALSE(ca_pem_.empty());
  }

  void TearDown() override {
    // The servers go before the cluster they use.
    server_.reset();
    if (restored_pg_) restored_pg_->stop();
    restored_pg_.reset();
    for (const auto& dir : {state_, restored_state_, restored_cluster_, backups_}) {
      if (!dir.empty()) fs::remove_all(dir);
    }
  }

  // The lifecycle runs when the test asks, at the test clock's now; heartbeats are never late
  // enough to count as silence within the test.
  static ServerOptions options(const std::string& url, const std::string& state) {
    return {.database_url = url,
            .flags = {"--rate_limit_per_credential=0", "--rate_limit_per_ip=0",
                      "--lifecycle_interval=60s", "--agent_silence_limit=24h",
                      "--agent_pki_dir=" + state + "/pki", "--ssh_ca_dir=" + state + "/ssh-ca"}};
  }

  struct Agent {
    std::string node_id;
    std::string hostname;
    std::string certificate_pem;
    std::string key_pem;
  };

  // A node an admin creates, whose agent enrols over the agent listener with a CSR of its
  // own, says hello and sends a healthy heartbeat: the node comes into service the way a
  // real one does. The channel is closed after, so the node's tasks wait in the database for
  // the test routes to report them.
  Agent enrolled_node(const std::string& hostname) {
    auto [node_id, token] = create_enrolling_node(hostname);
    auto key = make_agent_key();
    auto r = agent_enroll(server_->agent_port(), ca_pem_,
                          json{{"enrollment_token", token}, {"csr_pem", key.csr_pem}}.dump());
    EXPECT_EQ(r.status, 200) << r.body;
    Agent agent{node_id, hostname, json::parse(r.body).value("certificate_pem", ""), key.key_pem};
    AgentConnection channel(server_->agent_port(), ca_pem_, agent.certificate_pem, agent.key_pem);
    expect_ack(channel, send(channel, hello(hostname)));
    expect_ack(channel, send(channel, heartbeat()));
    EXPECT_EQ(node_view(node_id)["state"], "available");
    return agent;
  }

  std::string send(AgentConnection& channel, proto::Body body) {
    std::string id = "drill-" + std::to_string(++sent_);
    channel.send(proto::encode({.id = id, .body = std::move(body)}));
    return id;
  }
  // The ack of `id`; tasks the server pushes meanwhile are passed over.
  void expect_ack(AgentConnection& channel, const std::string& id) {
    for (;;) {
      auto text = channel.read();
      ASSERT_TRUE(text.has_value()) << "no ack of " << id << " came";
      auto m = proto::decode(*text);
      if (std::holds_alternative<proto::Task>(m.body)) continue;
      const auto* ack = std::get_if<proto::Ack>(&m.body);
      ASSERT_NE(ack, nullptr) << *text;
      EXPECT_EQ(ack->acked_id, id);
      return;
    }
  }
  static proto::Hello hello(const std::string& hostname) {
    return {.agent_version = "0.9.0",
            .hostname = hostname,
            .gpus = {.count = 8,
                     .model = "NVIDIA H100 80GB HBM3",
                     .driver_version = "550.54.15",
                     .cuda_version = "12.4"},
            .topology = topology::declared_matrix(topology::Interconnect::kNvswitch, 8, "NV18")};
  }
  static proto::Heartbeat heartbeat() {
    proto::Heartbeat beat;
    beat.sent_at =
        std::chrono::time_point_cast<std::chrono::microseconds>(std::chrono::system_clock::now());
    for (int i = 0; i < 8; ++i) {
      proto::GpuTelemetry gpu;
      gpu.index = i;
      gpu.pci_bus_id = "00000000:" + std::string(i < 4 ? "1" : "9") + std::to_string(i) + ":00.0";
      gpu.temperature_c = 41;
      gpu.utilization_pct = 0;
      gpu.ecc_volatile_dbe = 0;
      beat.gpus.push_back(gpu);
    }
    return beat;
  }

  HttpResult book(const Login& who, int gpus, const std::string& start, int days,
                  bool wait_for_capacity = false) {
    json body = {{"gpu_model", kModel},
                 {"gpu_count", gpus},
                 {"start", start},
                 {"days", days},
                 {"image_id", image_id_}};
    if (wait_for_capacity) body["wait_for_capacity"] = true;
    return post("/v1/rentals", body, session(who));
  }
  std::string booked(const Login& who, int gpus, const std::string& start, int days,
                     bool wait_for_capacity = false) {
    auto r = book(who, gpus, start, days, wait_for_capacity);
    EXPECT_EQ(r.status, 201) << r.body;
    return r.json().value("id", "");
  }
  void credit(const Login& org, long long minor, const std::string& kind) {
    auto r = post("/v1/admin/orgs/" + org.org_id + "/credit",
                  {{"amount", {{"amount_minor", minor}, {"currency", "RUB"}}},
                   {"reason", "bank transfer for the drill"},
                   {"kind", kind}},
                  session(admin_));
    EXPECT_EQ(r.status, 201) << r.body;
  }
  // Reports every queued task of the rental as failed, as an agent whose provisioning broke.
  void fail_queued(const std::string& id) {
    for (const auto& t : tasks_of(id)) {
      if (t["state"] != "queued") continue;
      auto r = post("/v1/test/tasks/" + t["id"].get<std::string>() + "/complete",
                    {{"ok", false}, {"message", "image checksum mismatch"}});
      EXPECT_EQ(r.status, 200) << r.body;
    }
  }
  std::string state_of(const Login& owner, const std::string& id) {
    return get("/v1/rentals/" + id, session(owner)).json().value("state", "");
  }
  // A user certificate for the rental: the "Signing CA" line of `ssh-keygen -L`, and the serial.
  std::pair<std::string, std::string> user_certificate(const Login& owner, const std::string& id) {
    auto r = post("/v1/rentals/" + id + "/ssh-certificate", {{"public_key", engineer_key_}},
                  session(owner));
    EXPECT_EQ(r.status, 200) << r.body;
    std::string path = state_ + "-cert.pub";
    std::ofstream(path) << r.json().value("certificate", "") << "\n";
    auto listed = run_subprocess({"ssh-keygen", "-L", "-f", path});
    fs::remove(path);
    EXPECT_EQ(listed.exit_code, 0) << listed.output;
    auto at = listed.output.find("Signing CA: ");
    EXPECT_NE(at, std::string::npos) << listed.output;
    std::string ca =
        at == std::string::npos ? "" : listed.output.substr(at, listed.output.find('\n', at) - at);
    return {ca, r.json().value("serial", "")};
  }

  // What the server answers to the owners, their token and the admin about everything the
  // drill made: path (and who asked) → status and body.
  std::map<std::string, std::string> answers() {
    std::map<std::string, std::string> out;
    auto ask = [&](const std::string& who, const Headers& h, const std::string& path) {
      auto r = get(path, h);
      out[who + " " + path] = std::to_string(r.status) + " " + without_estimates(r.body);
      return r;
    };
    for (const auto& [who, login] : {std::pair{"acme", acme_}, {"beta", beta_}}) {
      Headers h = session(login);
      json rentals = ask(who, h, "/v1/rentals?limit=100").json();
      for (const auto& r : rentals["items"]) {
        std::string id = r["id"];
        ask(who, h, "/v1/rentals/" + id);
        ask(who, h, "/v1/rentals/" + id + "/events?limit=100");
      }
      ask(who, h, "/v1/billing/balance");
      ask(who, h, "/v1/billing/transactions?limit=100");
      json invoices = ask(who, h, "/v1/invoices?limit=100").json();
      for (const auto& i : invoices["items"]) {
        ask(who, h, "/v1/invoices/" + i["id"].get<std::string>());
      }
      ask(who, h, "/v1/ssh-keys");
      ask(who, h, "/v1/me");
    }
    ask("acme-token", bearer(acme_token_), "/v1/rentals?limit=100");
    Headers admin = session(admin_);
    ask("admin", admin, "/v1/admin/rentals?limit=500");
    ask("admin", admin, "/v1/admin/orgs/" + acme_.org_id + "/balance");
    ask("admin", admin, "/v1/admin/orgs/" + beta_.org_id + "/balance");
    return out;
  }

  std::string state_, restored_state_, restored_cluster_, backups_;
  std::unique_ptr<EmbeddedPostgres> restored_pg_;
  std::string ca_pem_;
  std::string engineer_key_;
  int sent_ = 0;
  Login acme_, beta_;
  std::string acme_token_;
};

TEST_F(RestoreDrillE2E, ABackupRestoredIntoANewClusterServesTheSameRentalsMoneyAndAgents) {
  // ---- An installation in use ----
  seed_fleet({1, 2, 8});
  Agent gpu_a = enrolled_node("gpu-a");
  Agent gpu_b = enrolled_node("gpu-b");
  acme_ = account("owner@acme.example", "Acme");
  beta_ = account("owner@beta.example", "Beta");
  credit(acme_, 5'000'000, "top_up");
  credit(beta_, 1'000'000, "top_up");
  credit(beta_, 500'000, "goodwill");
  engineer_key_ =
      read_file(ssh_key_pair("drill-ed25519", {"-t", "ed25519", "-C", "dev@acme"}) + ".pub");
  while (!engineer_key_.empty() && engineer_key_.back() == '\n') engineer_key_.pop_back();
  auto key =
      post("/v1/ssh-keys", {{"name", "laptop"}, {"public_key", engineer_key_}}, session(acme_));
  ASSERT_EQ(key.status, 201) << key.body;
  acme_token_ = token(session(acme_), {"rentals:read"}).second;

  // Booked now.
  std::string ended = booked(acme_, 1, "now", 1);
  std::string active = booked(acme_, 2, "now", 2);
  std::string provisioning = booked(beta_, 1, "now", 1);
  std::string releasing = booked(beta_, 1, "now", 1);
  std::string failed = booked(beta_, 1, "now", 1);
  std::string interrupted = booked(acme_, 8, "now", 1);
  ASSERT_FALSE(HasFailure());
  // The small ones are packed on one node (placement keeps whole nodes whole); its agent is
  // the one that reconnects after the restore. The other node fails.
  std::string whole_node = get("/v1/rentals/" + interrupted, session(acme_)).json()["node_id"];
  const Agent& failing = whole_node == gpu_a.node_id ? gpu_a : gpu_b;
  const Agent& kept = whole_node == gpu_a.node_id ? gpu_b : gpu_a;
  for (const auto& [who, id] : {std::pair{acme_, ended},
                                {acme_, active},
                                {beta_, provisioning},
                                {beta_, releasing},
                                {beta_, failed}}) {
    EXPECT_EQ(get("/v1/rentals/" + id, session(who)).json()["node_id"], kept.node_id);
  }

  advance(1);
  run_lifecycle();
  for (const auto& id : {ended, active, releasing, interrupted}) complete_queued(id);
  // Provisioning that keeps failing: the rental fails after its last attempt.
  for (int attempt = 0; attempt < 3; ++attempt) {
    fail_queued(failed);
    advance(61);
    run_lifecycle();
  }
  ASSERT_EQ(state_of(acme_, active), "active");
  ASSERT_EQ(state_of(beta_, failed), "failed");
  for (const auto& id : {ended, releasing}) {
    auto r = post("/v1/rentals/" + id + "/terminate", json::object(),
                  session(id == ended ? acme_ : beta_));
    ASSERT_EQ(r.status, 200) << r.body;
  }
  run_lifecycle();  // asks for the revocation and the wipe
  complete_queued(ended);
  advance(61);
  run_lifecycle();
  ASSERT_EQ(state_of(acme_, ended), "ended");
  ASSERT_EQ(state_of(beta_, releasing), "releasing");
  ASSERT_EQ(state_of(beta_, provisioning), "provisioning");

  // The other node's GPU 1 falls off the bus: the node fails and the rental on it is interrupted,
  // with an SLA credit.
  {
    AgentConnection channel(server_->agent_port(), ca_pem_, failing.certificate_pem,
                            failing.key_pem);
    expect_ack(channel, send(channel, hello(failing.hostname)));
    auto beat = heartbeat();
    beat.events.push_back({.pci = "0000:11:00",
                           .xid = 79,
                           .pid = std::nullopt,
                           .process = std::nullopt,
                           .message = "GPU has fallen off the bus.",
                           .at = std::nullopt});
    expect_ack(channel, send(channel, beat));
  }
  ASSERT_EQ(state_of(acme_, interrupted), "interrupted");

  // Days ahead: one scheduled, one cancelled before its start; and a whole node asked for
  // now, which no node has free, waiting for capacity.
  std::string now = get("/v1/admin/test-clock", {}).json()["now"];
  auto ahead = std::chrono::sys_days(
                   std::chrono::year_month_day(std::chrono::year(std::stoi(now.substr(0, 4))),
                                               std::chrono::month(std::stoul(now.substr(5, 2))),
                                               std::chrono::day(std::stoul(now.substr(8, 2))))) +
               std::chrono::days(3);
  std::chrono::year_month_day ymd(ahead);
  char date[16];
  std::snprintf(date, sizeof date, "%04d-%02u-%02u", static_cast<int>(ymd.year()),
                static_cast<unsigned>(ymd.month()), static_cast<unsigned>(ymd.day()));
  std::string scheduled = booked(acme_, 1, date, 2);
  std::string cancelled = booked(acme_, 1, date, 1);
  ASSERT_EQ(post("/v1/rentals/" + cancelled + "/terminate", json::object(), session(acme_)).status,
            200);
  std::string pending = booked(acme_, 8, "now", 1, true);
  ASSERT_EQ(state_of(acme_, scheduled), "scheduled");
  ASSERT_EQ(state_of(acme_, cancelled), "cancelled");
  ASSERT_EQ(state_of(acme_, pending), "pending");
  auto [signing_ca, serial] = user_certificate(acme_, active);

  auto before = answers();
  ASSERT_FALSE(HasFailure());
  // The drill is only as good as what it carries: every state, captures, releases, credits
  // and invoices are there to lose.
  {
    pqxx::connection c(db_.url());
    pqxx::read_transaction tx(c);
    EXPECT_EQ(tx.exec("SELECT count(DISTINCT state) FROM rentals")[0][0].as<int>(), 9);
    EXPECT_EQ(tx.exec("SELECT count(DISTINCT kind) FROM ledger_transactions WHERE kind IN"
                      " ('top_up', 'credit', 'hold', 'capture', 'release', 'sla_credit')")[0][0]
                  .as<int>(),
              6);
    EXPECT_GE(tx.exec("SELECT count(*) FROM invoice_lines")[0][0].as<int>(), 3);
  }
  EXPECT_EQ(violations_text(chaos::check_database(db_.url())), "");

  // ---- The backups, taken while the server runs ----
  backups_ = make_temp_dir("gpurent-drill-backups");
  const std::string dump = backups_ + "/gpurent.dump", key_backup = backups_ + "/keys.backup";
  auto dumped =
      run_subprocess({pg_tool("pg_dump"), "--format=custom", "--file=" + dump, db_.url()});
  ASSERT_EQ(dumped.exit_code, 0) << dumped.output;
  auto keys_saved = keys("backup --out " + key_backup + " --agent_pki_dir=" + state_ +
                         "/pki --ssh_ca_dir=" + state_ + "/ssh-ca");
  ASSERT_EQ(keys_saved.exit_code, 0) << keys_saved.output;

  // ---- Lost: the database and the state folder ----
  ASSERT_EQ(server_->stop(), "");
  server_.reset();
  {
    pqxx::connection c(TestCluster::get().url("postgres"));
    pqxx::nontransaction tx(c);
    tx.exec("DROP DATABASE " + tx.quote_name(db_.name()) + " WITH (FORCE)");
  }
  fs::remove_all(state_);

  // ---- Restored: a new cluster, a new state folder ----
  restored_cluster_ = make_cluster_dir();
  restored_pg_ = std::make_unique<EmbeddedPostgres>(EmbeddedPostgresOptions{
      .data_dir = restored_cluster_ + "/pg", .database = "gpurent", .durable = false});
  restored_pg_->start();
  auto restored = run_subprocess({pg_tool("pg_restore"), "--no-owner", "--exit-on-error",
                                  "--dbname=" + restored_pg_->url(), dump});
  ASSERT_EQ(restored.exit_code, 0) << restored.output;
  restored_state_ = make_temp_dir("gpurent-drill-restored");
  auto keys_back = keys("restore --in " + key_backup + " --agent_pki_dir=" + restored_state_ +
                        "/pki --ssh_ca_dir=" + restored_state_ + "/ssh-ca");
  ASSERT_EQ(keys_back.exit_code, 0) << keys_back.output;
  server_ = std::make_unique<ServerProcess>(options(restored_pg_->url(), restored_state_));

  // The same answers, to the same sessions and token, which live in the database too.
  auto after = answers();
  ASSERT_EQ(after.size(), before.size());
  for (const auto& [request, answer] : before) {
    EXPECT_EQ(after[request], answer) << request;
  }
  EXPECT_EQ(violations_text(chaos::check_database(restored_pg_->url())), "");
  EXPECT_EQ(invoices_not_their_lines(restored_pg_->url()), 0);

  // The SSH user CA is the one the engineers' certificates name, and serials go on from
  // where they were (the sequences came back with the rows).
  auto [signing_ca_after, serial_after] = user_certificate(acme_, active);
  EXPECT_EQ(signing_ca_after, signing_ca);
  EXPECT_GT(std::stoull(serial_after), std::stoull(serial));
  // New money posts after the old: the ledger's own sequences and checks came back too.
  credit(beta_, 250'000, "top_up");
  EXPECT_EQ(get("/v1/billing/balance", session(beta_)).json()["available"]["amount_minor"],
            json::parse(before["beta /v1/billing/balance"].substr(4))["available"]["amount_minor"]
                    .get<long long>() +
                250'000);
  EXPECT_EQ(violations_text(chaos::check_database(restored_pg_->url())), "");

  // The agent enrolled before the backup connects with the certificate it kept: the restored
  // CA is the one that signed it, and the agent trusts the listener's certificate by it.
  {
    AgentConnection channel(server_->agent_port(), ca_pem_, kept.certificate_pem, kept.key_pem);
    expect_ack(channel, send(channel, hello(kept.hostname)));
    expect_ack(channel, send(channel, heartbeat()));
  }
  EXPECT_EQ(read_file(restored_state_ + "/pki/ca.crt"), ca_pem_);
}

// ---- Point-in-time recovery: a base backup and the archived WAL, replayed to a time ----

// The user PostgreSQL runs as when we are root (it refuses root), as EmbeddedPostgres does.
std::optional<RunAs> postgres_user() {
  if (geteuid() != 0) return std::nullopt;
  passwd* pw = getpwnam(EmbeddedPostgresOptions{}.system_user.c_str());
  if (!pw) return std::nullopt;
  return RunAs{pw->pw_uid, pw->pw_gid};
}

// A folder the PostgreSQL user owns.
std::string postgres_folder(const std::string& path) {
  fs::create_directories(path);
  if (auto user = postgres_user()) {
    EXPECT_EQ(chown(path.c_str(), user->uid, user->gid), 0) << path;
  }
  return path;
}

struct Session {
  std::string cookie, csrf;
  std::map<std::string, std::string> headers() const {
    return {{"Cookie", cookie}, {"X-CSRF-Token", csrf}, {"Content-Type", "application/json"}};
  }
};

Session sign_in(int port, const std::string& email, const std::string& password) {
  auto r = http_request(port, "POST", "/v1/auth/login",
                        json{{"email", email}, {"password", password}}.dump(),
                        {{"Content-Type", "application/json"}});
  EXPECT_EQ(r.status, 200) << email << ": " << r.body;
  std::string cookie = r.header("set-cookie");
  return {cookie.substr(0, cookie.find(';')),
          r.status == 200 ? r.json().value("csrf_token", "") : ""};
}

// The org's balance as its admin sees it: available and held, in minor units.
std::string balance_of(int port, const Session& admin, const std::string& org_id) {
  auto r = http_request(port, "GET", "/v1/admin/orgs/" + org_id + "/balance", "", admin.headers());
  EXPECT_EQ(r.status, 200) << r.body;
  return r.body;
}

void credit(int port, const Session& admin, const std::string& org_id, long long minor) {
  auto r = http_request(
      port, "POST", "/v1/admin/orgs/" + org_id + "/credit",
      json{{"amount", {{"amount_minor", minor}, {"currency", "RUB"}}}, {"reason", "bank transfer"}}
          .dump(),
      admin.headers());
  EXPECT_EQ(r.status, 201) << r.body;
}

// As docs/DEPLOYMENT.md says: continuous archiving on the primary, a base backup with
// pg_basebackup, the primary lost, the base backup restored with restore_command and
// recovery_target_time set to just before a mistaken posting. The recovered database holds
// what was committed up to that time and nothing after, and the ledger is whole.
TEST(PointInTimeRecoveryE2E, ABaseBackupAndArchivedWalRecoverToATimeBeforeAMistake) {
  const std::string primary_dir = make_cluster_dir(), backups = make_cluster_dir(),
                    recovered_dir = make_cluster_dir();
  // Declared before the clusters, so they have stopped by the time it removes their folders.
  struct RemovedAtEnd {
    std::vector<std::string> dirs;
    ~RemovedAtEnd() {
      for (const auto& dir : dirs) fs::remove_all(dir);
    }
  } removed_at_end{{primary_dir, backups, recovered_dir}};
  const std::string archive = postgres_folder(backups + "/wal"),
                    base = postgres_folder(backups + "/base") + "/pg";
  // The primary, archiving every WAL segment it completes (archive_mode needs a restart).
  auto primary = std::make_unique<EmbeddedPostgres>(EmbeddedPostgresOptions{
      .data_dir = primary_dir + "/pg", .database = "gpurent", .durable = false});
  primary->start();
  {
    pqxx::connection c(primary->url());
    pqxx::nontransaction tx(c);
    tx.exec("ALTER SYSTEM SET archive_mode = 'on'");
    tx.exec("ALTER SYSTEM SET archive_command = " + tx.quote("cp %p " + archive + "/%f"));
  }
  primary->stop();
  primary->start();

  std::string org_id, good_balance, target;
  {
    ServerProcess server({.database_url = primary->url(),
                          .flags = {"--rate_limit_per_credential=0", "--rate_limit_per_ip=0"}});
    const int port = server.port();
    // The platform admin as an operator makes one.
    std::string dir = make_temp_dir("gpurent-pitr-admin");
    std::ofstream(dir + "/password") << "the admin's passphrase\n";
    std::string cmd = "DATABASE_URL='" + primary->url() + "' " + gpurentd_path() +
                      " admin create --email root@example.com --password-stdin"
                      " --test_mode=true --password_hash_cost=10 --log_format=json <" +
                      dir + "/password >" + dir + "/out 2>&1";
    int status = std::system(cmd.c_str());
    std::string out = read_file(dir + "/out");
    fs::remove_all(dir);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << out;
    Session admin = sign_in(port, "root@example.com", "the admin's passphrase");
    auto signed_up = http_request(port, "POST", "/v1/auth/signup",
                                  json{{"email", "owner@acme.example"},
                                       {"password", "a good passphrase"},
                                       {"org_name", "Acme"}}
                                      .dump(),
                                  {{"Content-Type", "application/json"}});
    ASSERT_EQ(signed_up.status, 201) << signed_up.body;
    auto me = http_request(
        port, "POST", "/v1/auth/login",
        json{{"email", "owner@acme.example"}, {"password", "a good passphrase"}}.dump(),
        {{"Content-Type", "application/json"}});
    ASSERT_EQ(me.status, 200) << me.body;
    org_id = me.json()["current_org_id"];
    credit(port, admin, org_id, 1'000'000);

    // The weekly base backup, taken while the server writes.
    auto based = run_subprocess(
        {pg_tool("pg_basebackup"), "-h", primary->socket_dir(), "-p", "5432", "-U", "gpurent", "-D",
         base, "--format=plain", "--checkpoint=fast", "--wal-method=stream"},
        postgres_user());
    ASSERT_EQ(based.exit_code, 0) << based.output;

    credit(port, admin, org_id, 200'000);  // after the base backup: only the WAL has it
    good_balance = balance_of(port, admin, org_id);
    {
      pqxx::connection c(primary->url());
      pqxx::nontransaction tx(c);
      target = tx.exec("SELECT clock_timestamp()::text")[0][0].as<std::string>();
    }
    credit(port, admin, org_id, 50'000'000);  // the mistake
    ASSERT_NE(balance_of(port, admin, org_id), good_balance);

    // The segment holding the mistake is completed and archived, as time would do.
    pqxx::connection c(primary->url());
    pqxx::nontransaction tx(c);
    std::string segment =
        tx.exec("SELECT pg_walfile_name(pg_switch_wal())")[0][0].as<std::string>();
    EXPECT_TRUE(wait_for([&] {
      auto r = tx.exec("SELECT coalesce(last_archived_wal, '') FROM pg_stat_archiver");
      return r[0][0].as<std::string>() >= segment;
    })) << "segment "
        << segment << " was not archived";
    EXPECT_EQ(server.stop(), "");
  }
  // The primary is lost.
  primary->stop();
  primary.reset();
  fs::remove_all(primary_dir + "/pg");

  // The base backup restored, replayed from the archive up to the target time, promoted.
  auto copied = run_subprocess({"cp", "-a", base, recovered_dir + "/pg"});
  ASSERT_EQ(copied.exit_code, 0) << copied.output;
  std::ofstream(recovered_dir + "/pg/postgresql.auto.conf", std::ios::app)
      << "restore_command = 'cp " << archive << "/%f %p'\n"
      << "recovery_target_time = '" << target << "'\n"
      << "recovery_target_action = 'promote'\n"
      << "archive_mode = 'off'\n";
  std::ofstream(recovered_dir + "/pg/recovery.signal");
  // The embedded cluster keeps its socket in its data folder, so the backup holds the
  // primary's socket lock file, which names a postmaster that is gone.
  fs::remove(recovered_dir + "/pg/.s.PGSQL.5432.lock");
  if (postgres_user()) {
    auto owned = run_subprocess({"chown", "-R", "postgres:postgres", recovered_dir + "/pg"});
    ASSERT_EQ(owned.exit_code, 0) << owned.output;
  }
  auto recovered = std::make_unique<EmbeddedPostgres>(EmbeddedPostgresOptions{
      .data_dir = recovered_dir + "/pg", .database = "gpurent", .durable = false});
  recovered->start();
  {
    pqxx::connection c(recovered->url());
    pqxx::nontransaction tx(c);
    EXPECT_TRUE(wait_for([&] { return !tx.exec("SELECT pg_is_in_recovery()")[0][0].as<bool>(); }))
        << "recovery did not end";
  }
  {
    ServerProcess server({.database_url = recovered->url(),
                          .flags = {"--rate_limit_per_credential=0", "--rate_limit_per_ip=0"}});
    // The admin's session was committed before the target: it is still there.
    Session admin = sign_in(server.port(), "root@example.com", "the admin's passphrase");
    EXPECT_EQ(balance_of(server.port(), admin, org_id), good_balance);
    EXPECT_EQ(violations_text(chaos::check_database(recovered->url())), "");
    EXPECT_EQ(server.stop(), "");
  }
}

}  // namespace gpurent::testing::restore_drill_e2e
