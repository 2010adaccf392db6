// Configuration: flags over environment over the config file over defaults, the file's
// path, its syntax, and the refusal of a token file others can read.
#include "cli/config.h"

#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>

namespace gpurent::cli::config_test {

namespace fs = std::filesystem;

Environment env_of(std::map<std::string, std::string> vars) {
  return [vars](const std::string& name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

class CliConfig : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/gpurent-cli-config-XXXXXX";
    dir_ = mkdtemp(pattern);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string write(const std::string& text, mode_t mode = 0600) {
    std::string path = dir_ + "/config";
    chmod(path.c_str(), 0600);  // writable again after a read-only case
    std::ofstream(path, std::ios::trunc) << text;
    chmod(path.c_str(), mode);
    return path;
  }

  std::string dir_;
};

TEST_F(CliConfig, EachSettingComesFromTheFirstSourceThatHasIt) {
  std::string path = write(
      "# the CI machine's\nurl = https://file.example\ntoken = gpr_file\nca_file = /file.pem\n"
      "retries = 7\n");
  auto env = env_of({{"GPURENT_CONFIG", path}});
  // The file alone.
  Settings s = resolve_settings({}, env);
  EXPECT_EQ(s.url, "https://file.example");
  EXPECT_EQ(s.token, "gpr_file");
  EXPECT_EQ(s.ca_file, "/file.pem");
  EXPECT_EQ(s.retries, 7);
  EXPECT_FALSE(s.insecure);
  EXPECT_EQ(s.url_source, path);
  // The environment over the file.
  env = env_of({{"GPURENT_CONFIG", path},
                {"GPURENT_URL", "https://env.example"},
                {"GPURENT_TOKEN", "gpr_env"},
                {"GPURENT_INSECURE", "1"}});
  s = resolve_settings({}, env);
  EXPECT_EQ(s.url, "https://env.example");
  EXPECT_EQ(s.token, "gpr_env");
  EXPECT_EQ(s.token_source, "GPURENT_TOKEN");
  EXPECT_EQ(s.ca_file, "/file.pem") << "what the environment does not say, the file does";
  EXPECT_TRUE(s.insecure);
  // Flags over both.
  s = resolve_settings({.url = "http://flag:1", .token = "gpr_flag", .retries = 0}, env);
  EXPECT_EQ(s.url, "http://flag:1");
  EXPECT_EQ(s.token, "gpr_flag");
  EXPECT_EQ(s.token_source, "--token");
  EXPECT_EQ(s.retries, 0);
  // An empty variable counts as unset (CI systems set empty ones for missing secrets).
  s = resolve_settings({}, env_of({{"GPURENT_CONFIG", path}, {"GPURENT_TOKEN", ""}}));
  EXPECT_EQ(s.token, "gpr_file");
}

TEST_F(CliConfig, DefaultsWithNoFileAnywhere) {
  Settings s = resolve_settings({}, env_of({{"GPURENT_CONFIG", dir_ + "/absent"}}));
  EXPECT_EQ(s.url, "http://127.0.0.1:8080");
  EXPECT_EQ(s.token, "");
  EXPECT_EQ(s.token_source, "none");
  EXPECT_EQ(s.retries, 4);
}

TEST_F(CliConfig, TheFilesPathFollowsXdgThenHome) {
  EXPECT_EQ(config_file_path({.config_path = "/x/c"}, env_of({{"GPURENT_CONFIG", "/y"}})), "/x/c");
  EXPECT_EQ(config_file_path({}, env_of({{"GPURENT_CONFIG", "/y"}, {"XDG_CONFIG_HOME", "/x"}})),
            "/y");
  EXPECT_EQ(config_file_path({}, env_of({{"XDG_CONFIG_HOME", "/xdg"}, {"HOME", "/home/u"}})),
            "/xdg/gpurent/config");
  EXPECT_EQ(config_file_path({}, env_of({{"HOME", "/home/u"}})), "/home/u/.config/gpurent/config");
  EXPECT_EQ(config_file_path({}, env_of({})), "");
}

TEST_F(CliConfig, ATokenFileOthersCanReadIsRefusedLikeSshRefusesAKey) {
  for (mode_t mode : {0644, 0640, 0604, 0660, 0606}) {
    std::string path = write("token = gpr_secret\n", mode);
    try {
      read_config_file(path);
      ADD_FAILURE() << "accepted mode " << std::oct << mode;
    } catch (const ConfigError& e) {
      std::string what = e.what();
      EXPECT_NE(what.find("chmod 600"), std::string::npos) << what;
      EXPECT_EQ(what.find("gpr_secret"), std::string::npos) << "the token is never printed";
    }
  }
  EXPECT_EQ(read_config_file(write("token = gpr_secret\n", 0600)).at("token"), "gpr_secret");
  EXPECT_EQ(read_config_file(write("token = gpr_secret\n", 0400)).at("token"), "gpr_secret");
  // Without a token there is nothing to protect.
  EXPECT_EQ(read_config_file(write("url = http://x\n", 0644)).at("url"), "http://x");
}

TEST_F(CliConfig, SyntaxErrorsNameTheLine) {
  EXPECT_EQ(read_config_file(write("  url =  \"http://q\"  \n\n# c\n")).at("url"), "http://q");
  try {
    read_config_file(write("url = http://x\nbogus line\n"));
    ADD_FAILURE();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find(":2: expected key = value"), std::string::npos)
        << e.what();
  }
  try {
    read_config_file(write("colour = red\n"));
    ADD_FAILURE();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("unknown key \"colour\""), std::string::npos) << e.what();
  }
  std::string path = write("retries = lots\n");
  EXPECT_THROW(resolve_settings({}, env_of({{"GPURENT_CONFIG", path}})), ConfigError);
  EXPECT_THROW(resolve_settings({}, env_of({{"GPURENT_CONFIG", dir_ + "/absent"},
                                            {"GPURENT_INSECURE", "maybe"}})),
               ConfigError);
}

}  // namespace gpurent::cli::config_test
