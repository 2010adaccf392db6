// A maintenance notice reaches the node before the window (issue "Operations that respect the
// tenant"): a real `gpurent-agent`, started as the shipped unit starts it, with a real sshd and
// the shipped access hook making the rental's login, writes the node's notice file and runs
// the rental's checkpoint command as the rental's login, days before the window starts; the
// tenant then answers the notice through the API.
//
// The hook makes real accounts (useradd), so the test needs root (CI runs as root); see
// tests/support/sshd_node_fixture.h for how the node is set up.
#include "core/time.h"
#include "tests/support/sshd_node_fixture.h"

#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

namespace gpurent::testing::tenant_notice_e2e {

using nlohmann::json;
namespace fs = std::filesystem;

class TenantNoticeE2E : public SshdNodeTest {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "the shipped access hook's useradd needs root";
    start_fleet("gpurent-notice");
    prepare_sshd();
    start_sshd();
  }
};

TEST_F(TenantNoticeE2E, TheAgentWritesTheNoticeFileAndRunsTheCheckpointAsTheLoginBeforeTheWindow) {
  const std::string notice_file = work_ + "/run-gpurent/notice.json";
  extra_agent_args_ = {"--notice-file", notice_file};
  std::string node = agent_node();
  Login owner = account("owner@example.com", "Acme");
  std::string key = key_pair("notice-key");
  auto added =
      post("/v1/ssh-keys",
           {{"name", "laptop"},
            {"public_key",
             read_file_text(key + ".pub").substr(0, read_file_text(key + ".pub").find('\n'))}},
           session(owner));
  ASSERT_EQ(added.status, 201) << added.body;
  auto booked = post("/v1/rentals",
                     {{"gpu_model", kModel},
                      {"gpu_count", 2},
                      {"start", "now"},
                      {"days", 7},
                      {"image_id", image_id_},
                      {"ssh_key_ids", {added.json()["id"]}}},
                     session(owner));
  ASSERT_EQ(booked.status, 201) << booked.body;
  std::string rental = booked.json()["id"];
  ASSERT_TRUE(drive_until(owner, rental, "active")) << agent_->log();
  json view = get("/v1/rentals/" + rental, session(owner)).json();
  ASSERT_EQ(view["node_id"], node) << view;
  std::string login = login_of(view["ssh"]);
  ASSERT_FALSE(login.empty()) << view;

  // Where the checkpoint leaves what it saw: a folder any login may write.
  std::string drop = work_ + "/drop";
  fs::create_directories(drop);
  fs::permissions(drop, fs::perms(0777));
  std::string command = "id -un > " + drop + "/who && cp \"$GPURENT_NOTICE_FILE\" " + drop +
                        "/seen.json && echo \"$GPURENT_NOTICE_KIND $GPURENT_NOTICE_ID\" > " + drop +
                        "/env";
  auto set = put("/v1/rentals/" + rental + "/checkpoint", {{"command", command}, {"timeout_s", 60}},
                 session(owner));
  ASSERT_EQ(set.status, 200) << set.body;

  auto subscribed =
      post("/v1/webhooks", {{"url", "https://hooks.example.com/in"}, {"events", {"rental.notice"}}},
           session(owner));
  ASSERT_EQ(subscribed.status, 201) << subscribed.body;

  // A window four days into the rental's seven: more than the 72 hours' notice. Nothing else
  // can take a running rental, so it stays, and its tenant is told.
  Timestamp start = *parse_rfc3339(view["period"]["start"].get<std::string>());
  Timestamp window_start = start + std::chrono::hours(24 * 4);
  auto planned = post("/v1/admin/maintenance",
                      {{"node_ids", {node}},
                       {"start", format_rfc3339(window_start)},
                       {"end", format_rfc3339(window_start + std::chrono::hours(2))},
                       {"reason", "replace a fan"}},
                      session(admin_));
  ASSERT_EQ(planned.status, 201) << planned.body;
  EXPECT_EQ(planned.json()["notified"], json::array({rental})) << planned.body;
  json notices = get("/v1/rentals/" + rental + "/notices", session(owner)).json()["items"];
  ASSERT_EQ(notices.size(), 1u) << notices;
  json notice = notices[0];
  EXPECT_EQ(notice["kind"], "maintenance");
  EXPECT_EQ(notice["choices"], json::array({"other_node", "cancel"}));
  EXPECT_EQ(notice["respond_by"], format_rfc3339(window_start));

  // The org's webhook is told too.
  auto deliveries = get(
      "/v1/webhooks/" + subscribed.json()["id"].get<std::string>() + "/deliveries", session(owner));
  ASSERT_EQ(deliveries.status, 200) << deliveries.body;
  bool sent = false;
  json sent_items = deliveries.json()["items"];
  for (const auto& d : sent_items) sent = sent || d["event_type"] == "rental.notice";
  EXPECT_TRUE(sent) << deliveries.body;

  // The agent has it at once: the file, then the checkpoint as the login.
  json task;
  ASSERT_TRUE(wait_for(
      [&] {
        for (const auto& t : tasks_of(rental)) {
          if (t["kind"] == "notice" && t["state"] != "queued" && t["state"] != "delivered") {
            task = t;
          }
        }
        return !task.is_null();
      },
      std::chrono::seconds(30)))
      << agent_->log();
  EXPECT_EQ(task["state"], "succeeded") << task;
  EXPECT_NE(task.dump().find("checkpoint exited 0"), std::string::npos) << task;
  EXPECT_EQ(read_file_text(drop + "/who"), login + "\n");
  EXPECT_EQ(read_file_text(drop + "/env"), "maintenance " + notice["id"].get<std::string>() + "\n");
  // The node's notice file: world-readable, the notice without the rental's id or login.
  struct stat st {};
  ASSERT_EQ(::stat(notice_file.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0644u);
  json written = json::parse(read_file_text(notice_file));
  EXPECT_EQ(written["schema_version"], 1);
  ASSERT_EQ(written["notices"].size(), 1u) << written;
  EXPECT_EQ(written["notices"][0]["id"], notice["id"]);
  EXPECT_EQ(written["notices"][0]["kind"], "maintenance");
  EXPECT_EQ(written["notices"][0]["starts_at"], format_rfc3339(window_start));
  EXPECT_EQ(read_file_text(notice_file).find(rental), std::string::npos)
      << read_file_text(notice_file);
  EXPECT_EQ(read_file_text(notice_file).find(login), std::string::npos);
  EXPECT_EQ(json::parse(read_file_text(drop + "/seen.json")), written) << "what the login read";
  // All of it days before the window.
  EXPECT_LT(*parse_rfc3339(get("/v1/rentals/" + rental, session(owner))
                               .json()["period"]["start"]
                               .get<std::string>()) +
                std::chrono::hours(1),
            window_start);

  // The tenant answers: end the rental rather than be moved at the window.
  auto answered =
      post("/v1/rentals/" + rental + "/notices/" + notice["id"].get<std::string>() + "/choice",
           {{"choice", "cancel"}}, session(owner));
  ASSERT_EQ(answered.status, 200) << answered.body;
  EXPECT_EQ(answered.json()["choice"], "cancel");
  EXPECT_EQ(get("/v1/rentals/" + rental, session(owner)).json()["state"], "releasing");
  auto again =
      post("/v1/rentals/" + rental + "/notices/" + notice["id"].get<std::string>() + "/choice",
           {{"choice", "cancel"}}, session(owner));
  EXPECT_EQ(again.status, 409) << again.body;
}

}  // namespace gpurent::testing::tenant_notice_e2e
