// Tests load_config: precedence of its sources, value parsing and the errors it reports.
#include "core/config.h"
#include "core/limits.h"

#include "core/error.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <vector>

namespace gpurent {
namespace config_test {

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

// A value other than the default for every key, so a test can tell that loading a key's
// documented default really sets what it names, rather than leaving the initialiser alone.
const std::map<std::string, std::string>& other_values() {
  static const std::map<std::string, std::string> kOther = {
      {"listen", "0.0.0.0:9090"},
      {"port_file", "/tmp/gpurent.port"},
      {"io_threads", "3"},
      {"worker_threads", "5"},
      {"http_body_limit", "2MiB"},
      {"http_header_limit", "8KiB"},
      {"http_read_timeout", "11s"},
      {"http_write_timeout", "12s"},
      {"http_idle_timeout", "61s"},
      {"http_pipeline_limit", "9"},
      {"http_max_connections", "50"},
      {"shutdown_deadline", "16s"},
      {"web_root", "/srv/web"},
      {"tls_certificate", "/etc/gpurent/tls.crt"},
      {"tls_key", "/etc/gpurent/tls.key"},
      {"hsts_max_age", "1h"},
      {"database_url", "postgresql://db/gpurent"},
      {"data_dir", "/var/lib/gpurent"},
      {"db_pool_size", "9"},
      {"db_pool_wait", "3s"},
      {"db_statement_timeout", "11s"},
      {"migrate_on_start", "false"},
      {"signup_enabled", "false"},
      {"session_idle", "11h"},
      {"session_absolute", "169h"},
      {"password_hash_cost", "16"},
      {"rate_limit_per_credential", "21"},
      {"rate_limit_burst_per_credential", "101"},
      {"trusted_proxies", "10.0.0.0/8"},
      {"rate_limit_per_ip", "51"},
      {"rate_limit_burst_per_ip", "201"},
      {"currency", "USD"},
      {"vat_rate", "22"},
      {"prices_include_tax", "false"},
      {"rental_discounts", "14:7"},
      {"sla_credit_policy", "whole_block"},
      {"billing_time_zone", "Europe/Moscow"},
      {"payment_webhook_secret", "whsec_0123456789abcdef"},
      {"payment_webhook_tolerance", "10m"},
      {"enrollment_token_ttl", "1h"},
      {"rental_cleaning_window", "2h"},
      {"booking_horizon_days", "30"},
      {"pending_timeout", "6h"},
      {"lifecycle_interval", "30s"},
      {"lifecycle_wake", "false"},
      {"burn_ins", "false"},
      {"agent_listen", "0.0.0.0:9443"},
      {"agent_pki_dir", "/etc/gpurent/pki"},
      {"agent_hostnames", "agents.example.com"},
      {"agent_certificate_validity", "720h"},
      {"agent_silence_limit", "5m"},
      {"agent_task_poll", "1m"},
      {"agent_telemetry_interval", "5m"},
      {"agent_telemetry_retention", "168h"},
      {"agent_outbox_max_messages", "50"},
      {"agent_outbox_max_bytes", "64KiB"},
      {"agent_heartbeat_max_pending", "7"},
      {"ssh_ca_dir", "/etc/gpurent/ssh-ca"},
      {"webhook_allow_internal", "true"},
      {"webhook_secret_key", "a webhook secret key of 32 characters"},
      {"bmc_secret_key", "a bmc secret key of at least 32 characters"},
      {"bmc_allow_plain_http", "true"},
      {"bmc_timeout", "3s"},
      {"handover_credit_policy", "whole_block"},
      {"maintenance_notice", "48h"},
      {"webhook_max_attempts", "3"},
      {"webhook_backoff", "200ms"},
      {"webhook_backoff_max", "2s"},
      {"webhook_timeout", "3s"},
      {"webhook_lease", "5s"},
      {"webhook_poll_interval", "100ms"},
      {"webhook_expiring_before", "30m"},
      {"webhook_low_balance", "0"},
      {"webhook_max_resolving", "3"},
      {"log_format", "json"},
      {"log_level", "debug"},
      {"demo", "true"},
      {"test_mode", "true"},
  };
  return kOther;
}

// Every key but `config`, which names a file rather than a setting.
std::vector<ConfigKey> setting_keys() {
  std::vector<ConfigKey> out;
  for (const auto& key : config_keys()) {
    if (key.name != "config") out.push_back(key);
  }
  return out;
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
  EXPECT_TRUE(c.signup_enabled);
  EXPECT_EQ(c.session_idle, hours(12));
  EXPECT_EQ(c.session_absolute, hours(168));
  EXPECT_EQ(c.currency, "RUB");
  EXPECT_EQ(c.enrollment_token_ttl, hours(24));
  EXPECT_EQ(c.rental_cleaning_window, minutes(30));
  EXPECT_EQ(c.booking_horizon_days, 90);
  EXPECT_EQ(c.pending_timeout, hours(24));
  EXPECT_EQ(c.lifecycle_interval, seconds(5));
  EXPECT_TRUE(c.lifecycle_wake);
  EXPECT_TRUE(c.burn_ins);
  EXPECT_EQ(c.agent_listen_host, "127.0.0.1");
  EXPECT_EQ(c.agent_listen_port, 8443);
  EXPECT_EQ(c.agent_pki_dir, "var/pki");
  EXPECT_EQ(c.agent_certificate_validity, hours(8760));
  EXPECT_EQ(c.log_format, LogFormat::kAuto);
  EXPECT_EQ(c.log_level, "info");
  EXPECT_FALSE(c.demo);
  EXPECT_FALSE(c.test_mode);
  EXPECT_EQ(c.rate_limit_per_credential, 20);
  EXPECT_EQ(c.rate_limit_burst_per_ip, 200);
  EXPECT_TRUE(c == Config{});
}

TEST(LoadConfig, UnrelatedEnvironmentIsIgnored) {
  Config c = load_config({}, {"PATH=/usr/bin", "HOME=/root", "NOEQUALS", "GPURENT_IO_THREADS"});
  EXPECT_TRUE(c == Config{});
}

TEST(ConfigKeys, EveryKeyChangesTheConfig) {
  // Otherwise the tests below, which load other values and then the defaults, prove nothing
  // for that key.
  for (const auto& key : setting_keys()) {
    SCOPED_TRACE(key.name);
    auto other = other_values().find(key.name);
    ASSERT_NE(other, other_values().end()) << "other_values() needs a value for this key";
    EXPECT_NE(other->second, key.default_value);
    // HTTPS's two files are set together or not at all (check_together).
    static const std::map<std::string, std::string> kPartner = {{"tls_certificate", "tls_key"},
                                                                {"tls_key", "tls_certificate"}};
    std::vector<std::string> args{"--" + key.name + "=" + other->second};
    if (auto partner = kPartner.find(key.name); partner != kPartner.end()) {
      args.push_back("--" + partner->second + "=" + other_values().at(partner->second));
    }
    EXPECT_FALSE(load_config(args, {}) == Config{});
  }
  EXPECT_EQ(other_values().size(), setting_keys().size()) << "a key in other_values() is gone";
}

TEST(ConfigKeys, DocumentedDefaultsAreTheRealDefaults) {
  // The defaults --help prints (README's table is checked against --help end to end), loaded
  // over other values, must give exactly Config's initialisers, every field compared.
  for (const auto& key : setting_keys()) {
    SCOPED_TRACE(key.name);
    Config c = load_config({"--" + key.name + "=" + other_values().at(key.name),
                            "--" + key.name + "=" + key.default_value},
                           {});
    EXPECT_TRUE(c == Config{}) << "--" << key.name << "=" << key.default_value
                               << " does not give the default";
  }
  // All at once, through the other two sources: a file of other values, then the documented
  // environment variables holding the documented defaults.
  std::string file_text;
  std::vector<std::string> env;
  for (const auto& key : setting_keys()) {
    file_text += key.name + " = " + other_values().at(key.name) + "\n";
    env.push_back(key.env + "=" + key.default_value);
  }
  TempFile file(file_text);
  EXPECT_FALSE(load_config({"--config=" + file.path()}, {}) == Config{});
  EXPECT_TRUE(load_config({"--config=" + file.path()}, env) == Config{});
}

TEST(LoadConfig, HttpsFilesComeTogetherAndHstsCanBeTurnedOff) {
  EXPECT_THAT(config_error({"--tls_certificate=/etc/gpurent/tls.crt"}),
              HasSubstr("must be set together"));
  EXPECT_THAT(config_error({"--tls_key=/etc/gpurent/tls.key"}), HasSubstr("must be set together"));
  Config c = load_config({"--tls_certificate=/a.crt", "--tls_key=/a.key"}, {});
  EXPECT_EQ(c.tls_certificate, "/a.crt");
  EXPECT_EQ(c.tls_key, "/a.key");
  EXPECT_EQ(Config{}.hsts_max_age, std::chrono::seconds(31'536'000));
  EXPECT_EQ(load_flag("hsts_max_age", "0").hsts_max_age, std::chrono::seconds(0));
  EXPECT_EQ(load_flag("hsts_max_age", "10m").hsts_max_age, std::chrono::seconds(600));
  EXPECT_THAT(config_error({"--hsts_max_age=1500ms"}), HasSubstr("hsts_max_age"));
}

TEST(LoadConfig, TheBookingHorizonIsADayToTheLongestRental) {
  EXPECT_EQ(load_config({"--booking_horizon_days=1"}, {}).booking_horizon_days, 1);
  EXPECT_EQ(load_config({"--booking_horizon_days=" + std::to_string(limits::kMaxRentalDays)}, {})
                .booking_horizon_days,
            limits::kMaxRentalDays);
  for (const std::string& bad :
       std::vector<std::string>{"0", "-1", std::to_string(limits::kMaxRentalDays + 1), "90d", ""}) {
    SCOPED_TRACE(bad);
    EXPECT_THAT(config_error({"--booking_horizon_days=" + bad}),
                HasSubstr("config booking_horizon_days (from flag --booking_horizon_days)"));
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

// Kept in whole seconds: less than a second would truncate to zero (every session over at
// once), and a fraction would be dropped silently.
TEST(LoadConfig, DurationsAboveTenYearsAreRefusedForEveryDurationKey) {
  for (std::string key :
       {"http_read_timeout", "http_write_timeout", "http_idle_timeout", "shutdown_deadline",
        "db_pool_wait", "db_statement_timeout", "session_idle", "session_absolute",
        "enrollment_token_ttl", "rental_cleaning_window", "pending_timeout", "lifecycle_interval",
        "agent_certificate_validity", "agent_silence_limit", "agent_task_poll",
        "agent_telemetry_interval", "agent_telemetry_retention", "payment_webhook_tolerance"}) {
    SCOPED_TRACE(key);
    for (std::string too_long : {"87601h", "999999999h", "315360001s"}) {
      std::string error = config_error({"--" + key + "=" + too_long});
      EXPECT_THAT(error, HasSubstr("config " + key + " (from flag --" + key + ")"));
      EXPECT_THAT(error, HasSubstr("at most 87600h"));
    }
  }
  // Ten years exactly is accepted (session_idle may not exceed session_absolute).
  EXPECT_EQ(
      load_config({"--session_absolute=87600h", "--session_idle=87600h"}, {}).session_absolute,
      std::chrono::hours(87600));
}

TEST(LoadConfig, WholeSecondDurationsRefuseLessThanASecondAndFractions) {
  struct Case {
    std::string value;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {"500ms", "at least 1s"},
      {"999ms", "at least 1s"},
      {"1ms", "at least 1s"},
      {"0ms", "at least 1s"},
      {"0s", "at least 1s"},
      {"0h", "at least 1s"},
      {"1500ms", "whole number of seconds"},
      {"1001ms", "whole number of seconds"},
      {"86399999ms", "whole number of seconds"},
  };
  for (std::string key : {"session_idle", "session_absolute", "enrollment_token_ttl"}) {
    std::string env_name = "GPURENT_" + key;
    for (auto& ch : env_name) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    for (const auto& c : cases) {
      SCOPED_TRACE(key + "=" + c.value);
      std::string from_flag = config_error({"--" + key + "=" + c.value});
      EXPECT_THAT(from_flag, HasSubstr("config " + key + " (from flag --" + key + ")"));
      EXPECT_THAT(from_flag, HasSubstr(c.expected));
      EXPECT_THAT(from_flag, HasSubstr("'" + c.value + "'"));
      EXPECT_THAT(from_flag, Not(HasSubstr("\n")));
      std::string from_env = config_error({}, {env_name + "=" + c.value});
      EXPECT_THAT(from_env, HasSubstr("config " + key + " (from environment " + env_name + ")"));
      EXPECT_THAT(from_env, HasSubstr(c.expected));
    }
  }
}

TEST(LoadConfig, WholeSecondDurationsAcceptWholeSeconds) {
  struct Case {
    std::string value;
    seconds expected;
  };
  const std::vector<Case> cases = {
      {"1s", seconds(1)},
      {"1000ms", seconds(1)},
      {"2000ms", seconds(2)},
      {"90s", seconds(90)},
      {"15m", minutes(15)},
      {"12h", hours(12)},
      {"315360000s", seconds(315360000)},  // ten years, the most a duration may be
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.value);
    // Both session keys at once, so session_idle never exceeds session_absolute.
    Config sessions =
        load_config({"--session_idle=" + c.value, "--session_absolute=" + c.value}, {});
    EXPECT_EQ(sessions.session_idle, c.expected);
    EXPECT_EQ(sessions.session_absolute, c.expected);
    EXPECT_EQ(load_flag("enrollment_token_ttl", c.value).enrollment_token_ttl, c.expected);
  }
}

TEST(LoadConfig, SessionIdleLongerThanSessionAbsoluteIsRefusedNamingBoth) {
  TempFile absolute_in_file("session_absolute = 1h\n");
  struct Case {
    std::vector<std::string> args;
    std::vector<std::string> env;
    std::vector<std::string> expected;  // parts of the one line
  };
  const std::vector<Case> cases = {
      {{"--session_idle=13h", "--session_absolute=12h"},
       {},
       {"session_idle (13h, from flag --session_idle)",
        "session_absolute (12h, from flag --session_absolute)"}},
      {{"--session_idle=3601s", "--session_absolute=1h"},
       {},
       {"session_idle (3601s, from flag --session_idle)",
        "session_absolute (1h, from flag --session_absolute)"}},
      {{},
       {"GPURENT_SESSION_IDLE=169h"},
       {"session_idle (169h, from environment GPURENT_SESSION_IDLE)",
        "session_absolute (168h, the default)"}},
      {{"--config=" + absolute_in_file.path()},
       {},
       {"session_idle (12h, the default)",
        "session_absolute (1h, from " + absolute_in_file.path() + ":1)"}},
  };
  for (const auto& c : cases) {
    std::string msg = config_error(c.args, c.env);
    SCOPED_TRACE(msg);
    EXPECT_THAT(msg, HasSubstr("must not exceed"));
    for (const auto& part : c.expected) EXPECT_THAT(msg, HasSubstr(part));
    EXPECT_THAT(msg, Not(HasSubstr("\n")));
  }
}

TEST(LoadConfig, SessionIdleUpToSessionAbsoluteIsAccepted) {
  TempFile idle_in_file("session_idle = 200h\n");
  struct Case {
    std::vector<std::string> args;
    std::vector<std::string> env;
    seconds idle;
    seconds absolute;
  };
  const std::vector<Case> cases = {
      {{"--session_idle=12h", "--session_absolute=12h"}, {}, hours(12), hours(12)},
      {{"--session_idle=3600s", "--session_absolute=1h"}, {}, hours(1), hours(1)},
      {{"--session_idle=1s", "--session_absolute=1s"}, {}, seconds(1), seconds(1)},
      {{}, {"GPURENT_SESSION_IDLE=168h"}, hours(168), hours(168)},
      // Checked once every source is in: a file's value overridden by a flag never counts.
      {{"--config=" + idle_in_file.path(), "--session_idle=1h"}, {}, hours(1), hours(168)},
      {{"--config=" + idle_in_file.path()},
       {"GPURENT_SESSION_ABSOLUTE=200h"},
       hours(200),
       hours(200)},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(testing::PrintToString(c.args) + testing::PrintToString(c.env));
    Config config = load_config(c.args, c.env);
    EXPECT_EQ(config.session_idle, c.idle);
    EXPECT_EQ(config.session_absolute, c.absolute);
  }
}

TEST(LoadConfig, ACheaperPasswordHashNeedsTestMode) {
  for (const auto& [args, env] :
       std::vector<std::pair<std::vector<std::string>, std::vector<std::string>>>{
           {{"--password_hash_cost=14"}, {}},
           {{"--password_hash_cost=10", "--test_mode=false"}, {}},
           {{}, {"GPURENT_PASSWORD_HASH_COST=12"}}}) {
    std::string msg = config_error(args, env);
    SCOPED_TRACE(msg);
    EXPECT_THAT(msg, HasSubstr("password_hash_cost ("));
    EXPECT_THAT(msg, HasSubstr("is for the test suite only: it needs test_mode"));
    EXPECT_THAT(msg, Not(HasSubstr("\n")));
  }
  EXPECT_EQ(load_config({"--password_hash_cost=10", "--test_mode=true"}, {}).password_hash_cost,
            10);
  EXPECT_EQ(load_flag("password_hash_cost", "20").password_hash_cost, 20);
  for (const char* out_of_range : {"9", "21", "x"}) {
    EXPECT_THAT(
        config_error({std::string("--password_hash_cost=") + out_of_range, "--test_mode=true"}),
        HasSubstr("password_hash_cost"));
  }
}

TEST(LoadConfig, CurrencyMustBeAnIsoCodeInCirculation) {
  struct Case {
    std::string value;
    std::string expected;
  };
  const std::vector<Case> refused = {
      {"rub", "three upper-case letters"},
      {"Rub", "three upper-case letters"},
      {"RU", "three upper-case letters"},
      {"RUBL", "three upper-case letters"},
      {"", "three upper-case letters"},
      {"R1B", "three upper-case letters"},
      {" RUB", "three upper-case letters"},
      {"\xd0\xa0UB", "three upper-case letters"},
      {"ABC", "in circulation"},
      {"ZZZ", "in circulation"},
      {"XXX", "in circulation"},  // no currency
      {"XTS", "in circulation"},  // reserved for testing
      {"XAU", "in circulation"},  // gold
      {"XDR", "in circulation"},  // special drawing rights
      {"USN", "in circulation"},  // a fund code
      {"RUR", "in circulation"},  // withdrawn in 1997
      {"HRK", "in circulation"},  // replaced by EUR in 2023
  };
  for (const auto& c : refused) {
    SCOPED_TRACE(c.value);
    std::string msg = config_error({}, {"GPURENT_CURRENCY=" + c.value});
    EXPECT_THAT(msg, HasSubstr("config currency (from environment GPURENT_CURRENCY)"));
    EXPECT_THAT(msg, HasSubstr(c.expected));
    EXPECT_THAT(msg, HasSubstr("'" + c.value + "'"));
  }
  // The first and last codes of the list, and some a platform is likely to use.
  for (std::string ok : {"AED", "ZWG", "RUB", "USD", "EUR", "GBP", "CNY", "JPY", "KZT", "XOF"}) {
    EXPECT_EQ(load_flag("currency", ok).currency, ok);
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

TEST(LoadConfig, ConnectionLimitIsAtLeastOne) {
  EXPECT_EQ(load_flag("http_max_connections", "1").http_max_connections, 1u);
  EXPECT_EQ(load_config({}, {"GPURENT_HTTP_MAX_CONNECTIONS=20000"}).http_max_connections, 20000u);
  for (std::string bad : {"0", "-1", "1000001", "many"}) {
    SCOPED_TRACE(bad);
    std::string msg = config_error({"--http_max_connections=" + bad});
    EXPECT_THAT(msg, HasSubstr("http_max_connections"));
    EXPECT_THAT(msg, HasSubstr("from 1 to 1000000"));
  }
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

TEST(LoadConfig, BillingValuesAreCheckedWhereTheyAreRead) {
  EXPECT_EQ(load_flag("vat_rate", "20").vat_basis_points, 2000);
  EXPECT_EQ(load_flag("vat_rate", "0").vat_basis_points, 0);
  EXPECT_EQ(load_flag("vat_rate", "7.5").vat_basis_points, 750);
  EXPECT_EQ(load_flag("vat_rate", "12.25").vat_basis_points, 1225);
  EXPECT_EQ(load_flag("vat_rate", "100").vat_basis_points, 10000);
  for (std::string bad : {"", "-1", "20%", "100.01", "101", "1.234", "20.", ".5", "abc"}) {
    SCOPED_TRACE(bad);
    EXPECT_THAT(config_error({"--vat_rate=" + bad}), HasSubstr("a percentage from 0 to 100"));
  }
  EXPECT_EQ(load_flag("rental_discounts", "none").rental_discounts, "none");
  EXPECT_EQ(load_flag("rental_discounts", "3:2,10:8").rental_discounts, "3:2,10:8");
  for (std::string bad : {"7", "7:", ":5", "7:5,", "7:5,,30:10", "7-5", "7:5:3", "seven:5"}) {
    SCOPED_TRACE(bad);
    EXPECT_THAT(config_error({"--rental_discounts=" + bad}), HasSubstr("min_days:percent"));
  }
  EXPECT_THAT(config_error({"--sla_credit_policy=all"}), HasSubstr("lost_hours, whole_block"));
  EXPECT_THAT(config_error({"--billing_time_zone=Europe/Moscow;drop"}),
              HasSubstr("IANA time zone"));
  // A short secret is refused without being repeated in the error.
  std::string error = config_error({"--payment_webhook_secret=short-secret"});
  EXPECT_THAT(error, HasSubstr("at least 16 characters"));
  EXPECT_THAT(error, Not(HasSubstr("short-secret")));
}

}  // namespace config_test
}  // namespace gpurent
