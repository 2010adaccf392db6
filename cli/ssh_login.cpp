// `gpurent ssh`. The key is made for this login only and lives in a private temporary
// folder; the certificate is valid for the rental's period and principal only. ssh runs as
// a child rather than replacing this process, so the private key can be removed when it
// ends (with --print the folder stays, since the printed command needs it).
#include "cli/ssh_login.h"

#include "cli/exit_codes.h"

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace gpurent::cli {
namespace {

using nlohmann::json;

// Runs argv to completion, its output discarded unless it fails; its exit status or -1.
int run_quiet(const std::vector<std::string>& argv, std::string* output) {
  int pipefd[2];
  if (pipe(pipefd) != 0) return -1;
  pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    dup2(pipefd[1], STDOUT_FILENO);
    dup2(pipefd[1], STDERR_FILENO);
    close(pipefd[0]);
    close(pipefd[1]);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execvp(args[0], args.data());
    _exit(127);
  }
  close(pipefd[1]);
  char buf[4096];
  for (ssize_t n; (n = read(pipefd[0], buf, sizeof buf)) > 0;) output->append(buf, n);
  close(pipefd[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string make_private_dir() {
  std::string base = "/tmp";
  if (const char* t = std::getenv("TMPDIR"); t && *t) base = t;
  std::string pattern = base + "/gpurent-ssh-XXXXXX";
  if (!mkdtemp(pattern.data())) {
    throw std::runtime_error("cannot make a private folder in " + base + ": " +
                             std::strerror(errno));
  }
  return pattern;  // mkdtemp makes it 0700
}

void write_private(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::trunc);
  out << text;
  out.close();
  if (!out) throw std::runtime_error("cannot write " + path);
  chmod(path.c_str(), 0600);
}

}  // namespace

std::string shell_quote(const std::string& arg) {
  bool plain = !arg.empty() && arg.find_first_not_of(
                                   "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
                                   "@%+=:,./_-") == std::string::npos;
  if (plain) return arg;
  std::string out = "'";
  for (char c : arg) {
    if (c == '\'')
      out += "'\\''";
    else
      out += c;
  }
  return out + "'";
}

std::vector<std::string> ssh_argv(const json& ssh, const std::string& dir,
                                  const std::vector<std::string>& extra) {
  std::vector<std::string> argv{
      "ssh", "-i", dir + "/id_ed25519", "-o", "CertificateFile=" + dir + "/id_ed25519-cert.pub",
      "-o", "UserKnownHostsFile=" + dir + "/known_hosts", "-o", "StrictHostKeyChecking=yes",
      // Only this key: keys in an agent would use up the server's
      // authentication attempts before it.
      "-o", "IdentitiesOnly=yes", "-p", std::to_string(ssh.value("port", 22)),
      ssh.value("user", "") + "@" + ssh.value("host", "")};
  argv.insert(argv.end(), extra.begin(), extra.end());
  return argv;
}

int run_ssh(CommandContext& ctx) {
  const std::string id = ctx.args.positionals[0];
  json rental = ctx.api.get("/v1/rentals/" + url_encode(id)).json();
  const json ssh = rental.value("ssh", json());
  if (!ssh.is_object()) {
    ctx.err << "gpurent: " << id << " is " << rental.value("state", "")
            << ", not active: there is nothing to log in to yet (gpurent wait " << id << ")\n";
    return kExitApiError;
  }
  std::string dir = make_private_dir();
  // The folder holds a private key: removed on every way out, unless --print succeeded.
  struct Cleanup {
    std::string dir;
    bool keep = false;
    ~Cleanup() {
      std::error_code ec;
      if (!keep) std::filesystem::remove_all(dir, ec);
    }
  } cleanup{dir};

  std::string output;
  int made = run_quiet({"ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "gpurent-" + id, "-f",
                        dir + "/id_ed25519"},
                       &output);
  if (made != 0) {
    ctx.err << "gpurent: ssh-keygen failed (is OpenSSH's client installed?): " << output << "\n";
    return kExitApiError;
  }
  std::ifstream pub(dir + "/id_ed25519.pub");
  std::string public_key;
  std::getline(pub, public_key);
  json cert =
      ctx.api
          .post("/v1/rentals/" + url_encode(id) + "/ssh-certificate", {{"public_key", public_key}})
          .json();
  write_private(dir + "/id_ed25519-cert.pub", cert.value("certificate", "") + "\n");
  std::string known_hosts;
  for (const auto& line : ssh.value("known_hosts", json::array())) {
    known_hosts += line.get<std::string>() + "\n";
  }
  write_private(dir + "/known_hosts", known_hosts);

  auto argv = ssh_argv(ssh, dir, ctx.args.passthrough);
  if (ctx.args.has("print")) {
    cleanup.keep = true;
    if (ctx.json) {
      ctx.out << json{{"argv", argv},
                      {"dir", dir},
                      {"valid_before", cert.value("valid_before", json())}}
                     .dump(2)
              << "\n";
    } else {
      std::string line;
      for (const auto& a : argv) line += (line.empty() ? "" : " ") + shell_quote(a);
      ctx.out << line << "\n";
    }
    ctx.err << "The key and certificate are in " << dir << " (valid until "
            << cert.value("valid_before", "") << "); remove the folder when done.\n";
    return kExitOk;
  }

  ctx.out.flush();
  ctx.err.flush();
  // Like a shell running a foreground job: ^C and ^\ are for ssh, not for the waiting CLI.
  struct sigaction ignore {
  }, old_int{}, old_quit{};
  ignore.sa_handler = SIG_IGN;
  sigaction(SIGINT, &ignore, &old_int);
  sigaction(SIGQUIT, &ignore, &old_quit);
  pid_t pid = fork();
  if (pid == 0) {
    sigaction(SIGINT, &old_int, nullptr);
    sigaction(SIGQUIT, &old_quit, nullptr);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execvp("ssh", args.data());
    std::fprintf(stderr, "gpurent: cannot run ssh: %s\n", std::strerror(errno));
    _exit(127);
  }
  int status = 0;
  if (pid > 0) {
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
  }
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGQUIT, &old_quit, nullptr);
  if (pid < 0) {
    ctx.err << "gpurent: cannot start ssh: " << std::strerror(errno) << "\n";
    return kExitApiError;
  }
  // ssh's own status: the remote command's, or 255 for ssh's errors.
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return 128 + WTERMSIG(status);
}

}  // namespace gpurent::cli
