// Tests load_config: precedence of its sources, value parsing and the errors it reports.
#include "core/config.h"

#include "core/error.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <set>

namespace gpurent {
namespace {

using std::chrono::hours;
using std::chrono::milliseconds;
using std::chrono::minutes;
using std::chrono::seconds;
using testing::HasSubstr;
using testing::Not;

// A file in the temp folder, removed when the test ends.
class TempFile {
 public:
  explicit TempFile(const std::string& content) {
    static std::atomic<int> counter{0};
    path_ = (std::filesystem::temp_directory_path() /
             ("gpurent_config_test_" + std::to_string(getpid()) + "_" +
              std::to_string(counter.fetch_add(1)) + ".conf"))
                .string();
    std::ofstream(path_) << content;
  }
  ~TempFile() { std::filesystem::remove(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// The message of the ConfigError that loading throws; fails the test if none is thrown.
std::string config_error(const std::vector<std::string>& args,
                         const std::vector<std::string>& env = {}) {
  try {
    load_config(args, env);
  } catch (const ConfigError& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected a ConfigError";
  return "";
}

Config load_flag(const std::string& name, const std::string& value) {
  return load_config({"--" + name + "=" + value}, {});
}

void expect_same(const Config& a, const Config& b) {
  EXPECT_EQ(a.listen_host, b.listen_host);
  EXPECT_EQ(a.listen_port, b.listen_port);
  EXPECT_EQ(a.port_file, b.port_file);
  EXPECT_EQ(a.io_threads, b.io_threads);
  EXPECT_EQ(a.worker_threads, b.worker_threads);
  EXPECT_EQ(a.http_body_limit, b.http_body_limit);
  EXPECT_EQ(a.http_header_limit, b.http_header_limit);
  EXPECT_EQ(a.http_read_timeout, b.http_read_timeout);
  EXPECT_EQ(a.http_write_timeout, b.http_write_timeout);
  EXPECT_EQ(a.http_idle_timeout, b.http_idle_timeout);
  EXPECT_EQ(a.http_pipeline_limit, b.http_pipeline_limit);
  EXPECT_EQ(a.shutdown_deadline, b.shutdown_deadline);
  EXPECT_EQ(a.web_root, b.web_root);
  EXPECT_EQ(a.database_url, b.database_url);
  EXPECT_EQ(a.data_dir, b.data_dir);
  EXPECT_EQ(a.db_pool_size, b.db_pool_size);
  EXPECT_EQ(a.db_pool_wait, b.db_pool_wait);
  EXPECT_EQ(a.db_statement_timeout, b.db_statement_timeout);
  EXPECT_EQ(a.migrate_on_start, b.migrate_on_start);
  EXPECT_EQ(a.rate_limit_per_credential, b.rate_limit_per_credential);
  EXPECT_EQ(a.rate_limit_burst_per_credential, b.rate_limit_burst_per_credential);
  EXPECT_EQ(a.rate_limit_per_ip, b.rate_limit_per_ip);
  EXPECT_EQ(a.rate_limit_burst_per_ip, b.rate_limit_burst_per_ip);
  EXPECT_EQ(a.trusted_proxies, b.trusted_proxies);
  EXPECT_EQ(a.log_format, b.log_format);
  EXPECT_EQ(a.log_level, b.log_level);
  EXPECT_EQ(a.test_mode, b.test_mode);
}

TEST(LoadConfig, DefaultsWithoutAnySource) {
  Config c = load_config({}, {});
  EXPECT_EQ(c.listen_host, "127.0.0.1");
  EXPECT_EQ(c.listen_port, 8080);
  EXPECT_EQ(c.io_threads, 2);
  EXPECT_EQ(c.worker_threads, 4);
  EXPECT_EQ(c.http_body_limit, 1024u * 1024u);
  EXPECT_EQ(c.http_header_limit, 16u * 1024u);
  EXPECT_EQ(c.http_read_timeout, seconds(10));
  EXPECT_EQ(c.http_idle_timeout, seconds(60));
  EXPECT_EQ(c.shutdown_deadline, seconds(15));
  EXPECT_EQ(c.database_url, "");
  EXPECT_EQ(c.data_dir, "var/pg");
  EXPECT_TRUE(c.migrate_on_start);
  EXPECT_EQ(c.log_format, LogFormat::kAuto);
  EXPECT_EQ(c.log_level, "info");
  EXPECT_FALSE(c.test_mode);
  EXPECT_EQ(c.rate_limit_per_credential, 20);
  EXPECT_EQ(c.rate_limit_burst_per_ip, 200);
  expect_same(c, Config{});
}

TEST(LoadConfig, UnrelatedEnvironmentIsIgnored) {
  Config c = load_config({}, {"PATH=/usr/bin", "HOME=/root", "NOEQUALS", "GPURENT_IO_THREADS"});
  expect_same(c, Config{});
}

TEST(ConfigKeys, DocumentedDefaultsAreTheRealDefaults) {
  // The table README prints must agree with Config's initialisers.
  for (const auto& key : config_keys()) {
    if (key.name == "config") continue;
    SCOPED_TRACE(key.name);
    expect_same(load_flag(key.name, key.default_value), Config{});
  }
}

TEST(ConfigKeys, NamesAndEnvironmentVariablesAreUnique) {
  std::set<std::string> names, envs;
  for (const auto& key : config_keys()) {
    EXPECT_TRUE(names.insert(key.name).second) << key.name;
    EXPECT_TRUE(envs.insert(key.env).second) << key.env;
    EXPECT_FALSE(key.help.empty()) << key.name;
  }
  EXPECT_TRUE(names.count("config"));
  EXPECT_TRUE(envs.count("DATABASE_URL"));
}

TEST(LoadConfig, FileThenEnvironmentThenFlags) {
  TempFile file(
      "# a comment\n"
      "\n"
      "io_threads = 3\n"
      "  worker_threads=5  \n"
      "db_pool_size = 9\n"
      "web_root = /srv/web\n");
  Config c = load_config({"--config", file.path(), "--db_pool_size=11"},
                         {"GPURENT_WORKER_THREADS=6", "GPURENT_DB_POOL_SIZE=10"});
  EXPECT_EQ(c.io_threads, 3);            // file only
  EXPECT_EQ(c.worker_threads, 6);        // environment beats file
  EXPECT_EQ(c.db_pool_size, 11);         // flag beats environment and file
  EXPECT_EQ(c.web_root, "/srv/web");     // file only
  EXPECT_EQ(c.http_pipeline_limit, 8u);  // default
}

TEST(LoadConfig, FileValuesMayContainEqualsAndCrlfLineEnds) {
  TempFile file("database_url = postgresql://db/x?sslmode=require\r\nio_threads = 3\r\n");
  Config c = load_config({"--config=" + file.path()}, {});
  EXPECT_EQ(c.database_url, "postgresql://db/x?sslmode=require");
  EXPECT_EQ(c.io_threads, 3);
}

TEST(LoadConfig, ConfigFileFromEnvironment) {
  TempFile file("io_threads = 7\n");
  Config c = load_config({}, {"GPURENT_CONFIG=" + file.path()});
  EXPECT_EQ(c.io_threads, 7);
}

TEST(LoadConfig, ConfigFlagOverridesConfigEnvironment) {
  TempFile from_env("io_threads = 7\n");
  TempFile from_flag("io_threads = 9\n");
  Config c = load_config({"--config=" + from_flag.path()}, {"GPURENT_CONFIG=" + from_env.path()});
  EXPECT_EQ(c.io_threads, 9);
}

TEST(LoadConfig, FlagForms) {
  EXPECT_EQ(load_config({"--io_threads=5"}, {}).io_threads, 5);
  EXPECT_EQ(load_config({"--io_threads", "5"}, {}).io_threads, 5);
  EXPECT_EQ(load_config({"--io-threads", "6"}, {}).io_threads, 6);
  EXPECT_EQ(load_config({"--io_threads=5", "--io_threads=7"}, {}).io_threads, 7);
}

TEST(LoadConfig, FlagWithoutValueIsRejected) {
  EXPECT_THAT(config_error({"--io_threads"}), HasSubstr("io_threads"));
}

TEST(LoadConfig, PositionalArgumentIsRejected) {
  EXPECT_THAT(config_error({"serve"}), HasSubstr("'serve'"));
}

TEST(LoadConfig, UnknownFlagIsRejected) {
  EXPECT_THAT(config_error({"--no_such_key=1"}), HasSubstr("--no_such_key"));
}

TEST(LoadConfig, UnknownFileKeyIsRejectedWithFileAndLine) {
  TempFile file("io_threads = 2\nno_such_key = 1\n");
  std::string msg = config_error({"--config=" + file.path()});
  EXPECT_THAT(msg, HasSubstr("no_such_key"));
  EXPECT_THAT(msg, HasSubstr(file.path() + ":2"));
}

TEST(LoadConfig, FileLineWithoutEqualsIsRejected) {
  TempFile file("io_threads 2\n");
  EXPECT_THAT(config_error({"--config=" + file.path()}), HasSubstr(file.path() + ":1"));
}

TEST(LoadConfig, MissingFileIsRejected) {
  std::string path = "/nonexistent/gpurent.conf";
  EXPECT_THAT(config_error({"--config", path}), HasSubstr(path));
  EXPECT_THAT(config_error({}, {"GPURENT_CONFIG=" + path}), HasSubstr(path));
}

TEST(LoadConfig, ErrorsNameTheKeyAndTheSource) {
  std::string env = config_error({}, {"GPURENT_HTTP_BODY_LIMIT=lots"});
  EXPECT_THAT(env, HasSubstr("http_body_limit"));
  EXPECT_THAT(env, HasSubstr("GPURENT_HTTP_BODY_LIMIT"));
  EXPECT_THAT(env, HasSubstr("'lots'"));

  std::string flag = config_error({"--io_threads=0"});
  EXPECT_THAT(flag, HasSubstr("io_threads"));
  EXPECT_THAT(flag, HasSubstr("flag --io_threads"));

  TempFile file("\nlog_level = loud\n");
  std::string from_file = config_error({"--config=" + file.path()});
  EXPECT_THAT(from_file, HasSubstr("log_level"));
  EXPECT_THAT(from_file, HasSubstr(file.path() + ":2"));
  EXPECT_THAT(from_file, HasSubstr("'loud'"));
}

TEST(LoadConfig, ErrorsAreOneLine) {
  for (const auto& msg : {config_error({}, {"GPURENT_HTTP_READ_TIMEOUT=soon"}),
                          config_error({"--listen=nope"}), config_error({"--bogus=1"})}) {
    EXPECT_THAT(msg, Not(HasSubstr("\n")));
  }
}

TEST(LoadConfig, Durations) {
  EXPECT_EQ(load_flag("http_read_timeout", "500ms").http_read_timeout, milliseconds(500));
  EXPECT_EQ(load_flag("http_read_timeout", "10s").http_read_timeout, seconds(10));
  EXPECT_EQ(load_flag("http_read_timeout", "2m").http_read_timeout, minutes(2));
  EXPECT_EQ(load_flag("shutdown_deadline", "1h").shutdown_deadline, hours(1));
  EXPECT_EQ(load_flag("db_pool_wait", "0ms").db_pool_wait, milliseconds(0));
  EXPECT_EQ(load_config({}, {"GPURENT_DB_STATEMENT_TIMEOUT=30s"}).db_statement_timeout,
            seconds(30));
}

TEST(LoadConfig, BadDurationsAreRejected) {
  for (std::string bad :
       {"10", "ms", "", "-1s", "1d", "1.5s", "10 s", "10S", "s10", "1sec", "9999999999s"}) {
    SCOPED_TRACE(bad);
    std::string msg = config_error({"--http_idle_timeout=" + bad});
    EXPECT_THAT(msg, HasSubstr("http_idle_timeout"));
    EXPECT_THAT(msg, HasSubstr("duration"));
  }
}

TEST(LoadConfig, ZeroTimeoutIsRejectedNamingKeyAndSource) {
  for (std::string key : {"http_read_timeout", "http_write_timeout", "http_idle_timeout"}) {
    SCOPED_TRACE(key);
    std::string env_name = "GPURENT_" + key;
    for (auto& ch : env_name) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    std::string msg = config_error({}, {env_name + "=0s"});
    EXPECT_THAT(msg, HasSubstr(key));
    EXPECT_THAT(msg, HasSubstr(env_name));
  }
}

TEST(LoadConfig, Sizes) {
  EXPECT_EQ(load_flag("http_body_limit", "1048576").http_body_limit, 1048576u);
  EXPECT_EQ(load_flag("http_body_limit", "100B").http_body_limit, 100u);
  EXPECT_EQ(load_flag("http_body_limit", "64KiB").http_body_limit, 64u * 1024u);
  EXPECT_EQ(load_flag("http_body_limit", "1MiB").http_body_limit, 1024u * 1024u);
  EXPECT_EQ(load_flag("http_header_limit", "8KiB").http_header_limit, 8u * 1024u);
}

TEST(LoadConfig, BadSizesAreRejected) {
  for (std::string bad :
       {"", "KiB", "1GiB", "1kb", "1KB", "-1", "1.5MiB", "1 MiB", "1234567890123"}) {
    SCOPED_TRACE(bad);
    std::string msg = config_error({"--http_header_limit=" + bad});
    EXPECT_THAT(msg, HasSubstr("http_header_limit"));
    EXPECT_THAT(msg, HasSubstr("size"));
  }
}

TEST(LoadConfig, ZeroBodyLimitIsRejectedNamingKeyAndSource) {
  std::string msg = config_error({}, {"GPURENT_HTTP_BODY_LIMIT=0"});
  EXPECT_THAT(msg, HasSubstr("http_body_limit"));
  EXPECT_THAT(msg, HasSubstr("GPURENT_HTTP_BODY_LIMIT"));
}

TEST(LoadConfig, IntegerRanges) {
  EXPECT_EQ(load_flag("io_threads", "1").io_threads, 1);
  EXPECT_EQ(load_flag("io_threads", "64").io_threads, 64);
  EXPECT_EQ(load_flag("db_pool_size", "512").db_pool_size, 512);
  for (std::string bad : {"0", "65", "-1", "3x", "", " 3", "99999999999999999999999"}) {
    SCOPED_TRACE(bad);
    EXPECT_THAT(config_error({"--io_threads=" + bad}), HasSubstr("io_threads"));
  }
  EXPECT_THAT(config_error({"--db_pool_size=513"}), HasSubstr("db_pool_size"));
}

TEST(LoadConfig, Booleans) {
  for (std::string yes : {"true", "1", "yes", "on"}) {
    EXPECT_TRUE(load_flag("test_mode", yes).test_mode) << yes;
  }
  for (std::string no : {"false", "0", "no", "off"}) {
    EXPECT_FALSE(load_flag("migrate_on_start", no).migrate_on_start) << no;
  }
  EXPECT_THAT(config_error({"--test_mode=maybe"}), HasSubstr("test_mode"));
  EXPECT_THAT(config_error({"--test_mode=TRUE"}), HasSubstr("test_mode"));
}

TEST(LoadConfig, LogSettings) {
  EXPECT_EQ(load_flag("log_format", "json").log_format, LogFormat::kJson);
  EXPECT_EQ(load_flag("log_format", "text").log_format, LogFormat::kText);
  EXPECT_EQ(load_flag("log_format", "auto").log_format, LogFormat::kAuto);
  EXPECT_EQ(load_flag("log_level", "debug").log_level, "debug");
  EXPECT_THAT(config_error({"--log_format=xml"}), HasSubstr("log_format"));
  EXPECT_THAT(config_error({"--log_level=verbose"}), HasSubstr("log_level"));
}

TEST(LoadConfig, ListenAddress) {
  Config any = load_flag("listen", "0.0.0.0:0");
  EXPECT_EQ(any.listen_host, "0.0.0.0");
  EXPECT_EQ(any.listen_port, 0);
  Config v6 = load_config({}, {"GPURENT_LISTEN=[::1]:9000"});
  EXPECT_EQ(v6.listen_host, "::1");
  EXPECT_EQ(v6.listen_port, 9000);
  for (std::string bad : {"8080", ":8080", "localhost:", "localhost:70000", "localhost:http", ""}) {
    SCOPED_TRACE(bad);
    EXPECT_THAT(config_error({"--listen=" + bad}), HasSubstr("listen"));
  }
}

TEST(LoadConfig, StringSettings) {
  Config c = load_config({"--database_url=postgresql://u@db/gpurent", "--port_file=/tmp/port"},
                         {"GPURENT_DATA_DIR=/var/lib/gpurent"});
  EXPECT_EQ(c.database_url, "postgresql://u@db/gpurent");
  EXPECT_EQ(c.port_file, "/tmp/port");
  EXPECT_EQ(c.data_dir, "/var/lib/gpurent");
  EXPECT_THAT(config_error({}, {"GPURENT_DATA_DIR="}), HasSubstr("data_dir"));
}

TEST(LoadConfig, TrustedProxiesAreValidatedAtStart) {
  Config c = load_config({}, {"GPURENT_TRUSTED_PROXIES=10.0.0.0/8, ::1"});
  EXPECT_EQ(c.trusted_proxies, "10.0.0.0/8, ::1");
  std::string bad = config_error({"--trusted_proxies=10.0.0.0/8,proxy.local"});
  EXPECT_THAT(bad, HasSubstr("trusted_proxies"));
  EXPECT_THAT(bad, HasSubstr("proxy.local"));
}

TEST(LoadConfig, EnvironmentValueMayContainEquals) {
  Config c = load_config({}, {"DATABASE_URL=postgresql://db/x?sslmode=require"});
  EXPECT_EQ(c.database_url, "postgresql://db/x?sslmode=require");
}

}  // namespace
}  // namespace gpurent
