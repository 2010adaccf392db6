// PgFaultProxy: one acceptor thread, one relay thread per client connection over poll(2).
#include "tests/support/pg_fault_proxy.h"

#include <pqxx/pqxx>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <map>
#include <stdexcept>

namespace gpurent::testing {
namespace {

using Clock = std::chrono::steady_clock;

// Startup-phase request codes (PostgreSQL protocol, "Message Formats").
constexpr uint32_t kSslRequest = 80877103;
constexpr uint32_t kGssEncRequest = 80877104;
constexpr uint32_t kCancelRequest = 80877102;
constexpr size_t kMaxMessage = 64 << 20;

uint32_t read_u32(const char* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return ntohl(v);
}

void set_nonblocking(int fd) {
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

// A C string at `pos` inside a message body; advances past its terminator.
std::string c_string(const std::string& body, size_t& pos) {
  size_t end = body.find('\0', pos);
  if (end == std::string::npos) end = body.size();
  std::string s = body.substr(pos, end - pos);
  pos = end + 1;
  return s;
}

bool starts_with_ci(const std::string& text, const std::string& prefix) {
  size_t i = 0;
  while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
  if (text.size() - i < prefix.size()) return false;
  for (size_t k = 0; k < prefix.size(); ++k) {
    if (std::tolower(static_cast<unsigned char>(text[i + k])) !=
        std::tolower(static_cast<unsigned char>(prefix[k])))
      return false;
  }
  return true;
}

bool matches(const PgMatch& m, char type, const std::string& text, const std::string& statement) {
  switch (m.kind) {
    case PgMatch::Kind::kQuery:
      return type == 'Q' && starts_with_ci(text, m.text);
    case PgMatch::Kind::kStatement:
      return type == 'B' && statement == m.text;
    case PgMatch::Kind::kBoundSql:
      return type == 'B' && starts_with_ci(text, m.text);
  }
  return false;
}

int connect_upstream(const std::string& host, int port) {
  if (!host.empty() && host[0] == '/') {
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::string path = host + "/.s.PGSQL." + std::to_string(port);
    if (path.size() >= sizeof(addr.sun_path)) return -1;
    std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) close_fd(fd);
    return fd;
  }
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (getaddrinfo(host.empty() ? "localhost" : host.c_str(), std::to_string(port).c_str(), &hints,
                  &res) != 0)
    return -1;
  int fd = -1;
  for (addrinfo* a = res; a && fd < 0; a = a->ai_next) {
    fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd >= 0 && connect(fd, a->ai_addr, a->ai_addrlen) != 0) close_fd(fd);
  }
  freeaddrinfo(res);
  return fd;
}

// Writes all of `data` to a non-blocking socket, waiting up to 10 s for room.
bool write_all(int fd, std::string& data) {
  auto deadline = Clock::now() + std::chrono::seconds(10);
  while (!data.empty()) {
    ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n > 0) {
      data.erase(0, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) && Clock::now() < deadline) {
      pollfd p{fd, POLLOUT, 0};
      poll(&p, 1, 100);
      continue;
    }
    data.clear();
    return false;
  }
  return true;
}

// An ErrorResponse as the server sends one when it refuses a connection.
std::string fatal_message(const std::string& sqlstate, const std::string& text) {
  std::string body;
  for (auto [field, value] :
       {std::pair<char, std::string>{'S', "FATAL"}, {'V', "FATAL"}, {'C', sqlstate}, {'M', text}}) {
    body += field;
    body += value;
    body += '\0';
  }
  body += '\0';
  uint32_t len = htonl(static_cast<uint32_t>(body.size() + 4));
  std::string msg(1, 'E');
  msg.append(reinterpret_cast<const char*>(&len), 4);
  return msg + body;
}

}  // namespace

struct PgFaultProxy::Session {
  PgFaultProxy* proxy;
  int client = -1;
  int server = -1;
  int kill = -1;  // eventfd: cut_all() and the destructor
  std::atomic<bool> finished{false};
  std::thread thread;

  std::string from_client, from_server, to_client, to_server;
  bool started = false;  // the StartupMessage went to the server
  bool raw = false;      // a CancelRequest connection, relayed unparsed
  bool server_unwritable = false;
  int backend_pid = 0;
  std::map<std::string, std::string> statements;   // prepared name -> SQL, from Parse
  std::map<std::string, int> stalled_at_parse;     // statement -> the stall rule fired at its Parse
  std::vector<PgFaultProxy::Message> transaction;  // sent since the last BEGIN
  // Answers are counted by the ReadyForQuery that ends each: the startup, every simple query,
  // every Sync and function call asks for one. A backend message belongs to answer
  // answers_done + 1.
  int64_t answers_asked = 0;
  int64_t answers_done = 0;

  enum class Pending { kNone, kCut, kRelease };
  Pending pending = Pending::kNone;
  int64_t pending_answer = 0;
  Clock::time_point pending_deadline;
  std::unique_ptr<pqxx::connection> lock_conn;
  std::unique_ptr<pqxx::work> lock_tx;

  Session(PgFaultProxy* p, int fd) : proxy(p), client(fd), kill(eventfd(0, EFD_CLOEXEC)) {
    set_nonblocking(client);
  }
  ~Session() {
    close_fd(client);
    close_fd(server);
    close_fd(kill);
  }

  void run() {
    try {
      relay();
    } catch (const std::exception&) {
      // A broken relay ends the connection, as a network fault would; nothing else to do.
    }
    release_lock();
    close_server();
    close_client();
    finished = true;
  }

  void close_server() {
    if (server >= 0) shutdown(server, SHUT_RDWR);
    close_fd(server);
  }

  // Reads what the client sent first so that the close is a FIN, not a reset that could
  // discard bytes already on their way to it.
  void close_client() {
    if (client < 0) return;
    write_all(client, to_client);
    char buf[4096];
    while (::recv(client, buf, sizeof buf, MSG_DONTWAIT) > 0) {
    }
    shutdown(client, SHUT_RDWR);
    close_fd(client);
  }

  // Waits until the backend has left pg_stat_activity: by then its transaction is aborted and
  // its locks released (PostgreSQL aborts in a before_shmem_exit callback, and clears the
  // activity entry later, on shmem exit).
  void wait_backend_gone() {
    if (backend_pid == 0) return;
    try {
      pqxx::connection conn(proxy->upstream_url());
      pqxx::nontransaction tx(conn);
      auto deadline = Clock::now() + std::chrono::seconds(10);
      while (Clock::now() < deadline) {
        auto r =
            tx.exec_params("SELECT count(*) FROM pg_stat_activity WHERE pid = $1", backend_pid);
        if (r[0][0].as<int>() == 0) return;
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
    } catch (const std::exception&) {
      // The database itself is unreachable: no backend of it is left to wait for.
    }
  }

  void cut() {
    if (server >= 0 && !server_unwritable) write_all(server, to_server);
    close_server();
    wait_backend_gone();
    to_client.clear();
    close_client();
  }

  void release_lock() {
    lock_tx.reset();  // rolls back, releasing the lock
    lock_conn.reset();
  }

  void relay() {
    for (;;) {
      pollfd fds[3] = {
          {client, static_cast<short>(POLLIN | (to_client.empty() ? 0 : POLLOUT)), 0},
          {server,
           static_cast<short>(POLLIN | (to_server.empty() || server_unwritable ? 0 : POLLOUT)), 0},
          {kill, POLLIN, 0}};
      int timeout = -1;
      if (pending != Pending::kNone) {
        auto left =
            std::chrono::duration_cast<std::chrono::milliseconds>(pending_deadline - Clock::now());
        timeout = static_cast<int>(std::max<int64_t>(0, left.count()));
      }
      if (poll(fds, 3, timeout) < 0) {
        if (errno == EINTR) continue;
        return;
      }
      if (fds[2].revents) {
        cut();
        return;
      }
      if (pending != Pending::kNone && Clock::now() >= pending_deadline) {
        if (pending == Pending::kCut) {
          cut();
          return;
        }
        release_lock();
        pending = Pending::kNone;
      }
      if ((fds[0].revents & POLLOUT) && !send_some(client, to_client)) return;
      if ((fds[1].revents & POLLOUT) && !send_some(server, to_server)) {
        server_unwritable = true;  // it is gone; what it said last may still be read
        to_server.clear();
      }
      if (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) {
        if (!receive(client, from_client)) {
          if (server >= 0 && !server_unwritable) write_all(server, to_server);
          return;
        }
        if (!on_client_bytes()) return;
      }
      if (server >= 0 && (fds[1].revents & (POLLIN | POLLHUP | POLLERR))) {
        if (!receive(server, from_server)) {
          // The backend ended (e.g. terminated): the client gets all it said, then the end.
          on_server_bytes();
          return;
        }
        if (!on_server_bytes()) return;
      }
    }
  }

  static bool send_some(int fd, std::string& data) {
    ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n > 0) data.erase(0, static_cast<size_t>(n));
    return n > 0 || (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR));
  }

  // False at end of stream or on an error.
  static bool receive(int fd, std::string& into) {
    char buf[16384];
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n > 0) {
      into.append(buf, static_cast<size_t>(n));
      return true;
    }
    return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR);
  }

  // False when the connection is over.
  bool on_client_bytes() {
    if (raw) {
      to_server += from_client;
      from_client.clear();
      return true;
    }
    while (!started) {
      if (from_client.size() < 8) return true;
      uint32_t len = read_u32(from_client.data());
      if (len < 8 || len > 10000) return false;
      if (from_client.size() < len) return true;
      uint32_t code = read_u32(from_client.data() + 4);
      std::string packet = from_client.substr(0, len);
      from_client.erase(0, len);
      if (code == kSslRequest || code == kGssEncRequest) {
        to_client += 'N';  // no encryption: libpq goes on in the clear
        continue;
      }
      if (proxy->refusal() == PgRefusal::kStartingUp && code != kCancelRequest) {
        to_client += fatal_message("57P03", "the database system is starting up");
        return false;
      }
      server = connect_upstream(proxy->upstream_host(), proxy->upstream_port());
      if (server < 0) return false;
      set_nonblocking(server);
      to_server += packet;
      if (code == kCancelRequest) {
        raw = true;
        to_server += from_client;
        from_client.clear();
        return true;
      }
      started = true;
      answers_asked = 1;
    }
    while (from_client.size() >= 5) {
      uint32_t len = read_u32(from_client.data() + 1);
      if (len < 4 || len > kMaxMessage) return false;
      if (from_client.size() < len + 1) return true;
      std::string message = from_client.substr(0, len + 1);
      from_client.erase(0, len + 1);
      if (!on_client_message(message)) return false;
    }
    return true;
  }

  bool on_client_message(const std::string& message) {
    char type = message[0];
    std::string body = message.substr(5);
    int64_t answer = answers_asked + 1;  // the answer this message is part of
    if (type == 'Q' || type == 'S' || type == 'F') ++answers_asked;
    if (type == 'P') return on_parse(message, body, answer);
    std::string text, statement;
    if (type == 'Q') {
      size_t pos = 0;
      text = c_string(body, pos);
    } else if (type == 'B') {
      size_t pos = 0;
      c_string(body, pos);  // portal
      statement = c_string(body, pos);
      auto it = statements.find(statement);
      if (it != statements.end()) text = it->second;
    } else {
      to_server += message;
      return true;
    }
    proxy->note_seen(type, text, statement);
    if (type == 'Q' && starts_with_ci(text, "BEGIN")) transaction.clear();
    Decision decision;
    int stalled_rule = -1;
    if (auto it = stalled_at_parse.find(statement); type == 'B' && it != stalled_at_parse.end()) {
      stalled_rule = it->second;
      stalled_at_parse.erase(it);
    }
    if (pending == Pending::kNone) {
      decision =
          proxy->decide(type, text, statement, /*at_parse=*/false, transaction, stalled_rule);
    }
    transaction.push_back({type, text, statement});
    return apply(decision, message, answer);
  }

  // A Parse takes the locks of the tables its statement names, in the client's transaction
  // when libpqxx prepares at first use: a stall that would fire at the statement's next Bind
  // must hold its lock before that, so it fires here, and that Bind is not its match again.
  bool on_parse(const std::string& message, const std::string& body, int64_t answer) {
    size_t pos = 0;
    std::string name = c_string(body, pos);
    std::string sql = c_string(body, pos);
    statements[name] = sql;
    Decision decision;
    if (pending == Pending::kNone) {
      decision = proxy->decide('B', sql, name, /*at_parse=*/true, transaction);
    }
    if (decision.rule >= 0) stalled_at_parse[name] = decision.rule;
    return apply(decision, message, answer);
  }

  bool apply(const Decision& decision, const std::string& message, int64_t answer) {
    if (decision.rule < 0) {
      to_server += message;
      return true;
    }
    // What the client sent before this message reaches the server first.
    if (!server_unwritable) write_all(server, to_server);
    switch (decision.what.fault) {
      case PgFault::kCutBefore:
        cut();
        return false;
      case PgFault::kCutAfter:
        to_server += message;
        pending = Pending::kCut;
        pending_answer = answer;
        pending_deadline = Clock::now() + std::chrono::seconds(30);
        return true;
      case PgFault::kTerminate:
        terminate(decision.rule);
        to_server += message;
        return true;
      case PgFault::kStall:
        if (take_lock(decision.rule, decision.what)) {
          pending = Pending::kRelease;
          pending_answer = answer;
          pending_deadline = Clock::now() + decision.what.stall_max;
        }
        to_server += message;
        return true;
    }
    return true;
  }

  void terminate(int rule) {
    try {
      pqxx::connection conn(proxy->upstream_url());
      pqxx::nontransaction tx(conn);
      // PostgreSQL 14+: waits (up to 10 s) until the backend has ended.
      auto r = tx.exec_params("SELECT pg_terminate_backend($1, 10000)", backend_pid);
      if (!r[0][0].as<bool>()) proxy->record_error(rule, "pg_terminate_backend returned false");
    } catch (const std::exception& e) {
      proxy->record_error(rule, std::string("terminate: ") + e.what());
    }
    wait_backend_gone();
  }

  bool take_lock(int rule, const PgFaultRule& what) {
    try {
      lock_conn = std::make_unique<pqxx::connection>(proxy->upstream_url());
      lock_tx = std::make_unique<pqxx::work>(*lock_conn);
      lock_tx->exec("SET LOCAL lock_timeout = '2s'");
      lock_tx->exec(what.stall_lock);
      return true;
    } catch (const std::exception& e) {
      proxy->record_error(rule, std::string("stall: ") + e.what());
      release_lock();
      return false;
    }
  }

  // False when the connection is over.
  bool on_server_bytes() {
    if (raw) {
      to_client += from_server;
      from_server.clear();
      return true;
    }
    while (from_server.size() >= 5) {
      uint32_t len = read_u32(from_server.data() + 1);
      if (len < 4 || len > kMaxMessage) return false;
      if (from_server.size() < len + 1) return true;
      char type = from_server[0];
      int64_t answer = answers_done + 1;
      if (type == 'K' && len >= 12)
        backend_pid = static_cast<int>(read_u32(from_server.data() + 5));
      if (type == 'Z') ++answers_done;
      if (pending == Pending::kCut && answer >= pending_answer) {
        from_server.erase(0, len + 1);
        if (type == 'Z') {
          cut();
          return false;
        }
        continue;
      }
      if (pending == Pending::kRelease && type == 'Z' && answer == pending_answer) {
        release_lock();
        pending = Pending::kNone;
      }
      to_client.append(from_server, 0, len + 1);
      from_server.erase(0, len + 1);
    }
    return true;
  }
};

PgFaultProxy::PgFaultProxy(std::string upstream_url) : upstream_url_(std::move(upstream_url)) {
  {
    pqxx::connection probe(upstream_url_);
    const char* host = probe.hostname();
    upstream_host_ = host ? host : "";
    upstream_port_ = std::stoi(probe.port());
    upstream_user_ = probe.username();
    upstream_database_ = probe.dbname();
  }
  listen_fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t addr_len = sizeof addr;
  if (listen_fd_ < 0 || bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      listen(listen_fd_, 128) != 0 ||
      getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &addr_len) != 0) {
    int err = errno;
    close_fd(listen_fd_);
    throw std::runtime_error(std::string("pg fault proxy: cannot listen: ") + std::strerror(err));
  }
  port_ = ntohs(addr.sin_port);
  stop_fd_ = eventfd(0, EFD_CLOEXEC);
  acceptor_ = std::thread([this] { accept_loop(); });
}

PgFaultProxy::~PgFaultProxy() {
  uint64_t one = 1;
  (void)!::write(stop_fd_, &one, sizeof one);
  acceptor_.join();
  cut_all();
  std::list<std::shared_ptr<Session>> sessions;
  {
    std::lock_guard lock(mutex_);
    sessions.swap(sessions_);
  }
  for (auto& s : sessions) s->thread.join();
  close_fd(listen_fd_);
  close_fd(stop_fd_);
}

std::string PgFaultProxy::url() const {
  return url(upstream_database_);
}

std::string PgFaultProxy::url(const std::string& database) const {
  return "postgresql://" + upstream_user_ + "@127.0.0.1:" + std::to_string(port_) + "/" + database;
}

void PgFaultProxy::accept_loop() {
  for (;;) {
    pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {stop_fd_, POLLIN, 0}};
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (fds[1].revents) return;
    int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    reap_finished();
    if (refusal() == PgRefusal::kClose) {
      ::close(fd);
      continue;
    }
    auto session = std::make_shared<Session>(this, fd);
    std::lock_guard lock(mutex_);
    sessions_.push_back(session);
    session->thread = std::thread([s = session.get()] { s->run(); });
  }
}

void PgFaultProxy::reap_finished() {
  std::list<std::shared_ptr<Session>> done;
  {
    std::lock_guard lock(mutex_);
    for (auto it = sessions_.begin(); it != sessions_.end();) {
      if ((*it)->finished) {
        done.push_back(*it);
        it = sessions_.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (auto& s : done) s->thread.join();
}

int PgFaultProxy::arm(PgFaultRule rule) {
  if (rule.fault == PgFault::kStall && rule.stall_lock.empty())
    throw std::invalid_argument("a stall rule needs stall_lock");
  std::lock_guard lock(mutex_);
  rules_.push_back(Armed{.rule = std::move(rule)});
  return static_cast<int>(rules_.size()) - 1;
}

void PgFaultProxy::disarm_all() {
  std::lock_guard lock(mutex_);
  for (auto& r : rules_) r.active = false;
}

int PgFaultProxy::fired(int rule) const {
  std::lock_guard lock(mutex_);
  return rules_.at(static_cast<size_t>(rule)).fired;
}

std::string PgFaultProxy::error(int rule) const {
  std::lock_guard lock(mutex_);
  return rules_.at(static_cast<size_t>(rule)).error;
}

void PgFaultProxy::record_error(int rule, const std::string& error) {
  std::lock_guard lock(mutex_);
  auto& e = rules_.at(static_cast<size_t>(rule)).error;
  if (e.empty()) e = error;
}

void PgFaultProxy::set_refusal(PgRefusal refusal) {
  std::lock_guard lock(mutex_);
  refusal_ = refusal;
}

PgRefusal PgFaultProxy::refusal() const {
  std::lock_guard lock(mutex_);
  return refusal_;
}

void PgFaultProxy::cut_all() {
  std::vector<std::shared_ptr<Session>> sessions;
  {
    std::lock_guard lock(mutex_);
    sessions.assign(sessions_.begin(), sessions_.end());
  }
  uint64_t one = 1;
  for (auto& s : sessions) (void)!::write(s->kill, &one, sizeof one);
  auto deadline = Clock::now() + std::chrono::seconds(30);
  for (auto& s : sessions) {
    while (!s->finished && Clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

int PgFaultProxy::seen(const PgMatch& match) const {
  std::lock_guard lock(mutex_);
  return static_cast<int>(std::count_if(seen_.begin(), seen_.end(), [&](const Message& s) {
    return matches(match, s.type, s.text, s.statement);
  }));
}

int PgFaultProxy::open_connections() const {
  std::lock_guard lock(mutex_);
  return static_cast<int>(std::count_if(sessions_.begin(), sessions_.end(),
                                        [](const auto& s) { return !s->finished; }));
}

void PgFaultProxy::note_seen(char type, const std::string& text, const std::string& statement) {
  std::lock_guard lock(mutex_);
  seen_.push_back(Message{type, text, statement});
}

PgFaultProxy::Decision PgFaultProxy::decide(char type, const std::string& text,
                                            const std::string& statement, bool at_parse,
                                            const std::vector<Message>& transaction, int exclude) {
  std::lock_guard lock(mutex_);
  for (size_t i = 0; i < rules_.size(); ++i) {
    auto& r = rules_[i];
    if (!r.active || static_cast<int>(i) == exclude) continue;
    if (at_parse && r.rule.fault != PgFault::kStall) continue;
    if (!matches(r.rule.match, type, text, statement)) continue;
    if (r.rule.after && std::none_of(transaction.begin(), transaction.end(), [&](const Message& m) {
          return matches(*r.rule.after, m.type, m.text, m.statement);
        })) {
      continue;
    }
    if (r.rule.times != 0 && r.fired >= r.rule.times) continue;
    // At a Parse a rule only fires; a match that it would let through is counted at the Bind.
    if (at_parse && r.matches + 1 <= r.rule.skip) continue;
    if (++r.matches <= r.rule.skip) continue;
    ++r.fired;
    return Decision{static_cast<int>(i), r.rule};
  }
  return {};
}

}  // namespace gpurent::testing
