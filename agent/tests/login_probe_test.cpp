// The login probe: ssh's command line, its output as one line, the payload's probe checked
// field by field (certificates made with ssh-keygen), the agent's probe key made once; and,
// as root, install_access against a real OpenSSH sshd: a login that works is verified and
// the probe's principal removed after, and a login that does not (principals file sshd
// cannot read, a host certificate from another CA, a certificate from another user CA) fails
// the task with ssh's reason.
#include "agent/login_probe.h"
#include "agent/access_files.h"
#include "agent/gpu_backend.h"
#include "agent/task_executor.h"
#include "core/subprocess.h"
#include "tests/support/child_process.h"
#include "tests/support/wait_for.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace gpurent::agent::login_probe_test {

namespace fs = std::filesystem;
namespace proto = agent_proto;
using ::testing::HasSubstr;

const std::string kRental = "rnt_0000000000000000000001";
const std::string kPrincipal = "gpurent-probe-" + kRental;

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string first_line(const fs::path& p) {
  auto text = slurp(p);
  return text.substr(0, text.find('\n'));
}

fs::path temp_dir(const std::string& name) {
  std::string pattern = (fs::temp_directory_path() / (name + "-XXXXXX")).string();
  fs::path dir = mkdtemp(pattern.data());
  fs::permissions(dir, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                           fs::perms::others_read | fs::perms::others_exec);
  return dir;
}

// An Ed25519 key pair at `path` (and .pub).
void keygen(const fs::path& path) {
  auto r = run_subprocess(
      {"ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "test", "-f", path.string()});
  ASSERT_EQ(r.exit_code, 0) << r.output;
}

// `pub` (a public key file) signed by the CA key `ca` with ssh-keygen's `options`; the
// certificate line. Signed from a copy, so no -cert.pub lands beside the key itself.
std::string sign(const fs::path& ca, const fs::path& pub, std::vector<std::string> options) {
  static int n = 0;
  fs::path copy = ca.parent_path() / ("to-sign-" + std::to_string(++n) + ".pub");
  fs::copy_file(pub, copy, fs::copy_options::overwrite_existing);
  std::vector<std::string> argv{"ssh-keygen", "-q", "-s", ca.string(), "-I", "test"};
  argv.insert(argv.end(), options.begin(), options.end());
  argv.push_back(copy.string());
  auto r = run_subprocess(argv);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  fs::path cert = ca.parent_path() / ("to-sign-" + std::to_string(n) + "-cert.pub");
  std::string line = first_line(cert);
  fs::remove(copy);
  fs::remove(cert);
  return line;
}

// A probe certificate as the control plane issues it.
std::vector<std::string> probe_options(const std::string& principal = kPrincipal) {
  return {"-n", principal, "-V", "-10s:+110s", "-O", "clear", "-O", "force-command=/bin/true"};
}

// ---- Pure: command line, output, validation ----

TEST(LoginProbe, TheCommandLineTrustsTheHostCaAloneAndUsesTheProbeKeyAlone) {
  std::vector<std::string> expected{"ssh",
                                    "-F",
                                    "/dev/null",
                                    "-o",
                                    "BatchMode=yes",
                                    "-o",
                                    "StrictHostKeyChecking=yes",
                                    "-o",
                                    "UserKnownHostsFile=/run/p/known_hosts",
                                    "-o",
                                    "GlobalKnownHostsFile=/dev/null",
                                    "-o",
                                    "HostKeyAlias=gpu-node-17.example.net",
                                    "-o",
                                    "IdentitiesOnly=yes",
                                    "-o",
                                    "IdentityFile=/var/lib/gpurent-agent/ssh_probe_key",
                                    "-o",
                                    "CertificateFile=/run/p/probe-cert.pub",
                                    "-o",
                                    "ConnectTimeout=5",
                                    "-p",
                                    "2222",
                                    "gpu-0123456789@127.0.0.1",
                                    "true"};
  EXPECT_EQ(ssh_probe_argv({.login = "gpu-0123456789",
                            .sshd = {"127.0.0.1", 2222},
                            .host = "gpu-node-17.example.net",
                            .identity_file = "/var/lib/gpurent-agent/ssh_probe_key",
                            .certificate_file = "/run/p/probe-cert.pub",
                            .known_hosts_file = "/run/p/known_hosts"}),
            expected);
  auto other =
      ssh_probe_argv({.login = "gpu-a", .sshd = {"::1", 22}, .host = "10.0.0.7"}, "/usr/bin/ssh");
  EXPECT_EQ(other.front(), "/usr/bin/ssh");
  EXPECT_EQ(other[other.size() - 3], "22");
  EXPECT_EQ(other[other.size() - 2], "gpu-a@::1");
}

TEST(LoginProbe, SshsOutputBecomesOneLine) {
  struct Row {
    std::string output;
    std::string reason;
  };
  const Row rows[] = {
      {"gpu-a@127.0.0.1: Permission denied (publickey).\r\n",
       "gpu-a@127.0.0.1: Permission denied (publickey)."},
      {"Warning: Permanently added 'x' (ED25519) to the list of known hosts.\n"
       "No ED25519 host key is known for gpu-node and you have requested strict checking.\n"
       "Host key verification failed.\n",
       "No ED25519 host key is known for gpu-node and you have requested strict checking.; "
       "Host key verification failed."},
      {"ssh: connect to host 127.0.0.1 port 9: Connection refused\n",
       "ssh: connect to host 127.0.0.1 port 9: Connection refused"},
      {"a\nb\n\n  c  \nd\n", "b; c; d"},
      {"Could not create directory '/root/.ssh' (Read-only file system).\n\n",
       "ssh gave no reason"},
      {"", "ssh gave no reason"},
      {"bell\x07 and \x1b[31mred\n", "bell  and  [31mred"},
  };
  for (const auto& row : rows) EXPECT_EQ(condense_ssh_output(row.output), row.reason) << row.output;
  EXPECT_EQ(condense_ssh_output(std::string(1000, 'x')).size(), 400u);
}

class ProbeGrantTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new fs::path(temp_dir("gpurent-probe-grant"));
    keygen(*dir_ / "user_ca");
    keygen(*dir_ / "probe");
    host_ca_ = new std::string(first_line(*dir_ / "user_ca.pub"));
    certificate_ = new std::string(sign(*dir_ / "user_ca", *dir_ / "probe.pub", probe_options()));
  }
  static void TearDownTestSuite() {
    fs::remove_all(*dir_);
    delete dir_;
    delete host_ca_;
    delete certificate_;
  }
  static nlohmann::json probe() {
    return {{"certificate", *certificate_},
            {"principal", kPrincipal},
            {"host", "gpu-node-17.fra1.example.net"},
            {"host_ca_key", *host_ca_}};
  }
  static fs::path* dir_;
  static std::string* host_ca_;
  static std::string* certificate_;
};
fs::path* ProbeGrantTest::dir_ = nullptr;
std::string* ProbeGrantTest::host_ca_ = nullptr;
std::string* ProbeGrantTest::certificate_ = nullptr;

TEST_F(ProbeGrantTest, AProbeAsTheControlPlaneSendsItIsTaken) {
  auto g = probe_grant_from(kRental, probe());
  EXPECT_EQ(g.certificate, *certificate_);
  EXPECT_EQ(g.principal, kPrincipal);
  EXPECT_EQ(g.host, "gpu-node-17.fra1.example.net");
  EXPECT_EQ(g.host_ca_key, *host_ca_);
  auto by_address = probe();
  by_address["host"] = "10.1.2.3";
  EXPECT_NO_THROW(probe_grant_from(kRental, by_address));
  by_address["host"] = "fd00::17";
  EXPECT_NO_THROW(probe_grant_from(kRental, by_address));
}

TEST_F(ProbeGrantTest, EveryFieldIsCheckedAndTheRefusalNamesIt) {
  struct Row {
    const char* name;
    std::string member;
    nlohmann::json value;
    std::string reason;
  };
  std::string host_cert =
      sign(*dir_ / "user_ca", *dir_ / "probe.pub", {"-h", "-n", kPrincipal, "-V", "-10s:+110s"});
  std::string two_names =
      sign(*dir_ / "user_ca", *dir_ / "probe.pub", probe_options(kPrincipal + ",gpu-0123456789"));
  std::string other_rental =
      sign(*dir_ / "user_ca", *dir_ / "probe.pub", probe_options("gpurent-probe-rnt_other"));
  std::string blob = certificate_->substr(certificate_->find(' ') + 1);
  blob = blob.substr(0, blob.find(' '));
  const Row rows[] = {
      {"another rental's principal", "principal", "gpurent-probe-rnt_other", "probe.principal"},
      {"a customer's principal", "principal", kRental, "probe.principal"},
      {"principal a number", "principal", 7, "probe.principal must be a string"},
      {"a host certificate", "certificate", host_cert, "probe.certificate must be a user"},
      {"a certificate for two names", "certificate", two_names, "probe.certificate must name"},
      {"a certificate for another rental", "certificate", other_rental,
       "probe.certificate must name"},
      {"a plain key", "certificate", *host_ca_, "probe.certificate must be an ssh-ed25519-cert"},
      {"an RSA certificate type", "certificate", "ssh-rsa-cert-v01@openssh.com " + blob,
       "probe.certificate must be an ssh-ed25519-cert"},
      {"not base64", "certificate", "ssh-ed25519-cert-v01@openssh.com AAA*", "base64"},
      {"truncated", "certificate", "ssh-ed25519-cert-v01@openssh.com " + blob.substr(0, 64),
       "not an OpenSSH Ed25519 certificate"},
      {"two lines", "certificate", *certificate_ + "\nssh-ed25519 AAAA", "one line"},
      {"missing", "certificate", nullptr, "probe.certificate must be a string"},
      {"host with a space", "host", "gpu node", "probe.host"},
      {"host label starting with -", "host", "-gpu.example", "probe.host"},
      {"host empty", "host", "", "probe.host"},
      {"host an option", "host", "-oProxyCommand=sh", "probe.host"},
      {"host CA key of an unknown type", "host_ca_key", "ssh-dss AAAA", "probe.host_ca_key"},
      {"host CA key with options", "host_ca_key", "cert-authority " + *host_ca_,
       "probe.host_ca_key"},
      {"an unknown member", "forwarding", true, "probe.forwarding is not a member"},
  };
  for (const auto& row : rows) {
    auto p = probe();
    if (row.value.is_null())
      p.erase(row.member);
    else
      p[row.member] = row.value;
    try {
      probe_grant_from(kRental, p);
      ADD_FAILURE() << row.name << ": taken";
    } catch (const std::invalid_argument& e) {
      EXPECT_THAT(e.what(), HasSubstr(row.reason)) << row.name;
    }
  }
  EXPECT_THROW(probe_grant_from(kRental, nlohmann::json::array()), std::invalid_argument);
}

TEST(LoginProbe, TheProbeKeyIsMadeOnceWhateverTheUmask) {
  fs::path dir = temp_dir("gpurent-probe-key");
  mode_t before = ::umask(0077);
  std::string line, again;
  try {
    line = ensure_probe_key(dir);
    again = ensure_probe_key(dir);
  } catch (...) {
    ::umask(before);
    fs::remove_all(dir);
    throw;
  }
  ::umask(before);
  EXPECT_THAT(line, ::testing::StartsWith("ssh-ed25519 AAAA"));
  EXPECT_THAT(line, ::testing::EndsWith(" gpurent-probe"));
  EXPECT_EQ(again, line) << "made once";
  struct stat st {};
  ASSERT_EQ(::stat(probe_key_path(dir).c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  // Half a key pair is made again whole.
  fs::remove(dir / "ssh_probe_key.pub");
  EXPECT_NE(ensure_probe_key(dir), line);
  fs::remove_all(dir);
}

TEST_F(ProbeGrantTest, ABadProbeOrNoSshdToProbeFailsTheTaskBeforeAnythingIsWritten) {
  fs::path root = *dir_ / "ssh";
  auto backend = make_simulated_backend({});
  auto run = [&](const nlohmann::json& probe, const std::string& sshd) {
    auto executor = make_executor(
        {.access_root = root, .sshd_address = sshd, .probe_key = *dir_ / "probe"}, *backend);
    proto::Task task{.task_id = "tsk_0000000000000000000001",
                     .kind = proto::TaskKind::kInstallAccess,
                     .rental_id = kRental,
                     .payload = {{"user", "gpu-aaaa"}, {"probe", probe}},
                     .deadline = std::chrono::time_point_cast<std::chrono::microseconds>(
                         std::chrono::system_clock::now() + std::chrono::hours(1))};
    std::stop_source stop;
    auto outcome = executor->execute(
        task, [](int, const std::string&) {}, stop.get_token());
    EXPECT_TRUE(outcome);
    return outcome.value_or(TaskOutcome{});
  };
  auto bad = probe();
  bad["host"] = "gpu node";
  auto refused = run(bad, "127.0.0.1:22");
  EXPECT_FALSE(refused.ok);
  EXPECT_THAT(refused.message, HasSubstr("install_access: probe.host"));
  // A probe sent to an agent that has no sshd to log in to (its flags changed since its
  // hello): nothing to prove it with.
  auto no_sshd = run(probe(), "");
  EXPECT_FALSE(no_sshd.ok);
  EXPECT_THAT(no_sshd.message, HasSubstr("no sshd to probe"));
  EXPECT_FALSE(fs::exists(root / "users/gpu-aaaa")) << "nothing written for a probe refused";
}

// ---- A real sshd (root) ----

int free_port() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t n = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &n);
  close(fd);
  return ntohs(a.sin_port);
}

constexpr const char* kNodeName = "gpu-node-probe.example.net";

// One sshd for the suite, configured as the node kit's drop-in does, on a free port; a user
// CA, a host CA (which signed sshd's host certificate for kNodeName) and another CA; a login
// made as the node kit's hook makes it (password field '*').
class LoginProbeSshdTest : public ::testing::Test {
 protected:
  struct Node {
    fs::path dir;
    int port = 0;
    std::string login;
    std::unique_ptr<testing::ChildProcess> sshd;
  };
  static Node* node_;

  static void SetUpTestSuite() {
    if (geteuid() != 0 || !fs::exists("/usr/sbin/sshd")) return;
    auto* n = new Node;
    n->dir = temp_dir("gpurent-probe-sshd");
    n->port = free_port();
    char name[32];
    std::snprintf(name, sizeof name, "gpu-p%06x", static_cast<unsigned>(getpid()) & 0xffffff);
    n->login = name;
    for (const char* key : {"host_key", "host_ca", "user_ca", "other_ca"}) keygen(n->dir / key);
    std::ofstream(n->dir / "host-cert.pub") << sign(n->dir / "host_ca", n->dir / "host_key.pub",
                                                    {"-h", "-n", kNodeName, "-V", "-5m:+1h"})
                                            << "\n";
    fs::path access = n->dir / "access";
    std::ofstream(n->dir / "sshd_config")
        << "Port " << n->port << "\nListenAddress 127.0.0.1\n"
        << "HostKey " << (n->dir / "host_key").string() << "\n"
        << "HostCertificate " << (n->dir / "host-cert.pub").string() << "\n"
        << "PidFile " << (n->dir / "sshd.pid").string() << "\n"
        << "TrustedUserCAKeys " << (access / "trusted_user_ca_keys").string() << "\n"
        << "AuthorizedPrincipalsFile " << (access / "users/%u/principals").string() << "\n"
        << "AuthorizedKeysFile " << (access / "users/%u/authorized_keys").string() << "\n"
        << "PasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\n"
        // The files live under /tmp, which everyone may write to.
        << "StrictModes no\nLogLevel VERBOSE\n";
    auto made =
        run_subprocess({"useradd", "-M", "-p", "*", "-d", "/tmp", "-s", "/bin/sh", n->login});
    EXPECT_EQ(made.exit_code, 0) << made.output;
    fs::create_directories("/run/sshd");
    n->sshd = std::make_unique<testing::ChildProcess>(
        "/usr/sbin/sshd",
        std::vector<std::string>{"-D", "-e", "-f", (n->dir / "sshd_config").string()},
        n->dir / "sshd.log");
    EXPECT_TRUE(testing::wait_for([&] {
      return slurp(n->dir / "sshd.log").find("listening") != std::string::npos;
    })) << slurp(n->dir / "sshd.log");
    node_ = n;
  }
  static void TearDownTestSuite() {
    if (!node_) return;
    node_->sshd.reset();
    run_subprocess({"userdel", "-f", node_->login});
    fs::remove_all(node_->dir);
    delete node_;
    node_ = nullptr;
  }
  void SetUp() override {
    if (!node_) GTEST_SKIP() << "needs root and OpenSSH's sshd";
    fs::remove_all(node_->dir / "access");
    fs::remove_all(node_->dir / "state");
    fs::create_directories(node_->dir / "state");
    probe_key_line_ = ensure_probe_key(node_->dir / "state");
  }

  fs::path dir() const { return node_->dir; }

  // An install_access task with a probe certificate signed by `user_ca` and the host CA
  // `host_ca` to trust.
  proto::Task install_task(const std::string& user_ca = "user_ca",
                           const std::string& host_ca = "host_ca") {
    std::string cert =
        sign(dir() / user_ca, probe_key_path(dir() / "state").string() + ".pub", probe_options());
    return {.task_id = "tsk_0000000000000000000001",
            .kind = proto::TaskKind::kInstallAccess,
            .rental_id = kRental,
            .payload = {{"user", node_->login},
                        {"principals", {kRental}},
                        {"user_ca_keys", {first_line(dir() / "user_ca.pub")}},
                        {"probe",
                         {{"certificate", cert},
                          {"principal", kPrincipal},
                          {"host", kNodeName},
                          {"host_ca_key", first_line(dir() / (host_ca + ".pub"))}}}},
            .deadline = std::chrono::time_point_cast<std::chrono::microseconds>(
                std::chrono::system_clock::now() + std::chrono::hours(1))};
  }

  TaskOutcome install(const proto::Task& task, std::vector<std::string> access_hook = {},
                      std::chrono::milliseconds wait = std::chrono::seconds(1)) {
    auto executor = make_executor({.access_root = dir() / "access",
                                   .access_hook = std::move(access_hook),
                                   .sshd_address = "127.0.0.1:" + std::to_string(node_->port),
                                   .sshd_wait = wait,
                                   .probe_key = probe_key_path(dir() / "state")},
                                  *backend_);
    std::stop_source stop;
    auto outcome = executor->execute(
        task, [](int, const std::string&) {}, stop.get_token());
    EXPECT_TRUE(outcome);
    return outcome.value_or(TaskOutcome{});
  }

  std::string principals() const {
    return slurp(dir() / "access/users" / node_->login / "principals");
  }

  std::string probe_key_line_;
  std::unique_ptr<GpuBackend> backend_ = make_simulated_backend({});
};
LoginProbeSshdTest::Node* LoginProbeSshdTest::node_ = nullptr;

TEST_F(LoginProbeSshdTest, ALoginSshdAcceptsIsVerifiedAndTheProbePrincipalRemoved) {
  auto outcome = install(install_task(), {}, std::chrono::seconds(10));
  EXPECT_TRUE(outcome.ok) << outcome.message << "\n" << node_->sshd->log();
  EXPECT_THAT(outcome.message, HasSubstr("login as " + node_->login + " verified"));
  ASSERT_TRUE(outcome.result);
  EXPECT_EQ(outcome.result->at("login_verified"), true);
  EXPECT_EQ(outcome.result->at("principals"), nlohmann::json::array({kRental}));
  EXPECT_EQ(principals(), kRental + "\n") << "the probe's principal is gone after it";
  EXPECT_FALSE(fs::exists(probe_key_path(dir() / "state").string() + "-cert.pub"));
}

TEST_F(LoginProbeSshdTest, APrincipalsFileSshdCannotReadFailsWithSshdsReason) {
  // A node whose files sshd cannot read: the login's folder closed after it was written.
  fs::path hook = dir() / "close-hook";
  std::ofstream(hook)
      << "#!/bin/sh\nchmod 0700 \"$GPURENT_ACCESS_ROOT/users/$GPURENT_ACCESS_USER\"\n";
  fs::permissions(hook, fs::perms::owner_all);
  auto outcome = install(install_task(), {hook.string()});
  EXPECT_FALSE(outcome.ok);
  EXPECT_THAT(outcome.message, HasSubstr("login as " + node_->login));
  EXPECT_THAT(outcome.message, HasSubstr("Permission denied (publickey)"));
  EXPECT_THAT(outcome.message, HasSubstr((dir() / "access/users" / node_->login).string() +
                                         " is mode 0700: others cannot search it"));
  EXPECT_EQ(principals(), kRental + "\n") << "the probe's principal is gone after it";
}

TEST_F(LoginProbeSshdTest, AHostCertificateFromAnotherCaFailsHostVerification) {
  auto outcome = install(install_task("user_ca", "other_ca"));
  EXPECT_FALSE(outcome.ok);
  EXPECT_THAT(outcome.message, HasSubstr("Host key verification failed"));
  EXPECT_EQ(principals(), kRental + "\n");
}

TEST_F(LoginProbeSshdTest, ACertificateFromAnotherUserCaIsRefused) {
  auto outcome = install(install_task("other_ca", "host_ca"));
  EXPECT_FALSE(outcome.ok);
  EXPECT_THAT(outcome.message, HasSubstr("Permission denied (publickey)"));
  EXPECT_THAT(outcome.message, ::testing::Not(HasSubstr("cannot read its files")));
}

}  // namespace gpurent::agent::login_probe_test
