// sd_notify's datagrams, and the watchdog's thread.
#include "core/service_notify.h"

#include "core/log.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>

namespace gpurent::service {
namespace {

std::optional<long long> env_number(const char* name) {
  const char* text = std::getenv(name);
  if (!text || !*text) return std::nullopt;
  long long value = 0;
  auto end = text + std::strlen(text);
  auto [ptr, ec] = std::from_chars(text, end, value);
  if (ec != std::errc() || ptr != end) return std::nullopt;
  return value;
}

}  // namespace

bool notify(const std::string& state) {
  const char* path = std::getenv("NOTIFY_SOCKET");
  if (!path || !*path) return false;
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::size_t length = std::strlen(path);
  // "@name" is a socket in the abstract namespace, written with a leading NUL.
  if (length >= sizeof(address.sun_path) || (path[0] != '/' && path[0] != '@')) return false;
  std::memcpy(address.sun_path, path, length);
  if (path[0] == '@') address.sun_path[0] = '\0';
  int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  auto size = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + length);
  ssize_t sent = ::sendto(fd, state.data(), state.size(), MSG_NOSIGNAL,
                          reinterpret_cast<const sockaddr*>(&address), size);
  int error = errno;
  ::close(fd);
  if (sent != static_cast<ssize_t>(state.size())) {
    log::warn("systemd notification not sent to {}: {}", path, std::strerror(error));
    return false;
  }
  return true;
}

std::optional<std::chrono::microseconds> watchdog_interval() {
  auto usec = env_number("WATCHDOG_USEC");
  if (!usec || *usec <= 0) return std::nullopt;
  // WATCHDOG_PID names the process meant when systemd runs a wrapper first.
  if (auto pid = env_number("WATCHDOG_PID"); pid && *pid != ::getpid()) return std::nullopt;
  return std::chrono::microseconds(*usec);
}

Watchdog::Watchdog(std::function<bool(std::chrono::milliseconds)> alive)
    : alive_(std::move(alive)) {
  auto interval = watchdog_interval();
  if (!interval) return;
  auto quarter = std::chrono::duration_cast<std::chrono::milliseconds>(*interval / 4);
  if (quarter < std::chrono::milliseconds(1)) quarter = std::chrono::milliseconds(1);
  thread_ = std::thread([this, quarter] {
    std::unique_lock lock(mutex_);
    while (!stopping_) {
      lock.unlock();
      if (alive_(quarter)) {
        notify("WATCHDOG=1");
      } else {
        log::error(
            "watchdog: the service did not answer within {} ms; not telling systemd "
            "it is alive",
            quarter.count());
      }
      lock.lock();
      wake_.wait_for(lock, quarter, [this] { return stopping_; });
    }
  });
}

Watchdog::~Watchdog() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

}  // namespace gpurent::service
