// Key backups without a server: sealing and opening, every way a backup is refused, and a
// restore that writes only what it may.
#include "core/key_backup.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>

namespace gpurent::keys {
namespace key_backup_test {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

constexpr const char* kPassphrase = "correct horse battery staple";
// scrypt at 1 MiB: the format is under test here, not the cost (gpurentd seals at 2^16).
constexpr int kCheap = 10;

class KeyBackupTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "gpurent-keys-XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    root_ = pattern;
    pki_ = root_ / "pki";
    ssh_ = root_ / "ssh-ca";
    fs::create_directories(pki_);
    fs::create_directories(ssh_);
    write(pki_ / "ca.crt", "-----BEGIN CERTIFICATE-----\nagents\n");
    write(pki_ / "ca.key", std::string("binary\0key\xff", 11));
    write(pki_ / ".lock", "");
    write(ssh_ / "ssh_user_ca", "user ca key");
    write(ssh_ / "ssh_host_ca", "host ca key");
  }
  void TearDown() override { fs::remove_all(root_); }

  static void write(const fs::path& path, const std::string& content) {
    std::ofstream(path, std::ios::binary) << content;
  }
  static std::string read(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  }
  template <typename F>
  static std::string refusal(F&& f) {
    try {
      f();
    } catch (const KeyBackupError& e) {
      return e.what();
    }
    ADD_FAILURE() << "expected a KeyBackupError";
    return "";
  }

  fs::path root_, pki_, ssh_;
};

TEST_F(KeyBackupTest, SealedKeysOpenWithThePassphraseAndRestoreByteForByte) {
  auto files = collect(pki_.string(), ssh_.string());
  ASSERT_EQ(files.size(), 4u) << "the lock file is not a key";
  std::string text = seal(files, kPassphrase, kCheap);
  EXPECT_EQ(text.rfind("gpurent key backup 1 scrypt ln=10\n", 0), 0u);
  for (const auto& f : files) {
    EXPECT_EQ(text.find(f.content), std::string::npos) << f.name << " is in the clear";
  }

  fs::remove_all(pki_);
  fs::remove_all(ssh_);
  EXPECT_EQ(restore(open(text, kPassphrase), pki_.string(), ssh_.string(), false), 4);
  EXPECT_EQ(read(pki_ / "ca.key"), std::string("binary\0key\xff", 11));
  EXPECT_EQ(read(pki_ / "ca.crt"), "-----BEGIN CERTIFICATE-----\nagents\n");
  EXPECT_EQ(read(ssh_ / "ssh_user_ca"), "user ca key");
  EXPECT_EQ(read(ssh_ / "ssh_host_ca"), "host ca key");
  EXPECT_EQ(fs::status(pki_ / "ca.key").permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write);
  EXPECT_EQ(fs::status(ssh_).permissions() & fs::perms::all, fs::perms::owner_all);
  // Restoring again changes nothing and is not refused: every file is already the backup's.
  EXPECT_EQ(restore(open(text, kPassphrase), pki_.string(), ssh_.string(), false), 0);
}

TEST_F(KeyBackupTest, AWrongPassphraseOrAnyChangedByteIsRefused) {
  std::string text = seal(collect(pki_.string(), ssh_.string()), kPassphrase, kCheap);
  EXPECT_THAT(refusal([&] { open(text, "correct horse battery stapl"); }),
              HasSubstr("wrong passphrase"));
  // A character of the body, then of the header (the cipher's additional data).
  std::string body = text;
  auto at = body.find('\n') + 10;
  body[at] = body[at] == 'A' ? 'B' : 'A';
  EXPECT_THAT(refusal([&] { open(body, kPassphrase); }), HasSubstr("wrong passphrase"));
  std::string version = text;
  version.replace(0, 20, "gpurent key backup 2");
  EXPECT_THAT(refusal([&] { open(version, kPassphrase); }), HasSubstr("not a gpurent key backup"));
  // Another cost in the header: the key derived differs, and the header is authenticated.
  std::string cost = text;
  cost.replace(cost.find("ln=10"), 5, "ln=11");
  EXPECT_THAT(refusal([&] { open(cost, kPassphrase); }), HasSubstr("wrong passphrase"));
  for (const char* bad : {"ln=9", "ln=21", "ln=", "ln=1x"}) {
    std::string out_of_range = text;
    out_of_range.replace(out_of_range.find("ln=10"), 5, bad);
    EXPECT_THAT(refusal([&] { open(out_of_range, kPassphrase); }),
                HasSubstr("not a gpurent key backup"))
        << bad;
  }
  EXPECT_THAT(refusal([&] { open("gpurent key backup 1 scrypt ln=10\n!!!!\n", kPassphrase); }),
              HasSubstr("damaged"));
  EXPECT_THAT(refusal([&] { open(text.substr(0, text.size() / 2), kPassphrase); }),
              HasSubstr("backup"));
}

TEST_F(KeyBackupTest, AShortPassphraseAndAnEmptyFolderAreRefused) {
  auto files = collect(pki_.string(), ssh_.string());
  EXPECT_THAT(refusal([&] { seal(files, "eleven byte", kCheap); }), HasSubstr("at least 12 bytes"));
  fs::remove(ssh_ / "ssh_user_ca");
  fs::remove(ssh_ / "ssh_host_ca");
  EXPECT_THAT(refusal([&] { collect(pki_.string(), ssh_.string()); }), HasSubstr("holds no key"));
  EXPECT_THAT(refusal([&] { collect((root_ / "none").string(), ssh_.string()); }),
              HasSubstr("is not a folder"));
}

TEST_F(KeyBackupTest, ARestoreOverADifferentKeyIsRefusedUnlessReplacingAndWritesNothing) {
  std::string text = seal(collect(pki_.string(), ssh_.string()), kPassphrase, kCheap);
  write(ssh_ / "ssh_user_ca", "a newer user ca key");
  fs::remove(pki_ / "ca.crt");
  EXPECT_THAT(
      refusal([&] { restore(open(text, kPassphrase), pki_.string(), ssh_.string(), false); }),
      HasSubstr("ssh_user_ca exists and differs"));
  EXPECT_FALSE(fs::exists(pki_ / "ca.crt")) << "a refused restore wrote a file";
  EXPECT_EQ(restore(open(text, kPassphrase), pki_.string(), ssh_.string(), true), 2);
  EXPECT_EQ(read(ssh_ / "ssh_user_ca"), "user ca key");
}

TEST_F(KeyBackupTest, ABackupNamingAPathOutsideItsFoldersIsRefused) {
  for (const KeyFile& bad :
       {KeyFile{"agent_pki", "../escape", "x"}, KeyFile{"agent_pki", "..", "x"},
        KeyFile{"etc", "passwd", "x"}, KeyFile{"ssh_ca", "", "x"}}) {
    std::string text = seal({bad}, kPassphrase, kCheap);
    EXPECT_THAT(refusal([&] { open(text, kPassphrase); }), HasSubstr("names a file it may not"))
        << bad.folder << "/" << bad.name;
  }
}

}  // namespace key_backup_test
}  // namespace gpurent::keys
