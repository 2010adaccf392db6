// The agent's task executors with real hooks (shell scripts in a temporary folder) and real
// files: a hook's output lines, environment, input, exit status, time limit and stop; the
// access files sshd reads, what may go into them, and a revoke that leaves other rentals'
// logins alone; provisioning progress from the hook's lines; notices with their checkpoint
// commands, and reboots through the hook, simulated, and reported after the node came back.
#include "agent/task_executor.h"
#include "agent/access_files.h"
#include "agent/gpu_backend.h"
#include "agent/hook_runner.h"
#include "agent/login_sessions.h"
#include "agent/notice_file.h"
#include "agent/task_journal.h"
#include "agent_proto/burn_in/figures.h"
#include "core/subprocess.h"
#include "tests/support/wait_for.h"

#include <gtest/gtest.h>

#include <sys/wait.h>

#include <netinet/in.h>
#include <pwd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

namespace gpurent::agent::task_executor_test {

namespace fs = std::filesystem;
namespace proto = agent_proto;
using std::chrono::milliseconds;
using std::chrono::steady_clock;
using testing::wait_for;

const std::string kKey =
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl laptop";

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

class TaskExecutorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "gpurent-executor-XXXXXX").string();
    dir_ = mkdtemp(pattern.data());
  }
  void TearDown() override { fs::remove_all(dir_); }

  // An executable shell script in the temporary folder; its path.
  std::string script(const std::string& name, const std::string& body) {
    fs::path p = dir_ / name;
    std::ofstream(p) << "#!/bin/sh\n" << body << "\n";
    fs::permissions(p, fs::perms::owner_all);
    return p.string();
  }

  HookResult run(const std::vector<std::string>& argv, std::vector<std::string>* lines = nullptr,
                 HookRun extra = {}) {
    extra.argv = argv;
    if (extra.timeout == HookRun{}.timeout) extra.timeout = std::chrono::seconds(20);
    return run_hook(
        extra,
        [&](const std::string& l) {
          if (lines) lines->push_back(l);
        },
        stop_.get_token());
  }

  static proto::Task task(proto::TaskKind kind, nlohmann::json payload,
                          std::string rental = "rnt_0000000000000000000001") {
    return {.task_id = "tsk_0000000000000000000001",
            .kind = kind,
            .rental_id = std::move(rental),
            .payload = std::move(payload),
            .deadline = std::chrono::time_point_cast<std::chrono::microseconds>(
                std::chrono::system_clock::now() + std::chrono::hours(1))};
  }

  fs::path dir_;
  std::stop_source stop_;
  std::unique_ptr<GpuBackend> backend_ = make_simulated_backend({});
};

TEST_F(TaskExecutorTest, AHookGetsItsEnvironmentAndInputAndItsLinesComeInOrder) {
  std::vector<std::string> lines;
  HookRun extra;
  extra.env = {{"GPURENT_RENTAL_ID", "rnt_x"}};
  extra.input = "{\"image_id\": \"img_1\"}";
  auto r = run({script("h", "echo \"rental $GPURENT_RENTAL_ID\"\ncat\necho\necho done >&2")},
               &lines, extra);
  EXPECT_TRUE(r.ok()) << r.describe();
  EXPECT_EQ(lines, (std::vector<std::string>{"rental rnt_x", "{\"image_id\": \"img_1\"}", "done"}));
}

TEST_F(TaskExecutorTest, AFailingHookSaysHowWithItsLastLine) {
  auto r = run({script("h", "echo working\necho 'disk /dev/nvme9 not found'\nexit 3")});
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.end, HookResult::End::kExited);
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.describe(), "exited with 3: disk /dev/nvme9 not found");

  auto missing = run({(dir_ / "no-such-hook").string()});
  EXPECT_EQ(missing.end, HookResult::End::kNotStarted);
  EXPECT_NE(missing.describe().find("No such file"), std::string::npos) << missing.describe();
}

TEST_F(TaskExecutorTest, ATimeLimitKillsTheHookAndWhatItStarted) {
  // The background sleep keeps the output open: only killing the group ends it.
  std::string marker = (dir_ / "survived").string();
  HookRun extra;
  extra.timeout = milliseconds(300);
  auto started = steady_clock::now();
  auto r =
      run({script("h", "(sleep 1; touch " + marker + ") &\necho begun\nsleep 30")}, nullptr, extra);
  EXPECT_LT(steady_clock::now() - started, std::chrono::seconds(5));
  EXPECT_EQ(r.end, HookResult::End::kTimedOut);
  EXPECT_EQ(r.describe(), "timed out: (time limit 300ms)");
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  EXPECT_FALSE(fs::exists(marker)) << "the hook's background child outlived it";
}

TEST_F(TaskExecutorTest, StoppingTheAgentStopsTheHook) {
  std::thread stopper([this] {
    std::this_thread::sleep_for(milliseconds(200));
    stop_.request_stop();
  });
  auto started = steady_clock::now();
  auto r = run({script("h", "sleep 30")});
  stopper.join();
  EXPECT_EQ(r.end, HookResult::End::kStopped);
  EXPECT_LT(steady_clock::now() - started, std::chrono::seconds(5));
}

TEST_F(TaskExecutorTest, AHookThatIgnoresItsInputDoesNotHurtTheAgent) {
  HookRun extra;
  extra.input = std::string(1 << 20, 'x');  // more than a pipe holds
  auto r = run({script("h", "exit 0")}, nullptr, extra);
  EXPECT_TRUE(r.ok()) << r.describe();
}

TEST_F(TaskExecutorTest, AccessFilesAreWrittenPerLoginAndRevokedPerRental) {
  fs::path root = dir_ / "ssh";
  auto a = access_grant_from("rnt_a", {{"user", "gpu-aaaa"},
                                       {"principals", {"rnt_a"}},
                                       {"authorized_keys", {kKey}},
                                       {"user_ca_keys", {kKey}}});
  auto b = access_grant_from("rnt_b", {{"user", "gpu-bbbb"}, {"principals", {"rnt_b"}}});
  install_access(root, a);
  install_access(root, b);
  EXPECT_EQ(slurp(root / "users/gpu-aaaa/principals"), "rnt_a\n");
  EXPECT_EQ(slurp(root / "users/gpu-aaaa/authorized_keys"), kKey + "\n");
  EXPECT_EQ(slurp(root / "users/gpu-aaaa/rental"), "rnt_a\n");
  EXPECT_EQ(slurp(root / "users/gpu-bbbb/authorized_keys"), "");
  EXPECT_EQ(slurp(root / "trusted_user_ca_keys"), kKey + "\n");

  // Host certificates land where sshd's HostCertificate beside each host key looks, by kind.
  std::string ed_cert = "ssh-ed25519-cert-v01@openssh.com AAAAIHNzaC1lZDI1NTE5 node=nod_a";
  std::string ec_cert = "ecdsa-sha2-nistp256-cert-v01@openssh.com AAAAKGVjZHNh node=nod_a";
  install_access(root, access_grant_from("rnt_c", {{"user", "gpu-cccc"},
                                                   {"host_certificates", {ed_cert, ec_cert}}}));
  EXPECT_EQ(slurp(root / "host_certificates/ssh_host_ed25519_key-cert.pub"), ed_cert + "\n");
  EXPECT_EQ(slurp(root / "host_certificates/ssh_host_ecdsa_key-cert.pub"), ec_cert + "\n");

  EXPECT_EQ(revoke_access(root, "rnt_a"), std::vector<std::string>{"gpu-aaaa"});
  EXPECT_FALSE(fs::exists(root / "users/gpu-aaaa"));
  EXPECT_TRUE(fs::exists(root / "users/gpu-bbbb/principals")) << "another rental's login stays";
  EXPECT_TRUE(revoke_access(root, "rnt_a").empty()) << "repeating it is harmless";
  EXPECT_TRUE(revoke_access(dir_ / "never-made", "rnt_a").empty());
  EXPECT_TRUE(login_taken_by_other(root, "gpu-bbbb", "rnt_a"));
  EXPECT_FALSE(login_taken_by_other(root, "gpu-bbbb", "rnt_b"));
  EXPECT_FALSE(login_taken_by_other(root, "gpu-aaaa", "rnt_b")) << "gone: nobody's";
}

TEST_F(TaskExecutorTest, NothingUnsafeReachesSshdsFiles) {
  const nlohmann::json bad_payloads[] = {
      {{"principals", {"rnt_a"}}},                   // no user
      {{"user", "root\nx"}},                         // a second line
      {{"user", "Root"}},                            // not a login name
      {{"user", std::string(40, 'a')}},              // too long
      {{"user", "gpu-a"}, {"principals", {"a b"}}},  // a principal with a space
      {{"user", "gpu-a"}, {"principals", "rnt_a"}},  // not a list
      {{"user", "gpu-a"}, {"authorized_keys", {kKey + "\nssh-rsa AAAA evil"}}},
      {{"user", "gpu-a"}, {"authorized_keys", {"command=\"/bin/sh\" " + kKey}}},
      {{"user", "gpu-a"}, {"authorized_keys", {"-----BEGIN OPENSSH PRIVATE KEY-----"}}},
      {{"user", "gpu-a"}, {"authorized_keys", {std::string(20000, 'A')}}},
      {{"user", "gpu-a"}, {"user_ca_keys", {"ssh-ed25519 not*base64"}}},
      {{"user", "gpu-a"}, {"authorized_keys", {1}}},
      // A host certificate must be one: a plain key, or a type sshd names no file for, is not.
      {{"user", "gpu-a"}, {"host_certificates", {kKey}}},
      {{"user", "gpu-a"}, {"host_certificates", {"ssh-dss-cert-v01@openssh.com AAAA"}}},
      {{"user", "gpu-a"}, {"host_certificates", {"ssh-rsa-cert-v01@openssh.com AA\nAA"}}},
  };
  for (const auto& p : bad_payloads) {
    EXPECT_THROW(access_grant_from("rnt_a", p), std::invalid_argument) << p.dump();
  }
}

TEST_F(TaskExecutorTest, ProvisioningReportsTheHooksProgressAndItsFailure) {
  ExecutorOptions options{
      .access_root = dir_ / "ssh",
      .provision_hook = {script("provision",
                                "echo \"progress 30 writing $GPURENT_IMAGE_ID\"\n"
                                "echo noise\necho 'progress 101 bad'\n"
                                "echo \"progress 100 booted on $GPURENT_GPU_INDICES\"")}};
  auto executor = make_executor(options, *backend_);
  std::vector<std::pair<int, std::string>> progress;
  auto outcome = executor->execute(
      task(proto::TaskKind::kProvision, {{"image_id", "img_7"}, {"gpu_indices", {2, 3}}}),
      [&](int p, const std::string& m) { progress.emplace_back(p, m); }, stop_.get_token());
  ASSERT_TRUE(outcome);
  EXPECT_TRUE(outcome->ok) << outcome->message;
  EXPECT_EQ(progress, (std::vector<std::pair<int, std::string>>{
                          {0, "provisioning"}, {30, "writing img_7"}, {100, "booted on 2,3"}}));

  options.provision_hook = {script("fail", "echo 'image img_7 is corrupt'\nexit 1")};
  auto failing = make_executor(options, *backend_);
  outcome = failing->execute(
      task(proto::TaskKind::kProvision, {{"image_id", "img_7"}}), [](int, const std::string&) {},
      stop_.get_token());
  ASSERT_TRUE(outcome);
  EXPECT_FALSE(outcome->ok);
  EXPECT_EQ(outcome->message, "provisioning hook exited with 1: image img_7 is corrupt");
}

TEST_F(TaskExecutorTest, AccessTasksWriteTheFilesThenRunTheAccessHook) {
  std::string log = (dir_ / "hook.log").string();
  ExecutorOptions options{
      .access_root = dir_ / "ssh",
      .access_hook = {script("access",
                             "echo \"$GPURENT_ACCESS_ACTION $GPURENT_ACCESS_USER "
                             "$(cat $GPURENT_ACCESS_ROOT/users/gpu-aaaa/principals "
                             "2>/dev/null)\" >> " +
                                 log)}};
  auto executor = make_executor(options, *backend_);
  auto noop = [](int, const std::string&) {};
  auto installed = executor->execute(
      task(proto::TaskKind::kInstallAccess,
           {{"user", "gpu-aaaa"}, {"principals", {"rnt_a"}}, {"authorized_keys", {kKey}}}, "rnt_a"),
      noop, stop_.get_token());
  ASSERT_TRUE(installed);
  EXPECT_TRUE(installed->ok) << installed->message;
  EXPECT_EQ(installed->result->at("user"), "gpu-aaaa");

  auto refused =
      executor->execute(task(proto::TaskKind::kInstallAccess, {{"user", "gpu-b\nroot"}}, "rnt_b"),
                        noop, stop_.get_token());
  ASSERT_TRUE(refused);
  EXPECT_FALSE(refused->ok);
  EXPECT_NE(refused->message.find("user must be a login name"), std::string::npos);

  auto revoked =
      executor->execute(task(proto::TaskKind::kRevokeAccess, nlohmann::json::object(), "rnt_a"),
                        noop, stop_.get_token());
  ASSERT_TRUE(revoked);
  EXPECT_TRUE(revoked->ok) << revoked->message;
  // The hook hears the login it is to remove, after its files went.
  EXPECT_EQ(slurp(log), "install gpu-aaaa rnt_a\nrevoke gpu-aaaa \n");
  EXPECT_FALSE(fs::exists(dir_ / "ssh/users/gpu-aaaa"));
  EXPECT_EQ(revoked->message, "access revoked (1 login(s), 0 process(es) ended)");
  EXPECT_EQ(revoked->result->at("users"), nlohmann::json::array({"gpu-aaaa"}));

  // Repeated with the files gone, the payload's login is still ended and the hook told;
  // a login another rental's files name is never touched.
  install_access(dir_ / "ssh", access_grant_from("rnt_c", {{"user", "gpu-cccc"}}));
  auto again =
      executor->execute(task(proto::TaskKind::kRevokeAccess, {{"user", "gpu-aaaa"}}, "rnt_a"), noop,
                        stop_.get_token());
  ASSERT_TRUE(again && again->ok);
  auto foreign =
      executor->execute(task(proto::TaskKind::kRevokeAccess, {{"user", "gpu-cccc"}}, "rnt_a"), noop,
                        stop_.get_token());
  ASSERT_TRUE(foreign && foreign->ok);
  EXPECT_EQ(foreign->message, "access revoked (0 login(s), 0 process(es) ended)");
  EXPECT_TRUE(fs::exists(dir_ / "ssh/users/gpu-cccc/principals"));
  EXPECT_EQ(slurp(log), "install gpu-aaaa rnt_a\nrevoke gpu-aaaa \nrevoke gpu-aaaa \n");
}

TEST_F(TaskExecutorTest, HooksReadAVersionedDocumentOnStandardInput) {
  std::string provision_in = (dir_ / "provision.json").string();
  std::string access_in = (dir_ / "access.json").string();
  auto executor = make_executor(
      {.access_root = dir_ / "ssh",
       .provision_hook = {script("provision", "cat > " + provision_in)},
       .access_hook = {script("access", "cat >> " + access_in + "; echo >> " + access_in)}},
      *backend_);
  auto noop = [](int, const std::string&) {};
  nlohmann::json payload{{"image_id", "img_7"}, {"gpu_indices", {2, 3}}, {"user", "gpu-aaaa"}};
  auto provisioned = executor->execute(task(proto::TaskKind::kProvision, payload, "rnt_a"), noop,
                                       stop_.get_token());
  ASSERT_TRUE(provisioned && provisioned->ok) << provisioned->message;
  auto doc = nlohmann::json::parse(slurp(provision_in));
  EXPECT_EQ(doc, (nlohmann::json{{"hook_version", 1},
                                 {"task_id", "tsk_0000000000000000000001"},
                                 {"kind", "provision"},
                                 {"rental_id", "rnt_a"},
                                 {"gpu_indices", {2, 3}},
                                 {"image_id", "img_7"},
                                 {"access_root", (dir_ / "ssh").string()},
                                 {"payload", payload}}));

  auto installed = executor->execute(task(proto::TaskKind::kInstallAccess, payload, "rnt_a"), noop,
                                     stop_.get_token());
  ASSERT_TRUE(installed && installed->ok) << installed->message;
  auto revoked =
      executor->execute(task(proto::TaskKind::kRevokeAccess, {{"user", "gpu-aaaa"}}, "rnt_a"), noop,
                        stop_.get_token());
  ASSERT_TRUE(revoked && revoked->ok) << revoked->message;
  std::istringstream lines(slurp(access_in));
  std::string install_line, revoke_line;
  std::getline(lines, install_line);
  std::getline(lines, revoke_line);
  auto install_doc = nlohmann::json::parse(install_line);
  EXPECT_EQ(install_doc["hook_version"], kHookInputVersion);
  EXPECT_EQ(install_doc["kind"], "install_access");
  EXPECT_EQ(install_doc["access"], (nlohmann::json{{"action", "install"}, {"user", "gpu-aaaa"}}));
  EXPECT_EQ(install_doc["payload"], payload);
  auto revoke_doc = nlohmann::json::parse(revoke_line);
  EXPECT_EQ(revoke_doc["access"], (nlohmann::json{{"action", "revoke"}, {"user", "gpu-aaaa"}}));
  EXPECT_EQ(revoke_doc["gpu_indices"], nlohmann::json::array());
  EXPECT_EQ(revoke_doc["image_id"], nullptr);

  // A task for the node itself has no rental.
  proto::Task node_task = task(proto::TaskKind::kWipe, nlohmann::json::object());
  node_task.rental_id.reset();
  auto doc2 = hook_input(node_task, "/etc/gpurent/ssh");
  EXPECT_EQ(doc2["rental_id"], nullptr);
  EXPECT_FALSE(doc2.contains("access"));
}

// Under the unit's UMask=0077 as under any other: folders 0755, files 0644 (root's, when the
// agent is root), so sshd, reading a login's files as that login, can.
TEST_F(TaskExecutorTest, AccessFilesAreReadableWhateverTheUmask) {
  fs::permissions(dir_, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                            fs::perms::others_read | fs::perms::others_exec);
  mode_t before = ::umask(0077);
  fs::path root = dir_ / "etc/gpurent/ssh";  // its parents made too
  std::string ed_cert = "ssh-ed25519-cert-v01@openssh.com AAAAIHNzaC1lZDI1NTE5 node=nod_a";
  try {
    install_access(root, access_grant_from("rnt_a", {{"user", "gpu-aaaa"},
                                                     {"principals", {"rnt_a"}},
                                                     {"authorized_keys", {kKey}},
                                                     {"user_ca_keys", {kKey}},
                                                     {"host_certificates", {ed_cert}}}));
  } catch (...) {
    ::umask(before);
    throw;
  }
  ::umask(before);
  auto mode = [](const fs::path& p) {
    struct stat st {};
    EXPECT_EQ(::stat(p.c_str(), &st), 0) << p;
    if (::geteuid() == 0) {
      EXPECT_EQ(st.st_uid, 0u) << p;
    }
    return st.st_mode & 07777;
  };
  for (const auto& d : {dir_ / "etc", dir_ / "etc/gpurent", root, root / "users",
                        root / "users/gpu-aaaa", root / "host_certificates"}) {
    EXPECT_EQ(mode(d), 0755u) << d;
  }
  for (const auto& f : {root / "users/gpu-aaaa/principals", root / "users/gpu-aaaa/authorized_keys",
                        root / "users/gpu-aaaa/rental", root / "trusted_user_ca_keys",
                        root / "host_certificates/ssh_host_ed25519_key-cert.pub"}) {
    EXPECT_EQ(mode(f), 0644u) << f;
  }
  EXPECT_EQ(sshd_access_problem(root), std::nullopt);

  // What sshd could not get through is named, the first on the way first.
  fs::permissions(root / "users/gpu-aaaa/principals",
                  fs::perms::owner_read | fs::perms::owner_write);
  EXPECT_EQ(sshd_access_problem(root),
            (root / "users/gpu-aaaa/principals").string() + " is mode 0600: others cannot read it");
  fs::permissions(root / "users/gpu-aaaa", fs::perms::owner_all);
  EXPECT_EQ(sshd_access_problem(root),
            (root / "users/gpu-aaaa").string() + " is mode 0700: others cannot search it");
  fs::permissions(dir_ / "etc", fs::perms::owner_all);
  EXPECT_EQ(sshd_access_problem(root),
            (dir_ / "etc").string() + " is mode 0700: others cannot search it");
  EXPECT_EQ(sshd_access_problem(dir_ / "etc/not-made-yet"),
            (dir_ / "etc").string() + " is mode 0700: others cannot search it");
  fs::permissions(dir_ / "etc", fs::perms::owner_all | fs::perms::others_exec);
  // A folder not made yet is made 0755 when needed: nothing in the way.
  EXPECT_EQ(sshd_access_problem(dir_ / "etc/not-made-yet/ssh"), std::nullopt);

  // Installing again puts the modes right.
  install_access(root, access_grant_from("rnt_a", {{"user", "gpu-aaaa"}}));
  EXPECT_EQ(mode(root / "users/gpu-aaaa"), 0755u);
}

// install_access reports the access ready only for a rental that could be used now: GPUs
// that pass the health probe and an sshd that answers (tests/e2e/sshd_login_e2etest.cpp
// shows the real sshd's banner taken).
TEST_F(TaskExecutorTest, AccessIsNotReadyWithoutHealthyGpusAndAnAnsweringSshd) {
  auto noop = [](int, const std::string&) {};
  auto install = [&](TaskExecutor& executor) {
    auto outcome =
        executor.execute(task(proto::TaskKind::kInstallAccess,
                              {{"user", "gpu-aaaa"}, {"principals", {"rnt_a"}}}, "rnt_a"),
                         noop, stop_.get_token());
    EXPECT_TRUE(outcome);
    return outcome.value_or(TaskOutcome{});
  };
  // Nothing listens on the port: the wait ends, and the task fails saying why.
  int closed_port = 0;
  {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
    socklen_t n = sizeof a;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &n);
    closed_port = ntohs(a.sin_port);
    ::close(fd);
  }
  std::string address = "127.0.0.1:" + std::to_string(closed_port);
  auto no_sshd = make_executor(
      {.access_root = dir_ / "ssh", .sshd_address = address, .sshd_wait = milliseconds(300)},
      *backend_);
  auto refused = install(*no_sshd);
  EXPECT_FALSE(refused.ok);
  EXPECT_EQ(refused.message, "sshd at " + address + " did not answer with an SSH banner");

  // A GPU slowed down for heat: not ready, whatever sshd does.
  auto hot = make_simulated_backend(
      {.faults = {
           {.kind = SimulatedFault::Kind::kThermalSlowdown, .at = milliseconds(0), .gpu = 2}}});
  hot->telemetry();
  auto unhealthy = make_executor({.access_root = dir_ / "ssh"}, *hot);
  auto sick = install(*unhealthy);
  EXPECT_FALSE(sick.ok);
  EXPECT_NE(sick.message.find("GPU health probe: health warning"), std::string::npos)
      << sick.message;

  // Healthy and no sshd to check (a simulated node): ready, and it says what was checked.
  auto fine = install(*make_executor({.access_root = dir_ / "ssh"}, *backend_));
  EXPECT_TRUE(fine.ok) << fine.message;
  EXPECT_EQ(fine.message, "access installed for gpu-aaaa; GPUs healthy");
}

// A process of `uid` running `command` with /bin/sh, as a login's SSH session would.
pid_t spawn_as(uid_t uid, const char* command) {
  pid_t pid = fork();
  if (pid == 0) {
    if (setgid(uid) != 0 || setuid(uid) != 0) _exit(126);
    execl("/bin/sh", "sh", "-c", command, static_cast<char*>(nullptr));
    _exit(127);
  }
  return pid;
}

// revoke_access and wipe end the rental's login for good before they report done: its files
// gone, then every process running as it killed, then the hook told which login to remove
// (here it records how many of the login's processes it still saw: none).
TEST_F(TaskExecutorTest, RevokingAndWipingEndEveryProcessOfTheLoginBeforeTheHook) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to make a login and run processes as it";
  char name[32];
  std::snprintf(name, sizeof name, "gpu-t%06x", static_cast<unsigned>(getpid()) & 0xffffff);
  const std::string login = name;
  auto made = run_subprocess({"useradd", "-M", "-p", "*", "-d", "/tmp", "-s", "/bin/sh", login});
  ASSERT_EQ(made.exit_code, 0) << made.output;
  struct Remove {
    std::string login;
    ~Remove() { run_subprocess({"userdel", "-f", login}); }
  } remove{login};
  auto uid = login_uid(login);
  ASSERT_TRUE(uid);

  std::string log = (dir_ / "hook.log").string();
  auto executor = make_executor(
      {.access_root = dir_ / "ssh",
       // Its live processes: the killed ones may be zombies until this test reaps them.
       .access_hook = {script("access",
                              "echo \"$GPURENT_ACCESS_ACTION $GPURENT_ACCESS_USER "
                              "$(ps -u $GPURENT_ACCESS_USER -o stat= | grep -cv ^Z)\""
                              " >> " +
                                  log)}},
      *backend_);
  auto noop = [](int, const std::string&) {};
  auto installed = executor->execute(
      task(proto::TaskKind::kInstallAccess, {{"user", login}, {"principals", {"rnt_a"}}}, "rnt_a"),
      noop, stop_.get_token());
  ASSERT_TRUE(installed && installed->ok) << installed->message;
  pid_t session = spawn_as(*uid, "sleep 30 & exec sleep 30");
  ASSERT_TRUE(wait_for([&] { return processes_of(*uid).size() == 2; }));

  auto revoked = executor->execute(task(proto::TaskKind::kRevokeAccess, {{"user", login}}, "rnt_a"),
                                   noop, stop_.get_token());
  ASSERT_TRUE(revoked && revoked->ok) << revoked->message;
  EXPECT_EQ(revoked->message, "access revoked (1 login(s), 2 process(es) ended)");
  EXPECT_EQ(revoked->result->at("processes_killed"), 2);
  EXPECT_TRUE(processes_of(*uid).empty());
  EXPECT_FALSE(fs::exists(dir_ / "ssh/users" / login));
  int st = 0;
  EXPECT_EQ(waitpid(session, &st, 0), session);

  // The wipe after it: the files are gone already, the payload names the login, and what
  // was started since is ended all the same.
  pid_t late = spawn_as(*uid, "exec sleep 30");
  ASSERT_TRUE(wait_for([&] { return processes_of(*uid).size() == 1; }));
  auto wiped = executor->execute(task(proto::TaskKind::kWipe, {{"user", login}}, "rnt_a"), noop,
                                 stop_.get_token());
  ASSERT_TRUE(wiped && wiped->ok) << wiped->message;
  EXPECT_EQ(wiped->result->at("processes_killed"), 1);
  EXPECT_EQ(waitpid(late, &st, 0), late);
  EXPECT_EQ(slurp(log),
            "install " + login + " 0\nrevoke " + login + " 0\nrevoke " + login + " 0\n");
}

TEST_F(TaskExecutorTest, WithoutHooksProvisioningIsSimulatedAndAWipeRemovesTheAccess) {
  auto executor = make_simulated_executor(
      {.access_root = dir_ / "ssh", .provision_delay = milliseconds(20)}, *backend_);
  auto noop = [](int, const std::string&) {};
  auto provisioned =
      executor->execute(task(proto::TaskKind::kProvision, {}), noop, stop_.get_token());
  ASSERT_TRUE(provisioned);
  EXPECT_TRUE(provisioned->ok);
  install_access(dir_ / "ssh",
                 access_grant_from("rnt_0000000000000000000001", {{"user", "gpu-cccc"}}));
  auto wiped = executor->execute(task(proto::TaskKind::kWipe, {}), noop, stop_.get_token());
  ASSERT_TRUE(wiped);
  EXPECT_TRUE(wiped->ok);
  EXPECT_FALSE(fs::exists(dir_ / "ssh/users/gpu-cccc"));
}

// A simulated node's burn-in prints what the real tools print, so the same parsers read it:
// eight healthy H100s measure alike; a slow-gpu fault shows in its GPU's Gflop/s, an
// nvlink-down fault in every pair of its GPU, and the node's NCCL bus bandwidth falls with it.
TEST_F(TaskExecutorTest, ASimulatedBurnInMeasuresTheNodeAndItsFaults) {
  auto noop = [](int, const std::string&) {};
  auto figures_of = [&](GpuBackend& backend) {
    auto executor = make_simulated_executor(
        {.access_root = dir_ / "ssh", .provision_delay = milliseconds(10)}, backend);
    auto out = executor->execute(task(proto::TaskKind::kBurnIn, {{"phase", "handover"}}), noop,
                                 stop_.get_token());
    EXPECT_TRUE(out && out->ok);
    EXPECT_EQ(out->message,
              "burn-in: measured with gpu_burn, nvbandwidth, dcgmproftester, nvlink, nccl")
        << out->result.value_or(nlohmann::json()).dump();
    return burn_in::figures_from_json(out->result.value());
  };
  auto healthy = figures_of(*backend_);
  EXPECT_TRUE(healthy.problems.empty());
  ASSERT_EQ(healthy.gpus.size(), 8u);
  ASSERT_EQ(healthy.links.size(), 28u);
  for (const auto& l : healthy.links) EXPECT_NEAR(l.gbps, 395, 1);  // NV18 at 0.878
  EXPECT_GT(healthy.nccl_bus_gbps.value_or(0), 440);

  auto faulty_backend = make_simulated_backend(
      {.faults = parse_fault_schedule("slow-gpu@0s:gpu3,nvlink-down@0s:gpu1")});
  auto faulty = figures_of(*faulty_backend);
  EXPECT_LT(*faulty.gpus[3].gflops, 0.5 * *healthy.gpus[3].gflops);
  EXPECT_EQ(faulty.gpus[2].gflops, healthy.gpus[2].gflops);
  for (const auto& l : faulty.links) {
    bool gpu1 = l.a == 1 || l.b == 1;
    EXPECT_EQ(l.gbps < 100, gpu1) << l.a << "-" << l.b << " " << l.gbps;
  }
  EXPECT_LT(faulty.nccl_bus_gbps.value_or(1e9), 100);
}

// With a burn-in hook the agent runs it with a folder to write the tools' outputs in, reads
// whichever it wrote with the same parsers as `gpurent-agent burn-in --from`, and reports the
// figures; a hook that fails fails the task with its last line, and the folder is gone after.
TEST_F(TaskExecutorTest, TheBurnInHookWritesTheToolsOutputsAndTheAgentReportsTheirFigures) {
  auto noop = [](int, const std::string&) {};
  std::string hook =
      script("burn-in",
             "echo 'progress 10 gpu_burn'\n"
             "printf 'GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-1)\\n"
             "100.0%%  proc'\"'\"'d: 9000 (50123 Gflop/s)   errors: 0   temps: 60 C \\n"
             "\\nTested 1 GPUs:\\n\\tGPU 0: OK\\n' > \"$GPURENT_BURN_IN_DIR/gpu_burn.txt\"\n"
             "echo \"$GPURENT_BURN_IN_DIR\" > " +
                 (dir_ / "seen-dir").string());
  std::vector<int> progress;
  auto executor = make_executor({.access_root = dir_ / "ssh",
                                 .burn_in_hook = {hook},
                                 .burn_in_timeout = std::chrono::seconds(20)},
                                *backend_);
  auto out = executor->execute(
      task(proto::TaskKind::kBurnIn, {{"phase", "release"}}),
      [&](int p, const std::string&) { progress.push_back(p); }, stop_.get_token());
  ASSERT_TRUE(out);
  EXPECT_TRUE(out->ok) << out->message;
  auto f = burn_in::figures_from_json(out->result.value());
  ASSERT_EQ(f.gpus.size(), 1u);
  EXPECT_EQ(f.gpus[0].gflops, 50123);
  EXPECT_EQ(f.gpus[0].burn_ok, true);
  EXPECT_EQ(f.tools, std::vector<std::string>{"gpu_burn"});
  EXPECT_EQ(progress, (std::vector<int>{0, 10, 100}));
  std::string seen = slurp(dir_ / "seen-dir");
  ASSERT_FALSE(seen.empty());
  EXPECT_FALSE(fs::exists(seen.substr(0, seen.size() - 1))) << "the folder is removed";

  auto failing =
      make_executor({.access_root = dir_ / "ssh",
                     .burn_in_hook = {script("broken", "echo 'dcgmi: no GPUs'; exit 3")}},
                    *backend_);
  auto broke = failing->execute(task(proto::TaskKind::kBurnIn, {}), noop, stop_.get_token());
  ASSERT_TRUE(broke);
  EXPECT_FALSE(broke->ok);
  EXPECT_NE(broke->message.find("burn-in hook exited with 3"), std::string::npos) << broke->message;
}

const std::string kNoticeId = "ntc_0000000000000000000042";

nlohmann::json notice_payload(const std::string& login) {
  return {{"notice",
           {{"id", kNoticeId},
            {"kind", "maintenance"},
            {"message", "firmware update"},
            {"starts_at", "2099-01-10T08:00:00Z"},
            {"ends_at", "2099-01-10T10:00:00Z"},
            {"respond_by", nullptr}}},
          {"login", login}};
}

// Who a checkpoint can run as here: nobody when the tests are root (root is refused), the
// tests' own user otherwise.
std::string checkpoint_login() {
  if (::geteuid() == 0) return "nobody";
  passwd* pw = ::getpwuid(::geteuid());
  return pw ? pw->pw_name : "";
}

// The notice lands in the notice file, then the rental's checkpoint command runs as its login
// with the notice in its environment; what it did is the task's result.
TEST_F(TaskExecutorTest, ANoticeIsWrittenThenTheCheckpointRunsAsTheLogin) {
  fs::permissions(dir_, fs::perms::all);  // the login writes here
  fs::path notice_file = dir_ / "run/notice.json";
  auto executor =
      make_executor({.access_root = dir_ / "ssh", .notice_file = notice_file}, *backend_);
  auto payload = notice_payload(checkpoint_login());
  std::string seen = (dir_ / "seen").string();
  payload["checkpoint_command"] =
      "echo \"$(id -un) $GPURENT_NOTICE_ID $GPURENT_NOTICE_KIND\" > " + seen + "; echo saved";
  payload["checkpoint_timeout_s"] = 30;
  auto noop = [](int, const std::string&) {};
  auto out = executor->execute(task(proto::TaskKind::kNotice, payload), noop, stop_.get_token());
  ASSERT_TRUE(out);
  EXPECT_TRUE(out->ok) << out->message;
  EXPECT_EQ(out->message.rfind("notice " + kNoticeId + " written; checkpoint exited 0 after ", 0),
            0u)
      << out->message;
  EXPECT_EQ(slurp(seen), checkpoint_login() + " " + kNoticeId + " maintenance\n");
  const auto& result = out->result.value();
  EXPECT_EQ(result["notice_file"], notice_file.string());
  EXPECT_EQ(result["checkpoint"]["ran"], true);
  EXPECT_EQ(result["checkpoint"]["exit_code"], 0);
  EXPECT_EQ(result["checkpoint"]["output_tail"], "saved\n");
  auto notices = read_notice_file(notice_file);
  ASSERT_EQ(notices.size(), 1u);
  EXPECT_EQ(notices[0].id, kNoticeId);
  EXPECT_EQ(notices[0].message, "firmware update");

  // Without a command, or for a login the node has not, the notice is delivered all the same.
  auto plain = executor->execute(task(proto::TaskKind::kNotice, notice_payload("gpu-aaaa")), noop,
                                 stop_.get_token());
  ASSERT_TRUE(plain && plain->ok) << plain->message;
  EXPECT_EQ(plain->message,
            "notice " + kNoticeId + " written; checkpoint skipped: no checkpoint command");
  EXPECT_EQ(plain->result.value()["checkpoint"]["ran"], false);
  auto missing = notice_payload("gpu-nosuchlogin");
  missing["checkpoint_command"] = "touch " + (dir_ / "ran").string();
  auto skipped =
      executor->execute(task(proto::TaskKind::kNotice, missing), noop, stop_.get_token());
  ASSERT_TRUE(skipped && skipped->ok) << skipped->message;
  EXPECT_EQ(skipped->result.value()["checkpoint"]["skipped"],
            "no login gpu-nosuchlogin on this node");
  EXPECT_FALSE(fs::exists(dir_ / "ran"));

  // A login another rental's access files name is never run as.
  install_access(dir_ / "ssh", access_grant_from("rnt_other", {{"user", "gpu-bbbb"}}));
  auto foreign = notice_payload("gpu-bbbb");
  foreign["checkpoint_command"] = "true";
  auto refused =
      executor->execute(task(proto::TaskKind::kNotice, foreign), noop, stop_.get_token());
  ASSERT_TRUE(refused && refused->ok) << refused->message;
  EXPECT_EQ(refused->result.value()["checkpoint"]["skipped"],
            "login gpu-bbbb belongs to another rental");
}

TEST_F(TaskExecutorTest, AMalformedNoticeFailsTheTaskSayingWhy) {
  auto executor =
      make_executor({.access_root = dir_ / "ssh", .notice_file = dir_ / "notice.json"}, *backend_);
  auto noop = [](int, const std::string&) {};
  auto with = [](const char* field, const nlohmann::json& value) {
    auto p = notice_payload("gpu-aaaa");
    p["checkpoint_command"] = "true";
    p[field] = value;
    return p;
  };
  auto bad_kind = notice_payload("gpu-aaaa");
  bad_kind["notice"]["kind"] = "outage";
  auto bad_time = notice_payload("gpu-aaaa");
  bad_time["notice"]["starts_at"] = "next tuesday";
  auto no_login = notice_payload("gpu-aaaa");
  no_login.erase("login");
  no_login["checkpoint_command"] = "true";
  const std::pair<nlohmann::json, std::string> cases[] = {
      {nlohmann::json::object(), "notice: notice is required"},
      {{{"notice", "ntc_0000000000000000000042"}}, "notice: notice must be an object"},
      {bad_kind, "notice: notice.kind must be maintenance, fault or moved"},
      {bad_time, "notice: notice.starts_at must be an RFC 3339 time"},
      {with("login", "root\nx"), "notice: login must be a login name"},
      {with("login", 0), "notice: login must be a login name"},
      {with("checkpoint_command", 5), "notice: checkpoint_command must be a string"},
      {with("checkpoint_command", std::string(9000, 'x')), "notice: checkpoint_command must be"},
      {with("checkpoint_timeout_s", 0), "notice: checkpoint_timeout_s must be"},
      {with("checkpoint_timeout_s", 86401), "notice: checkpoint_timeout_s must be"},
      {with("checkpoint_timeout_s", "600"), "notice: checkpoint_timeout_s must be"},
      {with("checkpoint_timeout_s", 1.5), "notice: checkpoint_timeout_s must be"},
      {with("checkpoint_timeout_s", 18446744073709551615ull), "notice: checkpoint_timeout_s"},
      {no_login, "notice: login is required with a checkpoint_command"},
  };
  for (const auto& [payload, expected] : cases) {
    auto out = executor->execute(task(proto::TaskKind::kNotice, payload), noop, stop_.get_token());
    ASSERT_TRUE(out) << payload.dump();
    EXPECT_FALSE(out->ok) << payload.dump();
    EXPECT_EQ(out->message.rfind(expected, 0), 0u) << out->message << " for " << payload.dump();
  }
  EXPECT_FALSE(fs::exists(dir_ / "notice.json")) << "nothing malformed is written";

  // A null command is none, the timeout's default holds.
  auto nulls = notice_payload("gpu-aaaa");
  nulls["checkpoint_command"] = nullptr;
  nulls["checkpoint_timeout_s"] = nullptr;
  auto out = executor->execute(task(proto::TaskKind::kNotice, nulls), noop, stop_.get_token());
  ASSERT_TRUE(out);
  EXPECT_TRUE(out->ok) << out->message;
}

TEST_F(TaskExecutorTest, ASimulatedNodeTakesNoticesButRunsNoCheckpoint) {
  auto noop = [](int, const std::string&) {};
  auto payload = notice_payload(checkpoint_login());
  payload["checkpoint_command"] = "touch " + (dir_ / "ran").string();
  auto with_file = make_simulated_executor(
      {.access_root = dir_ / "ssh", .notice_file = dir_ / "notice.json"}, *backend_);
  auto out = with_file->execute(task(proto::TaskKind::kNotice, payload), noop, stop_.get_token());
  ASSERT_TRUE(out && out->ok) << out->message;
  EXPECT_EQ(out->message, "notice " + kNoticeId +
                              " written; checkpoint skipped: this node runs no checkpoint "
                              "commands (simulated)");
  EXPECT_EQ(read_notice_file(dir_ / "notice.json").size(), 1u);
  EXPECT_FALSE(fs::exists(dir_ / "ran"));

  auto without = make_simulated_executor({.access_root = dir_ / "ssh"}, *backend_);
  out = without->execute(task(proto::TaskKind::kNotice, payload), noop, stop_.get_token());
  ASSERT_TRUE(out && out->ok) << out->message;
  EXPECT_EQ(out->message.rfind("notice " + kNoticeId + " delivered (no notice file)", 0), 0u);
  EXPECT_EQ(out->result.value()["notice_file"], nullptr);
}

TEST_F(TaskExecutorTest, ASimulatedRebootWaitsItsDelay) {
  auto noop = [](int, const std::string&) {};
  auto executor = make_simulated_executor(
      {.access_root = dir_ / "ssh", .reboot_delay = milliseconds(50)}, *backend_);
  auto started = steady_clock::now();
  auto out = executor->execute(task(proto::TaskKind::kReboot, nlohmann::json::object()), noop,
                               stop_.get_token());
  ASSERT_TRUE(out);
  EXPECT_TRUE(out->ok);
  EXPECT_EQ(out->message, "simulated reboot");
  EXPECT_GE(steady_clock::now() - started, milliseconds(50));

  // Stopping the agent leaves it unfinished.
  auto slow = make_simulated_executor(
      {.access_root = dir_ / "ssh", .reboot_delay = std::chrono::seconds(30)}, *backend_);
  stop_.request_stop();
  EXPECT_FALSE(slow->execute(task(proto::TaskKind::kReboot, nlohmann::json::object()), noop,
                             stop_.get_token()));
}

class RebootTest : public TaskExecutorTest {
 protected:
  void SetUp() override {
    TaskExecutorTest::SetUp();
    std::ofstream(dir_ / "boot_id") << "boot-before\n";
  }
  ExecutorOptions options(std::vector<std::string> hook, RebootNotes* notes) const {
    return {.access_root = dir_ / "ssh",
            .reboot_hook = std::move(hook),
            .reboot_timeout = std::chrono::seconds(20),
            .reboot_settle = milliseconds(0),
            .reboot_notes = notes,
            .boot_id_file = dir_ / "boot_id"};
  }
  std::optional<TaskOutcome> reboot(TaskExecutor& executor) {
    return executor.execute(
        task(proto::TaskKind::kReboot, nlohmann::json::object()), [](int, const std::string&) {},
        stop_.get_token());
  }
};

// The hook's status is the task's when the node did not go down; the journal has the boot
// the reboot started in before the hook runs.
TEST_F(RebootTest, TheHooksStatusDecidesWhenTheNodeStaysUp) {
  TaskJournal journal(dir_ / "tasks.json", 10, "boot-before");
  journal.begin("tsk_0000000000000000000001");
  std::string seen = (dir_ / "seen").string();
  auto hook = script("reboot", "echo \"$GPURENT_TASK_KIND $GPURENT_BOOT_ID\" > " + seen + "\n" +
                                   "grep -c reboot_boot_id " + (dir_ / "tasks.json").string() +
                                   " >> " + seen);
  auto ok = reboot(*make_executor(options({hook}, &journal), *backend_));
  ASSERT_TRUE(ok);
  EXPECT_TRUE(ok->ok) << ok->message;
  EXPECT_EQ(ok->message, "reboot requested: the reboot hook exited 0");
  EXPECT_EQ(ok->result.value()["boot_id_before"], "boot-before");
  EXPECT_EQ(slurp(seen), "reboot boot-before\n1\n") << "noted before the hook ran";

  auto yes = reboot(*make_executor(options({"true"}, nullptr), *backend_));
  ASSERT_TRUE(yes);
  EXPECT_TRUE(yes->ok) << yes->message;
  auto no = reboot(*make_executor(options({"false"}, nullptr), *backend_));
  ASSERT_TRUE(no);
  EXPECT_FALSE(no->ok);
  EXPECT_EQ(no->message, "reboot hook exited with 1");
}

// `systemctl reboot` returns at once and the shutdown then stops the agent: a stop while the
// task waits for the node to go down leaves it unfinished, for the journal to report.
TEST_F(RebootTest, AStopAfterTheHookLeavesTheTaskToTheJournal) {
  auto o = options({"true"}, nullptr);
  o.reboot_settle = std::chrono::seconds(30);
  auto executor = make_executor(o, *backend_);
  std::thread stopper([this] {
    std::this_thread::sleep_for(milliseconds(200));
    stop_.request_stop();
  });
  auto started = steady_clock::now();
  auto out = reboot(*executor);
  stopper.join();
  EXPECT_FALSE(out) << out->message;
  EXPECT_LT(steady_clock::now() - started, std::chrono::seconds(5));
}

// After the restart, a reboot task the agent did not finish succeeded if the boot id
// changed, and was interrupted if the node never rebooted.
TEST_F(RebootTest, AfterTheRestartAChangedBootIdIsAReboot) {
  const std::string id = "tsk_0000000000000000000001";
  for (const auto& [after, ok] :
       {std::pair<std::string, bool>{"boot-after", true}, {"boot-before", false}}) {
    fs::path file = dir_ / ("tasks-" + after + ".json");
    {
      TaskJournal journal(file, 10, "boot-before");
      journal.begin(id);
      auto executor = make_executor(options({script("hang", "sleep 30")}, &journal), *backend_);
      std::stop_source stop;
      std::thread stopper([&] {
        std::this_thread::sleep_for(milliseconds(200));
        stop.request_stop();
      });
      auto out = executor->execute(
          task(proto::TaskKind::kReboot, nlohmann::json::object()), [](int, const std::string&) {},
          stop.get_token());
      stopper.join();
      ASSERT_FALSE(out) << "the agent stopped while the hook ran";
      EXPECT_EQ(journal.seen(id), TaskJournal::Seen::kRunning);
    }
    TaskJournal restarted(file, 10, after);
    auto result = restarted.result_of(id);
    ASSERT_TRUE(result);
    EXPECT_EQ(result->ok, ok) << result->message;
    if (ok) {
      EXPECT_EQ(result->message, "rebooted: boot id changed");
      EXPECT_EQ(result->result.value(),
                (nlohmann::json{{"boot_id_before", "boot-before"}, {"boot_id_after", after}}));
    } else {
      EXPECT_NE(result->message.find("did not reboot"), std::string::npos) << result->message;
    }
    EXPECT_EQ(restarted.unacked_results().size(), 1u) << "sent on the next connection";
  }
}

TEST_F(RebootTest, AnUnknownBootIdProvesNothing) {
  EXPECT_EQ(read_boot_id(dir_ / "boot_id"), "boot-before");
  EXPECT_EQ(read_boot_id(dir_ / "missing"), "");
  EXPECT_FALSE(read_boot_id().empty()) << "this machine's own, from /proc";
  const std::string id = "tsk_0000000000000000000001";
  {
    TaskJournal journal(dir_ / "tasks.json", 10, "");
    journal.begin(id);
    journal.reboot_started(id, "");  // the node's boot id could not be read
  }
  TaskJournal restarted(dir_ / "tasks.json", 10, "boot-after");
  auto result = restarted.result_of(id);
  ASSERT_TRUE(result);
  EXPECT_FALSE(result->ok);
  EXPECT_EQ(result->message, "interrupted: the agent stopped while the task ran");
}

}  // namespace gpurent::agent::task_executor_test
