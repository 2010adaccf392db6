// The burn-in in the rental lifecycle against a real PostgreSQL (issue "Hardware you can
// trust"): between a rental's provision and its access the node's GPUs and links are measured
// and judged; a slow GPU found there drains the node and moves the rental to other GPUs for
// the same period (or cancels it free when none are free), and billing never starts; a clean
// one goes on to the access and `active`, its figures kept with the rental; after every
// rental's wipe the node is measured again, and a failure there drains it for the operator
// without touching the ended rental or its money.
#include "agent_proto/burn_in/figures.h"
#include "billing/top_ups.h"
#include "core/subprocess.h"
#include "scheduler/doctor.h"
#include "scheduler/handover_report.h"
#include "scheduler/rental_billing.h"
#include "scheduler/tests/lifecycle_fixture.h"
#include "tests/support/pg_harness.h"
#include "tests/support/wait_for.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <future>
#include <set>

namespace gpurent::scheduler {
namespace burn_in_lifecycle_pgtest {

using burn_in::BurnInFigures;

// An HGX H100 as a healthy one measures: every pair near 395 GB/s (the nominal 450 per
// direction), every GPU near 51,000 Gflop/s.
BurnInFigures healthy() {
  BurnInFigures f{.tools = {"gpu_burn", "nvbandwidth", "nccl"}, .nccl_bus_gbps = 448};
  for (int i = 0; i < 8; ++i) f.gpus.push_back({i, 51000.0 - i, true});
  for (int a = 0; a < 8; ++a) {
    for (int b = a + 1; b < 8; ++b) f.links.push_back({a, b, 395.0});
  }
  return f;
}

BurnInFigures slow_gpu3() {
  auto f = healthy();
  f.gpus[3].gflops = 20400;
  return f;
}

class BurnInLifecycleTest : public LifecycleTest {
 protected:
  void SetUp() override {
    LifecycleTest::SetUp();
    rentals_.on_transition([this](Tx& tx, const std::string& id, RentalState from, RentalState to) {
      bill_transition(tx, charges_, rentals_, lifecycle_.handovers(), id, from, to, clock_.now());
    });
    transact([&](Tx& tx) {
      return top_ups_.credit(tx, a_.org_id, Money(100'000'000, "RUB"), billing::CreditKind::kTopUp,
                             "test", std::nullopt);
    });
  }
  ~BurnInLifecycleTest() override { rentals_.on_transition(nullptr); }

  int run_burning(Timestamp at) {
    auto ahead = std::chrono::duration_cast<std::chrono::microseconds>(at - clock_.now());
    if (ahead.count() > 0) clock_.advance(ahead);
    return burning_.run_once(pool_, clock_.now());
  }

  // A booking with its day's hold, as the booking use case places one.
  std::string held(const std::string& node_id, const Period& p) {
    std::string id = book(a_, node_id, {0, 1, 2, 3, 4, 5, 6, 7}, p);
    transact([&](Tx& tx) {
      charges_.hold(tx,
                    {.rental_id = id,
                     .org_id = a_.org_id,
                     .description = id,
                     .day_price_minor = 2'500'000,
                     .days = 1},
                    {});
      return 0;
    });
    return id;
  }

  // The agent module's report: a burn-in is judged first, then completed and told.
  bool report_task(const AgentTask& t, bool ok, const std::optional<BurnInFigures>& figures = {}) {
    return transact([&](Tx& tx) {
      std::string message = ok ? "done" : "broke";
      if (t.kind == TaskKind::kBurnIn) {
        auto judged = burning_.judge_burn_in(
            tx, t, ok, message, figures ? std::optional(burn_in::to_json(*figures)) : std::nullopt,
            clock_.now());
        ok = judged.passed;
        message = judged.message;
      }
      if (!tasks_.complete(tx, t.id, ok, message)) return false;
      auto reported = t;
      reported.result_message = message;
      burning_.task_finished(tx, reported, ok, clock_.now());
      return true;
    });
  }

  std::optional<AgentTask> open_task(const std::string& id, TaskKind kind) {
    for (const auto& t : tasks(id)) {
      if (t.kind == kind && t.state != TaskState::kSucceeded && t.state != TaskState::kFailed) {
        return t;
      }
    }
    return std::nullopt;
  }

  // Provision, burn-in with `figures`, access, as the agent reports them: where it stopped.
  void hand_over(const std::string& id, const BurnInFigures& figures) {
    auto provision = open_task(id, TaskKind::kProvision);
    ASSERT_TRUE(provision);
    ASSERT_TRUE(report_task(*provision, true));
    EXPECT_FALSE(open_task(id, TaskKind::kInstallAccess)) << "no access before the burn-in";
    auto burn = open_task(id, TaskKind::kBurnIn);
    ASSERT_TRUE(burn) << "the provision's success brings the burn-in";
    EXPECT_EQ(burn->payload["phase"], "handover");
    EXPECT_EQ(burn->node_id, *rental(id).node_id);
    ASSERT_TRUE(report_task(*burn, true, figures));
  }

  billing::Balances balance() {
    return read([&](Tx& tx) { return ledger_.balances(tx, a_.org_id); });
  }

  std::vector<inventory::BurnInRecord> burn_ins(const std::string& id) {
    return read([&](Tx& tx) { return store_.for_rental(tx, id); });
  }

  billing::Ledger ledger_{"RUB"};
  billing::InvoiceStore invoices_{clock_, "RUB", 2000};
  billing::RentalCharges charges_{clock_, ledger_, invoices_, {}};
  billing::TopUps top_ups_{clock_, ledger_};
  inventory::BurnInStore store_;
  inventory::NodeHealthLog log_;
  Lifecycle burning_{rentals_,
                     tasks_,
                     nodes_,
                     booking_,
                     {.provisioning_timeout = kTimeout,
                      .releasing_timeout = kTimeout,
                      .poll = kPoll,
                      .max_attempts = 3,
                      .burn_ins = true},
                     &access_};
};

TEST_F(BurnInLifecycleTest, ACleanHandoverIsMeasuredThenAccessedThenActiveWithItsFiguresKept) {
  std::string n1 = node("n1");
  std::string id = held(n1, from_now(H(1), H(25)));
  EXPECT_EQ(run_burning(t0_ + H(1)), 1);
  hand_over(id, healthy());
  auto access = open_task(id, TaskKind::kInstallAccess);
  ASSERT_TRUE(access) << "a passed burn-in brings the access";
  ASSERT_TRUE(report_task(*access, true));
  EXPECT_EQ(run_burning(clock_.now()), 1);
  EXPECT_EQ(rental(id).state, RentalState::kActive);

  auto kept = burn_ins(id);
  ASSERT_EQ(kept.size(), 1u);
  EXPECT_TRUE(kept[0].passed);
  EXPECT_EQ(kept[0].phase, "handover");
  EXPECT_EQ(kept[0].node_id, n1);
  EXPECT_EQ(kept[0].gpu_model, "H100-SXM5-80GB");
  EXPECT_EQ(burn_in::figures_from_json(kept[0].figures), healthy());
  // Each pair held to at least 0.7 of the catalog's NVLink figure per direction (900 / 2).
  bool held_to_nominal = false;
  for (const auto& f : kept[0].findings) {
    if (f["check"] == "peer_bandwidth" && f["subject"] == "gpu0-gpu1") {
      held_to_nominal = f["expected"].get<double>() >= 315.0 && f["verdict"] == "pass";
    }
  }
  EXPECT_TRUE(held_to_nominal) << kept[0].findings.dump();
  EXPECT_EQ(node_state(n1), "available");
}

TEST_F(BurnInLifecycleTest, ASlowGpuAtHandoverDrainsTheNodeMovesTheRentalAndChargesNothing) {
  std::string n1 = node("n1");
  std::string n2 = node("n2");
  std::string id = held(n1, from_now(H(1), H(25)));
  const auto before = balance();
  EXPECT_EQ(run_burning(t0_ + H(1)), 1);
  hand_over(id, slow_gpu3());

  auto failed = tasks(id);
  auto burn = std::find_if(failed.begin(), failed.end(),
                           [](const AgentTask& t) { return t.kind == TaskKind::kBurnIn; });
  ASSERT_NE(burn, failed.end());
  EXPECT_EQ(burn->state, TaskState::kFailed);
  EXPECT_NE(burn->result_message.value_or("").find("gpu3 matmul 20400 Gflop/s, below"),
            std::string::npos)
      << burn->result_message.value_or("");

  EXPECT_EQ(run_burning(clock_.now()), 1);
  auto moved = rental(id);
  EXPECT_EQ(moved.state, RentalState::kScheduled);
  EXPECT_EQ(moved.node_id, n2);
  // Its start has passed: it runs from now for its whole length, so no paid time is lost.
  EXPECT_GE(moved.period.start, t0_ + H(1));
  EXPECT_LE(moved.period.start, clock_.now());
  EXPECT_EQ(moved.period.end - moved.period.start, H(24)) << "the same length";
  EXPECT_EQ(moved.price_per_day, Money(2'500'000, "RUB")) << "the same price";
  EXPECT_NE(node_state(n1), "available") << "the node left the pool";
  EXPECT_FALSE(open_task(id, TaskKind::kInstallAccess)) << "no access on the failed node";
  // The failed node is wiped before anyone else's rental: its revoke and wipe are queued.
  std::vector<TaskKind> on_n1;
  for (const auto& t : node_tasks(n1)) on_n1.push_back(t.kind);
  EXPECT_EQ(on_n1, (std::vector<TaskKind>{TaskKind::kRevokeAccess, TaskKind::kWipe}));
  EXPECT_EQ(balance().available, before.available) << "nothing charged";
  EXPECT_EQ(balance().held, before.held) << "the hold moves with the rental";

  // On n2 the rental starts over and is handed over once n2 measures well.
  EXPECT_EQ(run_burning(clock_.now()), 1);
  EXPECT_EQ(rental(id).state, RentalState::kProvisioning);
  hand_over(id, healthy());
  auto access = open_task(id, TaskKind::kInstallAccess);
  ASSERT_TRUE(access);
  EXPECT_EQ(access->node_id, n2);
  ASSERT_TRUE(report_task(*access, true));
  EXPECT_EQ(run_burning(clock_.now()), 1);
  EXPECT_EQ(rental(id).state, RentalState::kActive);

  auto kept = burn_ins(id);
  ASSERT_EQ(kept.size(), 2u);
  EXPECT_FALSE(kept[0].passed);
  EXPECT_EQ(kept[0].node_id, n1);
  EXPECT_TRUE(kept[1].passed);
  EXPECT_EQ(kept[1].node_id, n2);
}

TEST_F(BurnInLifecycleTest, WithNoOtherGpusFreeTheRentalIsCancelledFreeAndItsHoldReleased) {
  std::string n1 = node("n1");
  const auto before = balance();
  std::string id = held(n1, from_now(H(1), H(25)));
  EXPECT_EQ(run_burning(t0_ + H(1)), 1);
  hand_over(id, slow_gpu3());
  EXPECT_EQ(run_burning(clock_.now()), 1);
  EXPECT_EQ(rental(id).state, RentalState::kCancelled);
  EXPECT_NE(node_state(n1), "available");
  EXPECT_EQ(balance().available, before.available) << "the hold came back whole";
  EXPECT_EQ(balance().held.amount_minor(), 0);
}

TEST_F(BurnInLifecycleTest, EveryReleaseIsMeasuredAndAFailureDrainsTheNodeWithoutACredit) {
  std::string n1 = node("n1");
  for (const auto& figures : {healthy(), slow_gpu3()}) {
    std::string id = held(n1, {clock_.now() + seconds(1), clock_.now() + H(1)});
    run_burning(clock_.now() + seconds(1));
    hand_over(id, healthy());
    ASSERT_TRUE(report_task(*open_task(id, TaskKind::kInstallAccess), true));
    run_burning(clock_.now());
    ASSERT_EQ(rental(id).state, RentalState::kActive);
    run_burning(clock_.now() + H(1));
    ASSERT_EQ(rental(id).state, RentalState::kReleasing);
    ASSERT_TRUE(report_task(*open_task(id, TaskKind::kRevokeAccess), true));
    ASSERT_TRUE(report_task(*open_task(id, TaskKind::kWipe), true));
    run_burning(clock_.now() + kAfter);
    ASSERT_EQ(rental(id).state, RentalState::kEnded);
    auto release = open_task(id, TaskKind::kBurnIn);
    ASSERT_TRUE(release) << "a release burn-in after every rental";
    EXPECT_EQ(release->payload["phase"], "release");
    const auto balance_at_end = balance();
    ASSERT_TRUE(report_task(*release, true, figures));
    EXPECT_EQ(rental(id).state, RentalState::kEnded) << "the rental is over either way";
    EXPECT_EQ(balance().available, balance_at_end.available)
        << "no credit for the operator's fault";
    auto kept = burn_ins(id);
    ASSERT_EQ(kept.size(), 2u);
    EXPECT_EQ(kept[1].phase, "release");
    EXPECT_EQ(kept[1].passed, figures == healthy());
    clock_.advance(kWindow + seconds(1));
  }
  EXPECT_NE(node_state(n1), "available") << "the second release burn-in failed";
}

TEST_F(BurnInLifecycleTest, ToolsThatCouldNotRunOrAResultThatDoesNotReadFailTheHandover) {
  std::string n1 = node("n1");
  std::string id = held(n1, from_now(H(1), H(25)));
  EXPECT_EQ(run_burning(t0_ + H(1)), 1);
  ASSERT_TRUE(report_task(*open_task(id, TaskKind::kProvision), true));
  auto burn = *open_task(id, TaskKind::kBurnIn);
  auto outcome = transact([&](Tx& tx) {
    return burning_.judge_burn_in(tx, burn, true, "done",
                                  nlohmann::json{{"tools", {"gpu_burn"}}, {"gpus", "all fine"}},
                                  clock_.now());
  });
  EXPECT_FALSE(outcome.passed);
  EXPECT_NE(outcome.message.find("burn-in result unreadable"), std::string::npos)
      << outcome.message;
  ASSERT_TRUE(report_task(burn, false));
  EXPECT_EQ(run_burning(clock_.now()), 1);
  EXPECT_EQ(rental(id).state, RentalState::kCancelled);
  EXPECT_NE(node_state(n1), "available");
}

// The handover report of a rental moved off a node that failed: signed with the platform's
// report key, checked by `openssl pkeyutl` with the published public key as any tenant would;
// a byte changed fails the check. It names the GPUs, links and figures the tenant got (its own
// GPUs only) and the node that failed before; before the handover it has none, and another
// org's caller gets not_found.
TEST_F(BurnInLifecycleTest, AHandoverReportIsSignedAndVerifiesWithOpenssl) {
  namespace fs = std::filesystem;
  fs::path keys = testing::make_temp_dir("gpurent-report-keys");
  auto ca = identity::SshCertificateAuthority::load_or_create(keys / "ca");
  HandoverReports reports(pool_, rentals_, ca);
  Caller owner{.org_id = a_.org_id};
  Caller other{.org_id = b_.org_id};

  std::string n1 = node("n1");
  std::string n2 = node("n2");
  std::string id = book(a_, n1, {2, 3}, from_now(H(1), H(25)));
  EXPECT_EQ(run_burning(t0_ + H(1)), 1);
  EXPECT_TRUE(reports.report(owner, id).report["handover"].is_null()) << "not handed over yet";
  hand_over(id, slow_gpu3());  // n1's GPU 3 is the rental's: it fails there
  EXPECT_EQ(run_burning(clock_.now()), 1);
  EXPECT_EQ(run_burning(clock_.now()), 1);
  hand_over(id, healthy());
  ASSERT_TRUE(report_task(*open_task(id, TaskKind::kInstallAccess), true));
  EXPECT_EQ(run_burning(clock_.now()), 1);
  ASSERT_EQ(rental(id).state, RentalState::kActive);

  auto signed_report = reports.report(owner, id);
  const auto& r = signed_report.report;
  EXPECT_EQ(r["rental_id"], id);
  EXPECT_EQ(r["node"]["id"], n2);
  EXPECT_EQ(r["image"]["driver_version"], "550.54.14");
  EXPECT_EQ(r["topology"]["gpus"].size(), 2u);
  EXPECT_EQ(r["failed_handovers"].size(), 1u);
  EXPECT_EQ(r["failed_handovers"][0]["node_id"], n1);
  ASSERT_TRUE(r["handover"]["passed"].get<bool>());
  auto got = rental(id).gpu_indices;
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(r["node"]["gpu_indices"], got);
  std::set<std::string> allowed{"node", "gpu" + std::to_string(got[0]),
                                "gpu" + std::to_string(got[1]),
                                "gpu" + std::to_string(got[0]) + "-gpu" + std::to_string(got[1])};
  int gpu_figures = 0;
  for (const auto& m : r["measurements"]) {
    std::string name = m["name"];
    std::string subject = name.substr(name.find(' ') + 1);
    EXPECT_TRUE(allowed.contains(subject)) << "another tenant's GPU in the report: " << name;
    EXPECT_EQ(m["verdict"], "pass") << name;
    gpu_figures += subject.starts_with("gpu");
    if (name.starts_with("peer_bandwidth")) {
      EXPECT_EQ(m["value"], 395.0);
      EXPECT_EQ(m["unit"], "GB/s");
      EXPECT_GE(m["expected"].get<double>(), 315.0);
    }
  }
  EXPECT_EQ(gpu_figures, 3) << "its two GPUs and the link between them";
  EXPECT_EQ(r["signed_at"], r["handover"]["measured_at"]);
  EXPECT_EQ(reports.report(owner, id).signature, signed_report.signature) << "the same every read";
  EXPECT_TRUE(signed_report.key_id.starts_with("gpurent-report-"));
  EXPECT_EQ(signed_report.payload, r.dump());
  EXPECT_EQ(signed_report.signature.size(), 64u);

  auto write = [&](const std::string& name, const std::string& bytes) {
    std::ofstream(keys / name, std::ios::binary) << bytes;
    return (keys / name).string();
  };
  std::string pem = write("report-key.pem", reports.public_key_pem());
  std::string sig = write("report.sig", signed_report.signature);
  auto verify = [&](const std::string& payload_file) {
    return run_subprocess({"openssl", "pkeyutl", "-verify", "-pubin", "-inkey", pem, "-rawin",
                           "-in", payload_file, "-sigfile", sig});
  };
  auto good = verify(write("report.json", signed_report.payload));
  EXPECT_EQ(good.exit_code, 0) << good.output;
  EXPECT_NE(good.output.find("Signature Verified Successfully"), std::string::npos) << good.output;
  std::string tampered = signed_report.payload;
  tampered[tampered.find(n2)] ^= 1;
  EXPECT_NE(verify(write("tampered.json", tampered)).exit_code, 0);

  try {
    reports.report(other, id);
    ADD_FAILURE() << "another org's rental";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotFound);
  }
  fs::remove_all(keys);
}

// A node's own burn-ins: at its enrolment (only with burn-ins on) and on an admin's request
// (always), of every GPU; a failure drains the node, and is kept with the node's, not a
// rental's.
TEST_F(BurnInLifecycleTest, ANodesEnrolmentAndAdminBurnInsDrainItWhenTheyFail) {
  std::string n1 = node("n1");
  auto enrolment = transact([&](Tx& tx) { return burning_.node_burn_in(tx, n1, 8, "enrolment"); });
  ASSERT_TRUE(enrolment);
  EXPECT_FALSE(enrolment->rental_id);
  EXPECT_EQ(enrolment->payload["phase"], "enrolment");
  EXPECT_EQ(enrolment->payload["gpu_indices"].size(), 8u);
  EXPECT_FALSE(transact([&](Tx& tx) { return lifecycle_.node_burn_in(tx, n1, 8, "enrolment"); }))
      << "no enrolment burn-in with burn-ins off";
  ASSERT_TRUE(report_task(*enrolment, true, healthy()));
  EXPECT_EQ(node_state(n1), "available");

  auto asked = transact([&](Tx& tx) { return lifecycle_.node_burn_in(tx, n1, 8, "admin"); });
  ASSERT_TRUE(asked) << "an admin's request is heard with burn-ins off too";
  ASSERT_TRUE(report_task(*asked, true, slow_gpu3()));
  EXPECT_NE(node_state(n1), "available") << "drained";
  auto kept = read([&](Tx& tx) { return store_.for_node(tx, n1, 10); });
  ASSERT_EQ(kept.size(), 2u);
  EXPECT_EQ(kept[0].phase, "admin");
  EXPECT_FALSE(kept[0].passed);
  EXPECT_EQ(kept[1].phase, "enrolment");
  EXPECT_TRUE(kept[1].passed);
}

// The node's memory error counters when the burn-in was made and when it is judged: an
// uncorrectable error that appeared while the tools ran fails the handover, however good the
// figures.
TEST_F(BurnInLifecycleTest, AnUncorrectableMemoryErrorDuringTheBurnInFailsTheHandover) {
  std::string n1 = node("n1");
  auto report_ecc = [&](int gpu5_dbe) {
    inventory::TelemetrySample sample{
        .node_id = n1, .at = clock_.now(), .telemetry = nlohmann::json::array()};
    for (int i = 0; i < 8; ++i) {
      sample.telemetry.push_back(
          {{"index", i}, {"ecc_volatile_dbe", i == 5 ? gpu5_dbe : 0}, {"ecc_volatile_sbe", 0}});
    }
    transact([&](Tx& tx) {
      log_.record_samples(tx, {sample});
      return 0;
    });
    clock_.advance(std::chrono::seconds(1));
  };
  report_ecc(0);
  std::string id = held(n1, from_now(H(1), H(25)));
  EXPECT_EQ(run_burning(t0_ + H(1)), 1);
  ASSERT_TRUE(report_task(*open_task(id, TaskKind::kProvision), true));
  auto burn = open_task(id, TaskKind::kBurnIn);
  ASSERT_TRUE(burn);
  EXPECT_EQ(burn->payload["ecc_before"][5]["ecc_volatile_dbe"], 0) << burn->payload.dump();
  report_ecc(2);  // while the tools ran
  ASSERT_TRUE(report_task(*burn, true, healthy()));
  auto judged = read([&](Tx& tx) { return tasks_.get(tx, burn->id); });
  EXPECT_EQ(judged->state, TaskState::kFailed);
  EXPECT_NE(judged->result_message.value_or("").find(
                "gpu5 had 2 uncorrectable memory errors during the burn-in"),
            std::string::npos)
      << judged->result_message.value_or("");
  EXPECT_EQ(run_burning(clock_.now()), 1);
  EXPECT_EQ(rental(id).state, RentalState::kCancelled);
  EXPECT_NE(node_state(n1), "available");
}

// Each doctor holds a worker thread while it waits for its node's agent: past max_waiting at
// once, a doctor is refused (rate_limited) at once rather than starve the server; one whose
// agent never answers gives up after its wait (unavailable) and closes its task.
TEST_F(BurnInLifecycleTest, DoctorsWaitingAtOnceAreCappedAndOneUnansweredGivesUp) {
  std::string n1 = node("n1");
  std::string id = held(n1, from_now(H(1), H(25)));
  EXPECT_EQ(run_burning(t0_ + H(1)), 1);
  hand_over(id, healthy());
  ASSERT_TRUE(report_task(*open_task(id, TaskKind::kInstallAccess), true));
  EXPECT_EQ(run_burning(clock_.now()), 1);
  ASSERT_EQ(rental(id).state, RentalState::kActive);

  Doctor doctor(
      pool_, rentals_, tasks_,
      {.wait = std::chrono::seconds(3), .poll = std::chrono::milliseconds(50), .max_waiting = 1});
  Caller owner{.org_id = a_.org_id};
  auto first = std::async(std::launch::async, [&] { return doctor.examine(owner, id, false); });
  // The first is waiting once its task is there (no agent answers here).
  ASSERT_TRUE(testing::wait_for([&] { return open_task(id, TaskKind::kDoctor).has_value(); }));
  try {
    doctor.examine(owner, id, false);
    ADD_FAILURE() << "a second doctor while one waits";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kRateLimited);
  }
  try {
    first.get();
    ADD_FAILURE() << "no agent answered";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnavailable);
  }
  EXPECT_FALSE(open_task(id, TaskKind::kDoctor)) << "the unanswered task is closed";
}

}  // namespace burn_in_lifecycle_pgtest
}  // namespace gpurent::scheduler
