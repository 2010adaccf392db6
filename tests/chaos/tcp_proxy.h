// A TCP forwarder between the simulated agents and the replicas' agent listeners, so the suite
// can drop every agent connection at once (the network between a fleet and its control plane
// failing) while the agents and the servers stay up. Bytes pass through untouched (the TLS is
// end to end); each new connection goes to the next upstream that accepts it.
#pragma once

#include <atomic>
#include <functional>
#include <thread>
#include <vector>

namespace gpurent::testing::chaos {

class TcpProxy {
 public:
  // `upstreams` is asked at each accept: the ports to try, in turn, for that connection.
  explicit TcpProxy(std::function<std::vector<int>()> upstreams);
  ~TcpProxy();
  TcpProxy(const TcpProxy&) = delete;
  TcpProxy& operator=(const TcpProxy&) = delete;

  int port() const { return port_; }
  // Resets every connection now open, both sides (RST, not a polite close): what a network
  // failure looks like to both ends. Returns how many were cut.
  int cut_all();
  int open_connections() const { return open_.load(); }

 private:
  struct Pair {
    int down = -1;  // the agent's side
    int up = -1;    // the server's side
  };
  void run();
  void accept_one();

  std::function<std::vector<int>()> upstreams_;
  int listen_fd_ = -1;
  int wake_[2] = {-1, -1};  // a pipe: stop() and cut_all() wake the poll loop
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> cut_requests_{0};
  std::atomic<int> cut_done_{0};
  std::atomic<int> last_cut_{0};
  std::atomic<int> open_{0};
  std::vector<Pair> pairs_;  // the poll thread's; cut_all() only asks it to act
  std::thread thread_;
};

}  // namespace gpurent::testing::chaos
