// NotifyListener: a dedicated LISTEN connection, waited on with poll(), rebuilt whenever
// it breaks.
#include "core/notify_listener.h"

#include "core/log.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <memory>
#include <stdexcept>
#include <system_error>

namespace gpurent {
namespace {

constexpr const char* kApplicationName = "gpurent_listener";
// How long one wait for notifications lasts at most. A notification, a closed socket and
// stop() all end the wait at once; this only bounds how long a state the socket does not
// signal goes unchecked. Long enough that StopIsPromptAndIdempotent fails if stop() ever
// has to wait it out.
constexpr int kPollMillis = 5000;
constexpr const char* kNotifySql = "SELECT pg_notify($1, $2)";

// Lower-case identifiers only: NOTIFY names channels by string and LISTEN by (quoted)
// identifier, so anything that would fold or need escaping invites a silent mismatch.
bool valid_channel(std::string_view c) {
  auto lower_or_underscore = [](char ch) { return (ch >= 'a' && ch <= 'z') || ch == '_'; };
  if (c.empty() || c.size() > 63 || !lower_or_underscore(c[0])) return false;
  for (char ch : c)
    if (!lower_or_underscore(ch) && !(ch >= '0' && ch <= '9')) return false;
  return true;
}

// The URL plus what the listener's session needs: a name that shows in pg_stat_activity,
// so operators (and tests) can find it, and a bounded connect, so stop() is not held up
// by an unreachable server.
std::string listener_conninfo(const std::string& url) {
  return conninfo_with(conninfo_with_default(url, "connect_timeout", "2"),  // libpq's minimum
                       "application_name", kApplicationName);
}

// libpq can echo parts of a malformed connection string in its errors; the password
// (URL userinfo or a password= key) must never reach the log.
std::string redact(std::string message, const std::string& url) {
  std::vector<std::string> secrets;
  if (auto scheme = url.find("://"); scheme != std::string::npos) {
    auto start = scheme + 3;
    auto at = url.find('@', start);
    auto colon = url.find(':', start);
    if (at != std::string::npos && colon < at && url.find('/', start) > at)
      secrets.push_back(url.substr(colon + 1, at - colon - 1));
  }
  for (auto p = url.find("password="); p != std::string::npos; p = url.find("password=", p)) {
    p += 9;
    secrets.push_back(url.substr(p, url.find_first_of("& ", p) - p));
  }
  for (const auto& secret : secrets) {
    if (secret.empty()) continue;
    for (auto p = message.find(secret); p != std::string::npos; p = message.find(secret, p + 3))
      message.replace(p, secret.size(), "***");
  }
  return message;
}

// libpqxx 6 dispatches notifications to receiver objects; this one forwards to a
// subscriber's callback and keeps its exceptions from reaching libpqxx.
class Receiver final : public pqxx::notification_receiver {
 public:
  Receiver(pqxx::connection_base& conn, const std::string& channel,
           const std::function<void(const std::string&)>& on_notify)
      : pqxx::notification_receiver(conn, channel), on_notify_(on_notify) {}

  void operator()(const std::string& payload, int /*backend_pid*/) override {
    try {
      on_notify_(payload);
    } catch (const std::exception& e) {
      log::error("notify listener: subscriber to '{}' threw: {}", channel(), e.what());
    } catch (...) {
      log::error("notify listener: subscriber to '{}' threw a non-exception", channel());
    }
  }

 private:
  const std::function<void(const std::string&)>& on_notify_;
};

// One connection's lifetime: its receivers go first, and the socket is dropped before
// they go so their UNLISTEN does not make libpqxx reconnect a dead connection to send it.
struct Session {
  explicit Session(const std::string& conninfo) : conn(conninfo) {}
  ~Session() {
    conn.disconnect();
    receivers.clear();
  }
  pqxx::connection conn;
  std::vector<std::unique_ptr<Receiver>> receivers;
};

}  // namespace

NotifyListener::NotifyListener(Options options)
    : options_(std::move(options)), wake_fd_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {
  if (wake_fd_ < 0) throw std::system_error(errno, std::generic_category(), "eventfd");
}

NotifyListener::~NotifyListener() {
  stop();
  ::close(wake_fd_);
}

void NotifyListener::subscribe(std::string channel,
                               std::function<void(const std::string& payload)> on_notify) {
  if (!valid_channel(channel))
    throw std::invalid_argument("notify channel '" + channel +
                                "' must match [a-z_][a-z0-9_]{0,62}");
  if (started_) throw std::logic_error("NotifyListener::subscribe after start()");
  subscriptions_.push_back({std::move(channel), std::move(on_notify)});
}

void NotifyListener::on_connected(std::function<void()> callback) {
  if (started_) throw std::logic_error("NotifyListener::on_connected after start()");
  on_connected_.push_back(std::move(callback));
}

void NotifyListener::start() {
  if (started_) throw std::logic_error("NotifyListener::start called twice");
  started_ = true;
  thread_ = std::thread([this] { run(); });
}

void NotifyListener::stop() {
  {
    std::lock_guard lock(stop_mutex_);
    stopping_ = true;
  }
  stop_cv_.notify_all();
  std::uint64_t one = 1;
  [[maybe_unused]] auto written = ::write(wake_fd_, &one, sizeof one);
  if (thread_.joinable()) thread_.join();
}

void NotifyListener::run() {
  // A lost connection and the first failed reconnect are warnings; further failures of the
  // same outage (one every reconnect_delay) are debug lines.
  bool failing = false;
  while (!stopping_) {
    try {
      listen_until_stopped_or_broken();
    } catch (const std::exception& e) {
      bool repeat = failing && !connected_;
      log::at(repeat ? log::Level::kDebug : log::Level::kWarn,
              "notify listener: {} ({}); retrying in {} ms",
              connected_ ? "connection lost" : "cannot connect", redact(e.what(), options_.url),
              options_.reconnect_delay.count());
      failing = !connected_;
    }
    connected_ = false;
    std::unique_lock lock(stop_mutex_);
    stop_cv_.wait_for(lock, options_.reconnect_delay, [this] { return stopping_.load(); });
  }
}

bool NotifyListener::caught_up() const {
  if (!connected_.load()) return false;
  int fd = socket_fd_.load();
  if (fd < 0) return false;
  // Unread bytes (or an error) on the socket: something announced has not been delivered.
  pollfd p{fd, POLLIN, 0};
  if (::poll(&p, 1, 0) != 0) return false;
  // Read after the socket: bytes it no longer holds are being delivered right now.
  return !delivering_.load();
}

void NotifyListener::listen_until_stopped_or_broken() {
  delivering_ = true;
  struct Ended {
    NotifyListener& l;
    ~Ended() {
      l.socket_fd_ = -1;
      l.delivering_ = true;
    }
  } ended{*this};
  Session session(listener_conninfo(options_.url));
  // Each receiver LISTENs (channel quoted as an identifier) as it registers.
  for (const auto& s : subscriptions_)
    session.receivers.push_back(std::make_unique<Receiver>(session.conn, s.channel, s.on_notify));
  // libpqxx swallows a connection lost during LISTEN; without this we would claim to listen.
  if (!session.conn.is_open()) throw pqxx::broken_connection("connection lost during LISTEN");

  socket_fd_ = session.conn.sock();
  connected_ = true;
  if (connections_total_++ > 0) {
    ++reconnects_total_;
    log::info("notify listener: reconnected");
  }
  // Notifications that arrived meanwhile wait in libpq's buffer until await_notification.
  for (const auto& callback : on_connected_) {
    try {
      callback();
    } catch (const std::exception& e) {
      log::error("notify listener: on_connected callback threw: {}", e.what());
    } catch (...) {
      log::error("notify listener: on_connected callback threw a non-exception");
    }
  }

  while (!stopping_) {
    // await_notification would quietly re-open a dead connection (libpqxx 6 "reactivation")
    // and skip on_connected; ending the session instead makes the reconnect visible.
    if (!session.conn.is_open()) throw pqxx::broken_connection("connection lost");
    // Deliver what has arrived (get_notifs throws broken_connection on a dead socket), then
    // sleep until the socket has more, stop() writes the wake descriptor, or the poll
    // interval passes. await_notification cannot be woken, so stopping waited for it.
    delivering_ = true;
    notifications_total_ += static_cast<std::uint64_t>(session.conn.get_notifs());
    delivering_ = false;
    pollfd fds[2] = {{session.conn.sock(), POLLIN, 0}, {wake_fd_, POLLIN, 0}};
    ::poll(fds, 2, kPollMillis);
  }
}

void notify(pqxx::transaction_base& tx, std::string_view channel, std::string_view payload) {
  tx.exec_params(kNotifySql, std::string(channel), std::string(payload));
}

void notify(Tx& tx, std::string_view channel, std::string_view payload) {
  static constexpr Statement kNotify = {"notify", kNotifySql};
  tx.exec(kNotify, std::string(channel), std::string(payload));
}

}  // namespace gpurent
