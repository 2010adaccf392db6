// Faults a simulated node suffers on schedule (`gpurent-agent run --backend simulated
// --faults …`), so that tests and demos see the health rules and their consequences happen
// to a real agent: an XID error, a double-bit ECC error, thermal slowdown, a node that hangs.
#pragma once

#include <chrono>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace gpurent::agent {

struct SimulatedFault {
  enum class Kind {
    kXid,              // the kernel logs `NVRM: Xid (PCI:…): <xid>` for the GPU, once
    kDoubleBitEcc,     // the GPU counts a volatile and an aggregate double-bit ECC error
    kThermalSlowdown,  // the GPU runs at 94 °C with hw_thermal_slowdown active
    kHang,             // the node stops answering: no heartbeats any more
    kSlowGpu,          // the GPU computes at 40% of its siblings' speed (burn-ins show it)
    kNvlinkDown,       // the GPU's NVLinks are down: its peers reach it over PCIe
  };
  Kind kind = Kind::kXid;
  std::chrono::milliseconds at{0};  // after the agent started
  int gpu = 0;                      // the GPU index (not for kHang)
  int xid = 0;                      // kXid: the code

  bool operator==(const SimulatedFault&) const = default;
};

// "xid79@30s:gpu1,dbe@2m:gpu2,thermal@90s:gpu0,hang@10m,slow-gpu@0s:gpu3,nvlink-down@0s:gpu1":
// comma-separated faults, each a kind (`xid<1-999>`, `dbe`, `thermal`, `hang`, `slow-gpu`,
// `nvlink-down`), `@` and a time after start (`500ms`, `30s`,
// `2m`, `1h`), and for all but hang `:gpu<index>` (gpu0 when left out). Empty: none.
// Throws std::invalid_argument naming the fault that does not read.
std::vector<SimulatedFault> parse_fault_schedule(std::string_view text);

}  // namespace gpurent::agent
