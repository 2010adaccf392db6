// Tests migrations_from_files: naming rules, ordering, duplicates and checksums.
#include "core/crypto.h"
#include "core/migrator.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace gpurent {
namespace migrations_files_test {

using testing::HasSubstr;

std::string rejection(const std::vector<EmbeddedFile>& files) {
  try {
    migrations_from_files(files);
  } catch (const MigrationError& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected a MigrationError";
  return "";
}

TEST(MigrationsFromFiles, EmptyListIsEmpty) {
  EXPECT_TRUE(migrations_from_files({}).empty());
}

TEST(MigrationsFromFiles, ParsesVersionNameSqlAndChecksum) {
  auto m = migrations_from_files({{"0007_add_rentals.sql", "CREATE TABLE rentals ();"}});
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].version, 7);
  EXPECT_EQ(m[0].name, "0007_add_rentals.sql");
  EXPECT_EQ(m[0].sql, "CREATE TABLE rentals ();");
  EXPECT_EQ(m[0].checksum, crypto::sha256_hex("CREATE TABLE rentals ();"));
  EXPECT_EQ(m[0].checksum.size(), 64u);
}

TEST(MigrationsFromFiles, ChecksumChangesWithContent) {
  auto a = migrations_from_files({{"0001_a.sql", "SELECT 1;"}});
  auto b = migrations_from_files({{"0001_a.sql", "SELECT 2;"}});
  EXPECT_NE(a[0].checksum, b[0].checksum);
}

TEST(MigrationsFromFiles, SortsByNumberNotByName) {
  auto m = migrations_from_files(
      {{"0010_ten.sql", "10"}, {"0002_two.sql", "2"}, {"9_nine.sql", "9"}, {"0001_one.sql", "1"}});
  ASSERT_EQ(m.size(), 4u);
  EXPECT_EQ(m[0].version, 1);
  EXPECT_EQ(m[1].version, 2);
  EXPECT_EQ(m[2].version, 9);
  EXPECT_EQ(m[3].version, 10);
  EXPECT_EQ(m[3].name, "0010_ten.sql");
  EXPECT_EQ(m[3].sql, "10");
}

TEST(MigrationsFromFiles, AcceptsOneToSixDigits) {
  EXPECT_EQ(migrations_from_files({{"1_x.sql", ""}})[0].version, 1);
  EXPECT_EQ(migrations_from_files({{"123456_x.sql", ""}})[0].version, 123456);
}

TEST(MigrationsFromFiles, RejectsBadNames) {
  for (std::string bad :
       {"0001.sql", "0001_a.txt", "0001_a.SQL", "0001_a.sql.bak", "a_0001.sql", "0001_.sql",
        "_a.sql", "0001-a.sql", "1234567_a.sql", "", "migrations/0001_a.sql", "0001"}) {
    SCOPED_TRACE(bad);
    EXPECT_THAT(rejection({{"0001_ok.sql", "x"}, {bad, "y"}}), HasSubstr(bad));
  }
}

TEST(MigrationsFromFiles, RejectsTwoFilesWithOneNumber) {
  std::string msg = rejection({{"0003_a.sql", "a"}, {"0002_b.sql", "b"}, {"3_c.sql", "c"}});
  EXPECT_THAT(msg, HasSubstr("0003_a.sql"));
  EXPECT_THAT(msg, HasSubstr("3_c.sql"));
}

TEST(MigrationError, IsARuntimeErrorNamingTheFile) {
  try {
    migrations_from_files({{"bad", ""}});
    ADD_FAILURE() << "expected an error";
  } catch (const std::runtime_error& e) {
    EXPECT_THAT(e.what(), HasSubstr("migration file bad "));
  }
}

}  // namespace migrations_files_test
}  // namespace gpurent
