// The burn-in end to end, real `gpurent-agent` processes against a real gpurentd with burn-ins
// on: a node whose simulated GPU 3 runs slow is measured at its rental's handover, the server
// judges the figures its agent sent, drains the node and moves the rental to the healthy node,
// where it is measured again and handed over; the rental is never billed on the failed node.
#include "core/subprocess.h"
#include "tests/support/agent_fleet_fixture.h"
#include "tests/support/test_keys.h"
#include "tests/support/wait_for.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

namespace gpurent::testing::burn_in_e2e {

using nlohmann::json;
namespace fs = std::filesystem;

class BurnInE2E : public AgentFleetTest {
 protected:
  BurnInE2E() { burn_ins_ = true; }
};

TEST_F(BurnInE2E, ASlowGpuAtHandoverDrainsItsNodeAndTheRentalIsHandedOverOnAHealthyOne) {
  // GPU 3 slows down six seconds after the agent starts: after the node's enrolment burn-in,
  // which it passes, and before the rental's handover.
  auto started = std::chrono::steady_clock::now();
  std::string slow = node_with_agent("slow-node", "slow-gpu@6s:gpu3");
  ASSERT_TRUE(wait_for([&] {
    json b = node_view(slow)["burn_ins"];
    return !b.empty() && b[0]["phase"] == "enrolment" && b[0]["passed"] == true;
  })) << node_view(slow).dump();
  ASSERT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(6))
      << "the machine was too slow for the fault's schedule";
  std::this_thread::sleep_until(started + std::chrono::milliseconds(6500));
  Login owner = account("owner@example.com", "Acme");
  auto pub = ssh_key_pair("burn-in-e2e-ed25519", {"-t", "ed25519"}) + ".pub";
  std::ifstream in(pub);
  std::string key((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  while (!key.empty() && key.back() == '\n') key.pop_back();
  std::string rental = book_with_key(owner, key);  // only the slow node is in service
  ASSERT_FALSE(rental.empty());
  std::string healthy = node_with_agent("healthy-node", "");

  ASSERT_TRUE(drive_until(owner, rental, "active"))
      << get("/v1/rentals/" + rental + "/events", session(owner)).body << "\n"
      << agents_[0]->log();
  json shown = get("/v1/rentals/" + rental, session(owner)).json();
  EXPECT_EQ(shown["node_id"], healthy) << shown.dump();

  // Its story: started on the slow node, placed again, started and handed over on the other.
  std::vector<std::string> moves;
  std::string why;
  json events = get("/v1/rentals/" + rental + "/events", session(owner)).json();
  for (const auto& e : events["items"]) {
    moves.push_back(e["from_state"].is_null() ? "" : e["from_state"].get<std::string>());
    moves.back() += ">" + e["to_state"].get<std::string>();
    if (e["from_state"] == "provisioning" && e["to_state"] == "scheduled") why = e["reason"];
  }
  EXPECT_EQ(moves, (std::vector<std::string>{">scheduled", "scheduled>provisioning",
                                             "provisioning>scheduled", "scheduled>scheduled",
                                             "scheduled>provisioning", "provisioning>active"}));
  EXPECT_EQ(why, "node " + slow + " failed its handover burn-in");

  // The slow node left the pool, with the figure that failed it in its history.
  json node = node_view(slow);
  EXPECT_NE(node["state"], "available") << node.dump();
  ASSERT_GE(node["burn_ins"].size(), 2u) << node.dump();
  EXPECT_EQ(node["burn_ins"][0]["phase"], "handover");
  EXPECT_EQ(node["burn_ins"][0]["passed"], false);
  EXPECT_NE(node["burn_ins"][0]["failed"][0].get<std::string>().find("gpu3 matmul"),
            std::string::npos)
      << node.dump();

  // The operator's alert counts it (GpurentBurnInFailed).
  auto scraped = http_request(server_->port(), "GET", "/metrics");
  EXPECT_NE(scraped.body.find("gpurent_burn_ins_total{phase=\"handover\",verdict=\"failed\"} 1"),
            std::string::npos)
      << scraped.body.substr(0, 2000);

  // An admin's burn-in of the healthy node, on request: queued, run, judged, shown.
  auto asked = post("/v1/admin/nodes/" + healthy + "/burn-in", json::object(), session(admin_));
  ASSERT_EQ(asked.status, 202) << asked.body;
  EXPECT_TRUE(wait_for([&] {
    json b = node_view(healthy)["burn_ins"];
    return !b.empty() && b[0]["task_id"] == asked.json()["task_id"] && b[0]["phase"] == "admin" &&
           b[0]["passed"] == true;
  })) << node_view(healthy).dump();
  // The failed burn-in's task says which GPU and by how much.
  bool named = false;
  for (const auto& t : tasks_of(rental)) {
    if (t["kind"] == "burn_in" && t["state"] == "failed") {
      named = t["result_message"].is_string() &&
              t["result_message"].get<std::string>().find("gpu3 matmul") != std::string::npos;
    }
  }
  EXPECT_TRUE(named) << tasks_of(rental).dump();

  // The signed handover report, checked offline with the published key, as a tenant would.
  auto report = get("/v1/rentals/" + rental + "/report", session(owner));
  ASSERT_EQ(report.status, 200) << report.body;
  json r = report.json();
  EXPECT_EQ(r["rental_id"], rental);
  EXPECT_EQ(r["node"]["id"], healthy);
  EXPECT_EQ(r["failed_handovers"][0]["node_id"], slow);
  EXPECT_FALSE(r["measurements"].empty());
  // Every kind of figure the simulated tools print, for the rental's own GPUs.
  std::set<std::string> kinds;
  for (const auto& m : r["measurements"]) {
    std::string name = m["name"];
    kinds.insert(name.substr(0, name.find(' ')));
  }
  for (const char* kind : {"gpu_throughput", "gpu_tensor_throughput", "gpu_memory_bandwidth",
                           "nvlink", "peer_bandwidth"}) {
    EXPECT_TRUE(kinds.contains(kind)) << kind << " " << r["measurements"].dump();
  }
  EXPECT_EQ(r["algorithm"], "Ed25519");
  auto published = get("/v1/platform/report-key", {});  // no credentials needed
  ASSERT_EQ(published.status, 200) << published.body;
  std::string dir = work_ + "/report";
  fs::create_directories(dir);
  std::ofstream(dir + "/key.pem") << published.json()["public_key_pem"].get<std::string>();
  std::ofstream(dir + "/report.b64") << r["payload"].get<std::string>();
  std::ofstream(dir + "/sig.b64") << r["signature"].get<std::string>();
  auto checked = run_subprocess(
      {"sh", "-c",
       "cd " + dir +
           " && base64 -d report.b64 > report.json && base64 -d sig.b64 > report.sig &&"
           " openssl pkeyutl -verify -pubin -inkey key.pem -rawin -in report.json"
           " -sigfile report.sig"});
  EXPECT_EQ(checked.exit_code, 0) << checked.output;
  // The signed bytes are the report as served, less the signature's own members.
  json unsigned_part = r;
  for (const char* k : {"signature", "key_id", "algorithm", "payload"}) unsigned_part.erase(k);
  EXPECT_EQ(json::parse(std::ifstream(dir + "/report.json")), unsigned_part);
  EXPECT_EQ(r["key_id"], published.json()["key_id"]);

  // The catalog shows what the fleet measured: the healthy node's figures (the slow node's
  // burn-in failed and does not count), and the price per measured TFLOP/s a day.
  auto offers = get("/v1/offers?gpu_model=" + std::string(kModel) + "&gpu_count=2", session(owner));
  ASSERT_EQ(offers.status, 200) << offers.body;
  json offer = offers.json()["items"][0];
  ASSERT_TRUE(offer["measured"].is_object()) << offer.dump();
  EXPECT_EQ(offer["measured"]["nodes"], 1);
  double gflops = offer["measured"]["gflops_per_gpu"];
  EXPECT_GT(gflops, 50000) << "an H100's simulated figure, not the slow GPU's";
  long long per_day = offer["price_per_day"]["amount_minor"];
  EXPECT_EQ(offer["price_per_measured_tflops_day"]["amount_minor"],
            std::llround(per_day / (gflops / 1000.0 * 2)));

  // The advisor's recommendations carry the same figures.
  auto advice =
      post("/v1/advisor", {{"preset", "llama-3-8b"}, {"precision", "bf16"}, {"task", "lora"}},
           session(owner));
  ASSERT_EQ(advice.status, 200) << advice.body;
  json recommendations = advice.json()["recommendations"];
  ASSERT_FALSE(recommendations.empty()) << advice.body;
  EXPECT_EQ(recommendations[0]["measured"], offer["measured"]) << advice.body;
  EXPECT_TRUE(recommendations[0]["price_per_measured_tflops_day"].is_object()) << advice.body;

  // The rental's line on its invoice carries the energy its GPUs drew: three samples of the
  // agent, each kept after the test clock moved a minute (a gap over three minutes would count
  // as no draw), copied to the rental by the lifecycle's job.
  json latest = node_view(healthy)["telemetry"];
  std::string sampled_at = latest.is_object() ? latest.value("at", "") : "";
  for (int i = 0; i < 3; ++i) {
    advance(61);
    ASSERT_TRUE(wait_for([&] {
      json t = node_view(healthy)["telemetry"];
      if (!t.is_object() || !t["at"].is_string() || t["at"] == sampled_at) return false;
      sampled_at = t["at"];
      return true;
    })) << node_view(healthy).dump();
  }
  run_lifecycle();
  json invoices = get("/v1/invoices", session(owner)).json();
  json line;
  for (const auto& invoice : invoices["items"]) {
    for (const auto& l : invoice["lines"]) {
      if (l["rental_id"] == rental && l["kind"] == "rental_days") line = l;
    }
  }
  ASSERT_TRUE(line["energy_kwh"].is_number()) << invoices.dump();
  // Its two H100s at the simulated 70 W each over at least the two minutes between the three
  // samples (earlier ones a minute apart count too).
  EXPECT_GE(line["energy_kwh"].get<double>(), 2 * 70.0 * 122 / 3.6e6)
      << line.dump() << "\n"
      << get("/v1/rentals/" + rental + "/telemetry?step=10", session(owner)).body;
  auto telemetry = get("/v1/rentals/" + rental + "/telemetry", session(owner));
  ASSERT_EQ(telemetry.status, 200) << telemetry.body;
  EXPECT_GE(telemetry.json()["energy_kwh"].get<double>(), line["energy_kwh"].get<double>())
      << telemetry.body;
  EXPECT_EQ(telemetry.json()["gpus"][0]["samples"].back()["sm_clock_mhz"], 1980.0)
      << telemetry.body;

  // Another org's rental is as unknown as none.
  Login stranger = account("stranger@example.com", "Other");
  EXPECT_EQ(get("/v1/rentals/" + rental + "/report", session(stranger)).status, 404);
}

}  // namespace gpurent::testing::burn_in_e2e
