// Argument parsing: commands, sub-commands, options in either form, global options on
// either side of the command, pass-through after `--`, and every usage error.
#include "cli/args.h"
#include "cli/commands.h"

#include <gtest/gtest.h>

namespace gpurent::cli::args_test {

ParsedArgs parse(std::vector<std::string> argv) {
  return parse_args(argv);
}

TEST(CliArgs, ACommandWithOptionsInBothFormsAndGlobalsOnBothSides) {
  auto a = parse({"--json", "rent", "--gpu-model", "H100-SXM5-80GB", "--gpu-count=2", "--days", "1",
                  "--image", "img_x", "--wait", "--url", "http://h:1", "--ssh-key", "key_a",
                  "--ssh-key=key_b"});
  EXPECT_EQ(a.command, "rent");
  EXPECT_TRUE(a.has("json"));
  EXPECT_TRUE(a.has("wait"));
  EXPECT_EQ(a.get("gpu-count"), "2");
  EXPECT_EQ(a.get("url"), "http://h:1");
  EXPECT_EQ(a.all("ssh-key"), (std::vector<std::string>{"key_a", "key_b"}));
  EXPECT_FALSE(a.get("name"));

  auto body = booking_body(a);
  EXPECT_EQ(body, nlohmann::json::parse(R"({"gpu_model":"H100-SXM5-80GB","gpu_count":2,"days":1,
      "image_id":"img_x","start":"now","ssh_key_ids":["key_a","key_b"]})"));
}

TEST(CliArgs, SubCommandsAndPositionals) {
  auto a = parse({"keys", "delete", "key_123"});
  EXPECT_EQ(a.command, "keys delete");
  EXPECT_EQ(a.positionals, std::vector<std::string>{"key_123"});
  auto t = parse({"tokens", "create", "--name", "ci", "--scopes", "rentals:read,rentals:write"});
  EXPECT_EQ(t.command, "tokens create");
  auto i = parse({"invoices", "csv", "inv_1", "--output", "/tmp/x.csv"});
  EXPECT_EQ(i.command, "invoices csv");
  EXPECT_EQ(i.get("output"), "/tmp/x.csv");
}

TEST(CliArgs, NoticesIsACommandAndHasASubCommand) {
  auto list = parse({"notices", "--rental", "rnt_1"});
  EXPECT_EQ(list.command, "notices");
  EXPECT_EQ(list.get("rental"), "rnt_1");
  EXPECT_EQ(parse({"--json", "notices"}).command, "notices");
  auto answer =
      parse({"notices", "answer", "ntc_1", "--rental", "rnt_1", "--choice=shift", "--json"});
  EXPECT_EQ(answer.command, "notices answer");
  EXPECT_EQ(answer.positionals, std::vector<std::string>{"ntc_1"});
  EXPECT_EQ(answer.get("choice"), "shift");
  EXPECT_TRUE(answer.has("json"));
  EXPECT_NE(command_help("notices").find("notices answer"), std::string::npos)
      << "the command's help names its sub-command";
  EXPECT_NE(command_help("notices answer").find("--choice"), std::string::npos);
}

TEST(CliArgs, RebootCheckpointAndHandoversTakeTheRentalsId) {
  auto reboot = parse({"reboot", "rnt_1", "--wait", "--timeout", "10m"});
  EXPECT_EQ(reboot.command, "reboot");
  EXPECT_EQ(reboot.positionals, std::vector<std::string>{"rnt_1"});
  EXPECT_TRUE(reboot.has("wait"));
  auto set = parse({"checkpoint", "rnt_1", "--set", "python save.py --fast", "--timeout", "5m"});
  EXPECT_EQ(set.get("set"), "python save.py --fast");
  EXPECT_EQ(set.get("timeout"), "5m");
  EXPECT_TRUE(parse({"checkpoint", "rnt_1", "--clear"}).has("clear"));
  EXPECT_EQ(parse({"handovers", "rnt_1"}).command, "handovers");
}

TEST(CliArgs, SshPassesEverythingAfterTheIdThrough) {
  auto a = parse({"ssh", "rnt_1", "--", "-L", "8888:localhost:8888", "nvidia-smi", "-q"});
  EXPECT_EQ(a.command, "ssh");
  EXPECT_EQ(a.positionals, std::vector<std::string>{"rnt_1"});
  EXPECT_EQ(a.passthrough,
            (std::vector<std::string>{"-L", "8888:localhost:8888", "nvidia-smi", "-q"}));
  auto b = parse({"ssh", "--print", "rnt_1", "true"});
  EXPECT_TRUE(b.has("print"));
  EXPECT_EQ(b.passthrough, std::vector<std::string>{"true"});
}

TEST(CliArgs, HelpInEveryForm) {
  EXPECT_TRUE(parse({"--help"}).help);
  EXPECT_TRUE(parse({"-h"}).help);
  auto r = parse({"rent", "--help"});
  EXPECT_TRUE(r.help);
  EXPECT_EQ(r.command, "rent");
  auto k = parse({"keys", "--help"});
  EXPECT_TRUE(k.help);
  EXPECT_EQ(k.command, "keys");
  auto h = parse({"help", "tokens", "create"});
  EXPECT_EQ(h.command, "help");
  EXPECT_EQ(h.positionals, (std::vector<std::string>{"tokens", "create"}));
  EXPECT_NE(command_help("tokens create").find("--max-days"), std::string::npos);
  EXPECT_NE(command_help("keys").find("add"), std::string::npos);
  std::string all = general_help();
  for (const auto& c : commands()) EXPECT_NE(all.find(c.name), std::string::npos) << c.name;
  EXPECT_NE(all.find("Exit codes"), std::string::npos);
  EXPECT_NE(all.find("GPURENT_TOKEN"), std::string::npos);
}

TEST(CliArgs, UsageErrorsNameWhatIsWrong) {
  struct Case {
    std::vector<std::string> argv;
    const char* message;
  };
  const Case cases[] = {
      {{"frobnicate"}, "unknown command \"frobnicate\""},
      {{"keys"}, "keys needs a sub-command: list, add, delete"},
      {{"keys", "explode"}, "unknown command \"keys explode\""},
      {{"rent", "--gpu-count"}, "--gpu-count needs a value"},
      {{"rent", "--colour", "red"}, "unknown option --colour for rent"},
      {{"list", "--wait"}, "unknown option --wait for list"},
      {{"show"}, "show needs <rental-id>"},
      {{"show", "rnt_1", "rnt_2"}, "unexpected argument \"rnt_2\""},
      {{"list", "--json=yes"}, "--json takes no value"},
      {{"rent", "--days", "1", "--days", "2"}, "--days given twice"},
      {{"balance", "--", "x"}, "balance takes nothing after --"},
      {{"-x"}, "unknown option -x"},
      {{"notices", "answer"}, "notices answer needs <notice-id>"},
      {{"notices", "answer", "ntc_1", "--colour", "red"},
       "unknown option --colour for notices answer"},
      {{"notices", "ntc_1"}, "unexpected argument \"ntc_1\""},
      {{"reboot"}, "reboot needs <rental-id>"},
      {{"handovers", "rnt_1", "rnt_2"}, "unexpected argument \"rnt_2\""},
      {{"checkpoint", "rnt_1", "--clear=yes"}, "--clear takes no value"},
  };
  for (const auto& c : cases) {
    try {
      parse(c.argv);
      ADD_FAILURE() << "accepted: " << c.argv[0];
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find(c.message), std::string::npos)
          << e.what() << " | expected " << c.message;
    }
  }
}

TEST(CliArgs, OptionValuesAreChecked) {
  EXPECT_EQ(parse_duration_seconds("timeout", "90"), 90);
  EXPECT_EQ(parse_duration_seconds("timeout", "90s"), 90);
  EXPECT_EQ(parse_duration_seconds("timeout", "15m"), 900);
  EXPECT_EQ(parse_duration_seconds("timeout", "2h"), 7200);
  for (const char* bad : {"", "m", "5d", "-1", "1.5m", "9999999h"}) {
    EXPECT_THROW(parse_duration_seconds("timeout", bad), UsageError) << bad;
  }
  EXPECT_EQ(parse_int_option("days", "3", 1, 365), 3);
  for (const char* bad : {"", "0", "366", "two", "3x", "-1"}) {
    EXPECT_THROW(parse_int_option("days", bad, 1, 365), UsageError) << bad;
  }
  // Booking options: required ones, and values the API would refuse anyway.
  EXPECT_THROW(booking_body(parse({"rent", "--gpu-count", "2", "--days", "1", "--image", "i"})),
               UsageError);
  EXPECT_THROW(booking_body(parse({"rent", "--gpu-model", "m", "--gpu-count", "x", "--days", "1",
                                   "--image", "i"})),
               UsageError);
  EXPECT_THROW(booking_body(parse({"rent", "--gpu-model", "m", "--gpu-count", "1", "--days", "1",
                                   "--image", "i", "--interconnect", "ethernet"})),
               UsageError);
}

}  // namespace gpurent::cli::args_test
