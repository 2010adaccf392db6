// A slow-loris client: many connections to one server, each sending a request's headers a
// byte at a time and never finishing them, reopening any the server closes. The server must
// keep serving everyone else meanwhile (and close the slow ones at its read timeout).
#pragma once

#include <atomic>
#include <chrono>
#include <thread>

namespace gpurent::testing::chaos {

class SlowLoris {
 public:
  // Opens `connections` to 127.0.0.1:port and feeds each one byte every `interval`.
  SlowLoris(int port, int connections, std::chrono::milliseconds interval);
  ~SlowLoris();  // closes them all
  SlowLoris(const SlowLoris&) = delete;
  SlowLoris& operator=(const SlowLoris&) = delete;

  int opened() const { return opened_.load(); }            // in all, reopened ones counted
  int closed_by_server() const { return closed_.load(); }  // EOF, reset or refused write
  int refused() const { return refused_.load(); }          // connects that failed

 private:
  void run(int port, int connections, std::chrono::milliseconds interval);

  std::atomic<bool> stop_{false};
  std::atomic<int> opened_{0};
  std::atomic<int> closed_{0};
  std::atomic<int> refused_{0};
  std::thread thread_;
};

}  // namespace gpurent::testing::chaos
