// Output for people: money with grouping and minor units, cells, aligned tables, URLs.
#include "cli/output.h"
#include "cli/http_transport.h"
#include "cli/ssh_login.h"

#include <gtest/gtest.h>

#include <sstream>

namespace gpurent::cli::output_test {

using nlohmann::json;

TEST(CliOutput, MoneyAsPeopleReadIt) {
  EXPECT_EQ(format_money({{"amount_minor", 1234500}, {"currency", "RUB"}}), "12,345.00 RUB");
  EXPECT_EQ(format_money({{"amount_minor", 5}, {"currency", "RUB"}}), "0.05 RUB");
  EXPECT_EQ(format_money({{"amount_minor", -100000}, {"currency", "RUB"}}), "-1,000.00 RUB");
  EXPECT_EQ(format_money({{"amount_minor", 100000000000LL}, {"currency", "RUB"}}),
            "1,000,000,000.00 RUB");
  EXPECT_EQ(format_money({{"amount_minor", 1500}, {"currency", "JPY"}}), "1,500 JPY");
  EXPECT_EQ(format_money(json()), "-");
  EXPECT_EQ(cell(json()), "-");
  EXPECT_EQ(cell(true), "yes");
  EXPECT_EQ(cell(8), "8");
}

TEST(CliOutput, DurationsAsTheOptionsTakeThem) {
  EXPECT_EQ(format_duration(600), "10m");
  EXPECT_EQ(format_duration(7200), "2h");
  EXPECT_EQ(format_duration(86400), "24h");
  EXPECT_EQ(format_duration(90), "90s");
  EXPECT_EQ(format_duration(3660), "61m");
  EXPECT_EQ(format_duration(0), "0s");
}

TEST(CliOutput, TablesAlignOnCharactersNotBytes) {
  Table t({"ID", "NAME"});
  t.add({"rnt_1", "обучение"});
  t.add({"rnt_22", "x"});
  std::ostringstream out;
  t.print(out);
  EXPECT_EQ(out.str(), "ID      NAME\nrnt_1   обучение\nrnt_22  x\n");
}

TEST(CliOutput, EndpointsFromUrls) {
  auto e = parse_endpoint("https://gpu.example.com");
  EXPECT_TRUE(e.tls);
  EXPECT_EQ(e.host, "gpu.example.com");
  EXPECT_EQ(e.port, "443");
  EXPECT_EQ(e.base_path, "");
  e = parse_endpoint("http://127.0.0.1:8080/");
  EXPECT_FALSE(e.tls);
  EXPECT_EQ(e.port, "8080");
  e = parse_endpoint("https://[::1]:9443/gpurent/");
  EXPECT_EQ(e.host, "::1");
  EXPECT_EQ(e.port, "9443");
  EXPECT_EQ(e.base_path, "/gpurent");
  for (const char* bad : {"ftp://x", "gpu.example.com", "http://", "http://h:0", "http://h:99999",
                          "http://h:80x", "http://user:pw@h", "http://h/?q=1"}) {
    EXPECT_THROW(parse_endpoint(bad), std::invalid_argument) << bad;
  }
}

TEST(CliOutput, SshCommandLineIsStrictAndQuotedForAShell) {
  json ssh{{"host", "10.0.0.5"}, {"port", 2222}, {"user", "r_abc"}};
  auto argv = ssh_argv(ssh, "/tmp/d", {"nvidia-smi", "-q"});
  std::vector<std::string> expected{"ssh",
                                    "-i",
                                    "/tmp/d/id_ed25519",
                                    "-o",
                                    "CertificateFile=/tmp/d/id_ed25519-cert.pub",
                                    "-o",
                                    "UserKnownHostsFile=/tmp/d/known_hosts",
                                    "-o",
                                    "StrictHostKeyChecking=yes",
                                    "-o",
                                    "IdentitiesOnly=yes",
                                    "-p",
                                    "2222",
                                    "r_abc@10.0.0.5",
                                    "nvidia-smi",
                                    "-q"};
  EXPECT_EQ(argv, expected);
  EXPECT_EQ(shell_quote("plain-arg_1.txt"), "plain-arg_1.txt");
  EXPECT_EQ(shell_quote("two words"), "'two words'");
  EXPECT_EQ(shell_quote("it's"), "'it'\\''s'");
  EXPECT_EQ(shell_quote(""), "''");
  EXPECT_EQ(shell_quote("$(rm -rf /)"), "'$(rm -rf /)'");
}

}  // namespace gpurent::cli::output_test
