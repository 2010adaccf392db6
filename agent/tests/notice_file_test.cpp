// The node's notice file: what a notice task's "notice" may hold, notices merged by id and
// dropped once over, a file replaced whole (valid JSON whenever it is read), a corrupt one
// started afresh, and modes every tenant can read whatever the umask.
#include "agent/notice_file.h"

#include "core/time.h"

#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

namespace gpurent::agent::notice_file_test {

namespace fs = std::filesystem;
using nlohmann::json;
using std::chrono::hours;

const std::string kIdA = "ntc_0000000000000000000001";
const std::string kIdB = "ntc_0000000000000000000002";
const std::string kIdC = "ntc_0000000000000000000003";

Timestamp at(const std::string& text) {
  auto t = parse_rfc3339(text);
  EXPECT_TRUE(t) << text;
  return t.value_or(Timestamp{});
}

json notice_json(const std::string& id, const std::string& starts, const json& ends = nullptr,
                 const std::string& kind = "maintenance") {
  return {
      {"id", id},        {"kind", kind},         {"message", "window " + id}, {"starts_at", starts},
      {"ends_at", ends}, {"respond_by", nullptr}};
}

Notice notice(const std::string& id, const std::string& starts, const json& ends = nullptr) {
  return notice_from(notice_json(id, starts, ends));
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<std::string> ids_in(const fs::path& file) {
  std::vector<std::string> out;
  auto doc = json::parse(slurp(file));
  for (const auto& n : doc.at("notices")) out.push_back(n.at("id"));
  return out;
}

mode_t mode_of(const fs::path& p) {
  struct stat st {};
  EXPECT_EQ(::stat(p.c_str(), &st), 0) << p;
  return st.st_mode & 07777;
}

class NoticeFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "gpurent-notice-XXXXXX").string();
    dir_ = mkdtemp(pattern.data());
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path file() const { return dir_ / "run/gpurent/notice.json"; }

  fs::path dir_;
};

TEST_F(NoticeFileTest, ANoticeReadsAndWritesBack) {
  json in{{"id", kIdA},
          {"kind", "fault"},
          {"message", "GPU 3 reports uncorrectable ECC errors"},
          {"starts_at", "2027-01-10T08:00:00Z"},
          {"ends_at", "2027-01-10T10:00:00+01:00"},
          {"respond_by", "2027-01-10T07:00:00Z"},
          {"something_new", 1}};
  auto n = notice_from(in);
  EXPECT_EQ(n.kind, NoticeKind::kFault);
  EXPECT_EQ(n.over_at(), at("2027-01-10T09:00:00Z"));
  EXPECT_EQ(to_json(n), (json{{"id", kIdA},
                              {"kind", "fault"},
                              {"message", "GPU 3 reports uncorrectable ECC errors"},
                              {"starts_at", "2027-01-10T08:00:00Z"},
                              {"ends_at", "2027-01-10T09:00:00Z"},
                              {"respond_by", "2027-01-10T07:00:00Z"}}));
  EXPECT_EQ(notice_from(to_json(n)), n);
  auto open_ended = notice(kIdB, "2027-01-10T08:00:00Z");
  EXPECT_EQ(open_ended.ends_at, std::nullopt);
  EXPECT_EQ(open_ended.over_at(), open_ended.starts_at);
}

TEST_F(NoticeFileTest, AMalformedNoticeIsRefusedNamingTheField) {
  auto with = [](const std::string& field, const json& value) {
    json n = notice_json(kIdA, "2027-01-10T08:00:00Z");
    n[field] = value;
    return n;
  };
  const std::pair<json, std::string> cases[] = {
      {json::array(), "notice must be an object"},
      {with("id", "rnt_0000000000000000000001"), "notice.id"},
      {with("id", "ntc_x"), "notice.id"},
      {with("id", nullptr), "notice.id is required"},
      {with("kind", "outage"), "notice.kind"},
      {with("message", 7), "notice.message must be a string"},
      {with("message", std::string(kMaxNoticeMessage + 1, 'x')), "notice.message"},
      {with("message", std::string("a\0b", 3)), "notice.message must not contain NUL"},
      {with("starts_at", "tomorrow"), "notice.starts_at"},
      {with("starts_at", nullptr), "notice.starts_at is required"},
      {with("ends_at", "2027-01-10T07:59:59Z"), "notice.ends_at must not be before"},
      {with("respond_by", 5), "notice.respond_by"},
  };
  for (const auto& [value, expected] : cases) {
    try {
      notice_from(value);
      ADD_FAILURE() << "accepted " << value.dump();
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(expected), std::string::npos)
          << e.what() << " for " << value.dump();
    }
  }
}

TEST_F(NoticeFileTest, NoticesMergeByIdAndThoseOverAreDropped) {
  auto now = at("2027-01-10T12:00:00Z");
  auto a = notice(kIdA, "2027-01-11T00:00:00Z", "2027-01-11T04:00:00Z");
  auto b = notice(kIdB, "2027-01-10T09:00:00Z", "2027-01-10T13:00:00Z");  // under way
  publish_notice(file(), a, now);
  publish_notice(file(), b, now);
  EXPECT_EQ(ids_in(file()), (std::vector<std::string>{kIdB, kIdA})) << "in start order";

  // The same id again replaces it: a window moved.
  auto moved = notice(kIdA, "2027-01-12T00:00:00Z", "2027-01-12T04:00:00Z");
  auto written = publish_notice(file(), moved, now);
  ASSERT_EQ(written.size(), 2u);
  EXPECT_EQ(written[1], moved);
  auto doc = json::parse(slurp(file()));
  EXPECT_EQ(doc["schema_version"], 1);
  EXPECT_EQ(doc["updated_at"], "2027-01-10T12:00:00Z");
  EXPECT_EQ(doc["notices"][1]["starts_at"], "2027-01-12T00:00:00Z");
  EXPECT_EQ(read_notice_file(file()), written);
  EXPECT_EQ(slurp(file()).find("rnt_"), std::string::npos) << "no rental in the file";

  // Later: b has ended and goes; a notice without an end is over once it starts, but the one
  // being delivered is written whatever its times, so that it is seen.
  auto later = at("2027-01-10T14:00:00Z");
  auto fault = notice(kIdC, "2027-01-10T13:30:00Z");
  publish_notice(file(), fault, later);
  EXPECT_EQ(ids_in(file()), (std::vector<std::string>{kIdC, kIdA}));
  auto d = notice("ntc_0000000000000000000004", "2027-01-13T00:00:00Z");
  publish_notice(file(), d, later);
  EXPECT_EQ(ids_in(file()), (std::vector<std::string>{kIdA, "ntc_0000000000000000000004"}))
      << "the fault that started before now is over";
  // Ending exactly now is not past yet.
  auto e = notice("ntc_0000000000000000000005", "2027-01-13T00:00:00Z");
  publish_notice(file(), e, at("2027-01-12T04:00:00Z"));
  EXPECT_EQ(ids_in(file()).front(), kIdA);
}

TEST_F(NoticeFileTest, TheFileKeepsAtMostItsLimitTheLatestStarting) {
  auto now = at("2027-01-10T00:00:00Z");
  std::vector<Notice> all;
  for (std::size_t i = 0; i < kMaxNotices + 5; ++i) {
    char id[32];
    std::snprintf(id, sizeof id, "ntc_%022zu", i + 1);
    char starts[32];
    std::snprintf(starts, sizeof starts, "2027-02-%02zuT%02zu:00:00Z", 1 + i / 24, i % 24);
    all.push_back(notice(id, starts));
  }
  std::vector<Notice> kept;
  for (const auto& n : all) kept = merge_notices(kept, n, now);
  ASSERT_EQ(kept.size(), kMaxNotices);
  EXPECT_EQ(kept.front(), all[5]);
  EXPECT_EQ(kept.back(), all.back());
  // The fresh one stays even when it starts first.
  auto early = notice("ntc_0000000000000000000999", "2027-01-20T00:00:00Z");
  kept = merge_notices(kept, early, now);
  ASSERT_EQ(kept.size(), kMaxNotices);
  EXPECT_EQ(kept.front(), early);
}

TEST_F(NoticeFileTest, AMissingOrCorruptFileStartsEmpty) {
  auto now = at("2027-01-10T12:00:00Z");
  EXPECT_TRUE(read_notice_file(file()).empty());
  fs::create_directories(file().parent_path());
  for (const std::string& corrupt :
       {std::string("{\"schema_version\": 1, \"notices\": [{\"id\""), std::string(""),
        std::string("[]"), std::string("{\"schema_version\": 2, \"notices\": []}"),
        std::string("{\"schema_version\": 1, \"notices\": 3}"), std::string("\x01\xff")}) {
    std::ofstream(file()) << corrupt;
    EXPECT_TRUE(read_notice_file(file()).empty()) << corrupt;
    auto a = notice(kIdA, "2027-01-11T00:00:00Z");
    publish_notice(file(), a, now);
    EXPECT_EQ(ids_in(file()), std::vector<std::string>{kIdA}) << corrupt;
  }
  // One bad notice among good ones is skipped alone.
  json doc{{"schema_version", 1},
           {"updated_at", "2027-01-10T00:00:00Z"},
           {"notices",
            {notice_json(kIdA, "2027-01-11T00:00:00Z"),
             {{"id", "bad"}},
             notice_json(kIdB, "2027-01-11T01:00:00Z")}}};
  std::ofstream(file()) << doc.dump();
  auto read = read_notice_file(file());
  ASSERT_EQ(read.size(), 2u);
  EXPECT_EQ(read[1].id, kIdB);
  // A folder where the file should be reads as none; writing it then fails, saying where.
  fs::remove(file());
  fs::create_directories(file());
  EXPECT_TRUE(read_notice_file(file()).empty());
  EXPECT_THROW(publish_notice(file(), notice(kIdA, "2027-01-11T00:00:00Z"), now), std::exception);
}

// Whatever the umask (the unit's is 0077): the file 0644, the folders made for it 0755.
TEST_F(NoticeFileTest, TheFileIsWorldReadable) {
  fs::permissions(dir_, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                            fs::perms::others_read | fs::perms::others_exec);
  mode_t before = ::umask(0077);
  try {
    publish_notice(file(), notice(kIdA, "2027-01-11T00:00:00Z"), at("2027-01-10T00:00:00Z"));
  } catch (...) {
    ::umask(before);
    throw;
  }
  ::umask(before);
  EXPECT_EQ(mode_of(file()), 0644u);
  EXPECT_EQ(mode_of(file().parent_path()), 0755u);
  EXPECT_EQ(mode_of(dir_ / "run"), 0755u);
  // An existing folder is left as it is.
  fs::permissions(file().parent_path(), fs::perms::owner_all | fs::perms::others_exec);
  publish_notice(file(), notice(kIdB, "2027-01-11T00:00:00Z"), at("2027-01-10T00:00:00Z"));
  EXPECT_EQ(mode_of(file().parent_path()), 0701u);
  EXPECT_EQ(mode_of(file()), 0644u);
}

// A reader never sees half a file: each write goes to a temporary beside it and is renamed.
TEST_F(NoticeFileTest, AReaderAlwaysFindsValidJson) {
  auto now = at("2027-01-10T00:00:00Z");
  publish_notice(file(), notice(kIdA, "2027-01-11T00:00:00Z"), now);
  std::atomic<bool> done{false};
  std::atomic<int> reads{0}, bad{0};
  std::thread reader([&] {
    while (!done) {
      auto text = slurp(file());
      if (!json::accept(text)) ++bad;
      ++reads;
    }
  });
  for (int i = 0; i < 120; ++i) {
    char id[32];
    std::snprintf(id, sizeof id, "ntc_%022d", i + 10);
    auto n = notice_from(notice_json(id, "2027-01-11T00:00:00Z"));
    n.message = std::string(2000, static_cast<char>('a' + i % 26));
    publish_notice(file(), n, now);
  }
  done = true;
  reader.join();
  EXPECT_GT(reads.load(), 0);
  EXPECT_EQ(bad.load(), 0);
  EXPECT_FALSE(fs::exists(fs::path(file()) += ".tmp")) << "no temporary left behind";
  EXPECT_EQ(read_notice_file(file()).size(), kMaxNotices);
}

}  // namespace gpurent::agent::notice_file_test
