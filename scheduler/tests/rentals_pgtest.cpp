// The customer's rental use cases (scheduler/rentals.h) against a real PostgreSQL: what the
// routes used to compose themselves, now held here without HTTP in between — the caller's
// org and token, the org's guardrails read inside the use case's own transaction, the SSH
// keys a booking names, and another org's rental as unknown as none to every use case.
#include "scheduler/rentals.h"

#include "core/error.h"
#include "core/limits.h"
#include "core/time.h"
#include "identity/ssh_certificate_authority.h"
#include "identity/ssh_key_store.h"
#include "identity/ssh_public_key.h"
#include "scheduler/tests/lifecycle_fixture.h"
#include "tests/support/error_code.h"
#include "tests/support/test_keys.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace gpurent::scheduler {
namespace {

namespace fs = std::filesystem;

std::string public_key_text(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

class RentalsTest : public LifecycleTest {
 protected:
  void SetUp() override {
    LifecycleTest::SetUp();
    std::string pattern = (fs::temp_directory_path() / "gpurent-rentals-XXXXXX").string();
    dir_ = mkdtemp(pattern.data());
    ca_.emplace(identity::SshCertificateAuthority::load_or_create(dir_ / "ca"));
    ssh_.emplace(*ca_, clock_);
    use_cases_.emplace(pool_, clock_, booking_, lifecycle_, rentals_, ssh_keys_, &*ssh_, nullptr);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // The caller a route would build for the tenant's owner (a panel session: no token).
  static Caller caller(const Tenant& t, Guardrails token = {}) {
    return {.actor = {.user_id = t.user_id, .ip = "192.0.2.7", .request_id = "req-test"},
            .org_id = t.org_id,
            .role = "owner",
            .token_guardrails = token};
  }

  // One whole 8-GPU node (the fixture's price is for eight) for `days` from a day ahead.
  BookingRequest request_here(int days, std::vector<std::string> keys = {}) {
    BookingRequest r;
    r.gpu_model = "H100-SXM5-80GB";
    r.gpu_count = 8;
    r.image_id = image_;
    r.start = t0_ + H(24);
    r.days = days;
    r.ssh_key_ids = std::move(keys);
    return r;
  }

  std::string key_of(const Tenant& t, const std::string& pair) {
    auto key = identity::parse_ssh_public_key(
        public_key_text(testing::ssh_key_pair(pair, {"-t", "ed25519"}) + ".pub"));
    Actor actor{.user_id = t.user_id};
    return transact([&](Tx& tx) { return ssh_keys_.create(tx, t.org_id, pair, key, actor).id; });
  }

  void set_org_limits(const Tenant& t, std::optional<int> max_days) {
    transact([&](Tx& tx) {
      identity::GuardrailsChange change;
      change.max_days = {.change = true, .value = max_days};
      ASSERT_TRUE(orgs_.set_guardrails(tx, t.org_id, change, admin_));
    });
  }

  template <typename Fn>
  static std::string code_of(Fn&& fn) {
    return testing::error_code_of(std::forward<Fn>(fn));
  }

  long long rentals_of(const Tenant& t) {
    return count("SELECT count(*) FROM rentals WHERE org_id = '" + t.org_id + "'");
  }

  fs::path dir_;
  identity::SshKeyStore ssh_keys_{clock_};
  std::optional<identity::SshCertificateAuthority> ca_;
  std::optional<SshAccess> ssh_;
  std::optional<Rentals> use_cases_;
};

TEST_F(RentalsTest, ABookingIsTheCallersAndNamesOnlyTheOrgsOwnSshKeys) {
  node("n1");
  std::string mine = key_of(a_, "rentals-a");
  std::string theirs = key_of(b_, "rentals-b");

  try {
    use_cases_->book(caller(a_), request_here(2, {mine, theirs}));
    ADD_FAILURE() << "another org's key was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidRequest);
    EXPECT_EQ(e.details().value("field", ""), "ssh_key_ids");
  }
  EXPECT_EQ(rentals_of(a_), 0) << "a refused booking writes nothing";

  auto rental = use_cases_->book(caller(a_), request_here(2, {mine}));
  EXPECT_EQ(rental.org_id, a_.org_id);
  EXPECT_EQ(rental.created_by, a_.user_id);
  EXPECT_EQ(rental.state, RentalState::kScheduled);
  EXPECT_EQ(rental.ssh_key_ids, std::vector<std::string>{mine});
  EXPECT_EQ(rentals_of(b_), 0);
}

TEST_F(RentalsTest, TheStricterOfTheOrgsAndTheTokensMaxDaysHoldsForBookAndExtend) {
  node("n1");
  set_org_limits(a_, 5);
  EXPECT_EQ(code_of([&] { use_cases_->book(caller(a_), request_here(6)); }), "quota_exceeded");
  EXPECT_EQ(code_of([&] { use_cases_->book(caller(a_, {.max_days = 3}), request_here(4)); }),
            "quota_exceeded")
      << "the token's limit is the stricter";
  // A quote is held to the same limits, writing nothing.
  NoCapacity none;
  EXPECT_EQ(code_of([&] { use_cases_->quote(caller(a_), request_here(6), &none); }),
            "quota_exceeded");
  EXPECT_EQ(rentals_of(a_), 0);

  auto rental = use_cases_->book(caller(a_), request_here(3));
  EXPECT_EQ(code_of([&] { use_cases_->extend(caller(a_, {.max_days = 4}), rental.id, 2); }),
            "quota_exceeded")
      << "3 + 2 days is past the token's 4";
  EXPECT_EQ(use_cases_->extend(caller(a_), rental.id, 2).days, 5) << "the org's 5 allows it";
  EXPECT_EQ(code_of([&] { use_cases_->extend(caller(a_), rental.id, 1); }), "quota_exceeded");
  // Lifted meanwhile: the next extension reads the limit as it is now.
  set_org_limits(a_, std::nullopt);
  EXPECT_EQ(use_cases_->extend(caller(a_), rental.id, 1).days, 6);
}

TEST_F(RentalsTest, AnotherOrgsRentalIsUnknownToEveryUseCase) {
  node("n1");
  auto booked = use_cases_->book(caller(a_), request_here(1));
  auto key = identity::parse_ssh_public_key(
      public_key_text(testing::ssh_key_pair("rentals-cert", {"-t", "ed25519"}) + ".pub"));
  const Caller other = caller(b_);
  EXPECT_EQ(code_of([&] { use_cases_->show(other, booked.id); }), "not_found");
  EXPECT_EQ(code_of([&] { use_cases_->events(other, booked.id); }), "not_found");
  EXPECT_EQ(code_of([&] { use_cases_->wait(other, booked.id, RentalState::kActive); }),
            "not_found");
  EXPECT_EQ(code_of([&] { use_cases_->terminate(other, booked.id, "not mine"); }), "not_found");
  EXPECT_EQ(code_of([&] { use_cases_->extend(other, booked.id, 1); }), "not_found");
  EXPECT_EQ(code_of([&] { use_cases_->certificate(other, booked.id, key); }), "not_found");
  EXPECT_TRUE(use_cases_->list(other, std::nullopt, 50, std::nullopt).items.empty());
  EXPECT_EQ(rental(booked.id).state, RentalState::kScheduled) << "nothing changed";
  EXPECT_EQ(rental(booked.id).days, 1);

  // Its owner may do each.
  const Caller owner = caller(a_);
  EXPECT_EQ(use_cases_->show(owner, booked.id).rental.id, booked.id);
  EXPECT_EQ(use_cases_->events(owner, booked.id).size(), 1u);
  auto certificate = use_cases_->certificate(owner, booked.id, key);
  EXPECT_EQ(certificate.principals, std::vector<std::string>{rental_principal(booked.id)});
  EXPECT_EQ(use_cases_->list(owner, std::nullopt, 50, std::nullopt).items.size(), 1u);
  EXPECT_EQ(use_cases_->terminate(owner, booked.id, "done").state, RentalState::kCancelled);
}

TEST_F(RentalsTest, WaitLooksAgainOnlyWhileTheTargetIsStillAhead) {
  node("n1");
  auto rental = use_cases_->book(caller(a_), request_here(1));
  auto answer = use_cases_->wait(caller(a_), rental.id, RentalState::kActive);
  EXPECT_TRUE(answer.keep_waiting) << "scheduled can still become active";
  EXPECT_EQ(answer.view.rental.state, RentalState::kScheduled);
  EXPECT_FALSE(answer.view.ssh) << "no SSH details before it is active";
  EXPECT_FALSE(use_cases_->wait(caller(a_), rental.id, RentalState::kScheduled).keep_waiting)
      << "reached";
  use_cases_->terminate(caller(a_), rental.id, "changed my mind");
  answer = use_cases_->wait(caller(a_), rental.id, RentalState::kActive);
  EXPECT_FALSE(answer.keep_waiting) << "a cancelled rental never becomes active";
  EXPECT_EQ(answer.view.rental.state, RentalState::kCancelled);
}

TEST_F(RentalsTest, ShowTellsAWaitingRequestItsPlaceAndListDoesNot) {
  std::string first = pending(a_, t0_ + H(12));
  std::string second = pending(b_, t0_ + H(12));
  auto view = use_cases_->show(caller(b_), second);
  ASSERT_TRUE(view.waitlist);
  EXPECT_EQ(view.waitlist->position, 2) << "behind a's request";
  EXPECT_EQ(use_cases_->show(caller(a_), first).waitlist->position, 1);
  auto listed = use_cases_->list(caller(a_), RentalState::kPending, 50, std::nullopt);
  ASSERT_EQ(listed.items.size(), 1u);
  EXPECT_FALSE(listed.items[0].waitlist);
}

// The horizon (BookingOptions::horizon, booking_horizon_days: 90 by default) and the longest
// rental are stated in the refusal, so that a CI planning ahead can correct its request.
TEST_F(RentalsTest, AStartPastTheHorizonAndTooManyDaysAreRefusedWithTheAllowedRange) {
  node("n1");
  auto details_of = [&](const BookingRequest& r) {
    try {
      use_cases_->book(caller(a_), r);
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidRequest);
      return e.details();
    }
    ADD_FAILURE() << "booked";
    return nlohmann::json();
  };
  auto far = request_here(1);
  far.start = clock_.now() + H(24 * 91);
  auto refused = details_of(far);
  EXPECT_EQ(refused["field"], "start");
  EXPECT_EQ(refused["booking_horizon_days"], 90);
  ASSERT_TRUE(refused["latest_start"].is_string());
  auto latest = parse_rfc3339(refused["latest_start"].get<std::string>());
  ASSERT_TRUE(latest);
  EXPECT_LT(*latest, std::get<Timestamp>(far.start));
  // The latest start itself is taken.
  auto at_edge = request_here(1);
  at_edge.start = *latest - std::chrono::minutes(1);
  EXPECT_EQ(use_cases_->book(caller(a_), at_edge).state, RentalState::kScheduled);

  auto too_long = request_here(limits::kMaxRentalDays + 1);
  auto range = details_of(too_long);
  EXPECT_EQ(range["field"], "days");
  EXPECT_EQ(range["minimum"], limits::kMinRentalDays);
  EXPECT_EQ(range["maximum"], limits::kMaxRentalDays);
}

TEST_F(RentalsTest, AListPageReadsEveryActiveRentalsSshDetailsInOneStatement) {
  std::vector<std::string> ids;
  for (int i = 0; i < 4; ++i) {
    std::string n = node("n" + std::to_string(i));
    // Host keys on every node but the last, as their agents reported them.
    if (i < 3) {
      exec(
          "INSERT INTO node_ssh_host_keys (node_id, algorithm, public_key, fingerprint,"
          " reported_at) VALUES ('" +
          n + "', 'ssh-ed25519', 'ssh-ed25519 AAAAkey" + std::to_string(i) +
          "', 'SHA256:" + std::string(42, 'f') + std::to_string(i) + "', now())");
    }
    auto r = use_cases_->book(caller(a_), request_here(1));
    transact([&](Tx& tx) {
      rentals_.transition(tx, r.id, RentalState::kScheduled, RentalState::kProvisioning, "test");
      rentals_.transition(tx, r.id, RentalState::kProvisioning, RentalState::kActive, "test");
    });
    ids.push_back(r.id);
  }
  auto listing = [&](int limit) {
    use_cases_->list(caller(a_), std::nullopt, limit, std::nullopt);  // statements prepared
    auto before = pool_.stats().round_trips_total;
    auto page = use_cases_->list(caller(a_), std::nullopt, limit, std::nullopt);
    return std::make_pair(page, pool_.stats().round_trips_total - before);
  };
  auto [one, one_trips] = listing(1);
  auto [all, all_trips] = listing(50);
  ASSERT_EQ(one.items.size(), 1u);
  ASSERT_EQ(all.items.size(), 4u);
  EXPECT_EQ(all_trips, one_trips) << "the same statements for one active rental and four";
  // Each as the rental's own page shows it, host keys included.
  for (const auto& item : all.items) {
    ASSERT_TRUE(item.ssh) << item.rental.id;
    auto shown = use_cases_->show(caller(a_), item.rental.id);
    ASSERT_TRUE(shown.ssh);
    EXPECT_EQ(item.ssh->host, shown.ssh->host);
    EXPECT_EQ(item.ssh->command, shown.ssh->command);
    EXPECT_EQ(item.ssh->known_hosts, shown.ssh->known_hosts);
    EXPECT_EQ(item.ssh->host_key_fingerprints, shown.ssh->host_key_fingerprints);
    EXPECT_EQ(item.ssh->ssh_config, shown.ssh->ssh_config);
  }
  int with_keys = 0;
  for (const auto& item : all.items) with_keys += item.ssh->host_key_fingerprints.size() == 1;
  EXPECT_EQ(with_keys, 3);
}

}  // namespace
}  // namespace gpurent::scheduler
