// The task journal across restarts: an id is run once, a result is remembered and re-sent
// until acked, a task cut short by a restart ends as interrupted, the file is replaced whole.
#include "agent/task_journal.h"
#include "agent/state_files.h"

#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace gpurent::agent::task_journal_test {

namespace fs = std::filesystem;
namespace proto = agent_proto;

class TaskJournalTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("gpurent-journal-" + std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path file() const { return dir_ / "tasks.json"; }

  static proto::TaskResult ok(const std::string& id) {
    return {.task_id = id, .ok = true, .message = "done", .result = nlohmann::json{{"n", 1}}};
  }

  fs::path dir_;
};

TEST_F(TaskJournalTest, RemembersIdsAndResultsAcrossARestart) {
  {
    TaskJournal journal(file());
    EXPECT_EQ(journal.seen("tsk_a"), TaskJournal::Seen::kNew);
    journal.begin("tsk_a");
    EXPECT_EQ(journal.seen("tsk_a"), TaskJournal::Seen::kRunning);
    journal.finish(ok("tsk_a"));
    EXPECT_EQ(journal.seen("tsk_a"), TaskJournal::Seen::kFinished);
    journal.begin("tsk_b");
    journal.finish(ok("tsk_b"));
    journal.mark_acked("tsk_b");
  }
  TaskJournal reloaded(file());
  EXPECT_EQ(reloaded.seen("tsk_a"), TaskJournal::Seen::kFinished);
  EXPECT_EQ(reloaded.result_of("tsk_a"), ok("tsk_a"));
  ASSERT_EQ(reloaded.unacked_results().size(), 1u) << "b was acked";
  EXPECT_EQ(reloaded.unacked_results()[0].task_id, "tsk_a");
  EXPECT_EQ(reloaded.recent_ids(), (std::vector<std::string>{"tsk_b", "tsk_a"}));
  EXPECT_EQ(reloaded.recent_ids(1), (std::vector<std::string>{"tsk_b"}));
  struct stat st {};
  ASSERT_EQ(stat(file().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_FALSE(fs::exists(dir_ / "tasks.json.tmp"));
}

TEST_F(TaskJournalTest, ATaskCutShortByARestartEndsInterruptedAndIsNotRunAgain) {
  { TaskJournal(file()).begin("tsk_cut"); }
  TaskJournal reloaded(file());
  EXPECT_EQ(reloaded.seen("tsk_cut"), TaskJournal::Seen::kFinished);
  auto result = reloaded.result_of("tsk_cut");
  ASSERT_TRUE(result.has_value());
  EXPECT_FALSE(result->ok);
  EXPECT_NE(result->message.find("interrupted"), std::string::npos);
  EXPECT_EQ(reloaded.unacked_results().size(), 1u) << "to be reported on the next connection";
}

TEST_F(TaskJournalTest, TheFirstResultStands) {
  TaskJournal journal(file());
  journal.begin("tsk_a");
  journal.finish(ok("tsk_a"));
  journal.finish({.task_id = "tsk_a", .ok = false, .message = "again", .result = std::nullopt});
  EXPECT_TRUE(journal.result_of("tsk_a")->ok);
}

TEST_F(TaskJournalTest, ForgetsTheOldestFinishedBeyondItsLimit) {
  TaskJournal journal(file(), 10);
  journal.begin("tsk_running");  // never forgotten while it runs
  for (int i = 0; i < 15; ++i) {
    std::string id = "tsk_" + std::to_string(i);
    journal.begin(id);
    journal.finish(ok(id));
  }
  EXPECT_EQ(journal.seen("tsk_running"), TaskJournal::Seen::kRunning);
  EXPECT_EQ(journal.seen("tsk_0"), TaskJournal::Seen::kNew);
  EXPECT_EQ(journal.seen("tsk_14"), TaskJournal::Seen::kFinished);
  EXPECT_EQ(journal.recent_ids(4),
            (std::vector<std::string>{"tsk_14", "tsk_13", "tsk_12", "tsk_11"}));
  EXPECT_GE(kJournalEntries, proto::kMaxTaskIds) << "a hello's ids are all remembered";
}

TEST_F(TaskJournalTest, AFileThatIsNotAJournalIsRefused) {
  std::ofstream(file()) << "{\"tasks\": 7}";
  EXPECT_THROW(TaskJournal{file()}, StateError);
}

}  // namespace gpurent::agent::task_journal_test
