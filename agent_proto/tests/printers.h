// How GoogleTest prints the protocol's telemetry values in failure messages: as the JSON the
// wire carries. One definition for every test file, so they can share a unity batch.
#pragma once

#include "agent_proto/telemetry.h"

#include <ostream>

namespace gpurent::agent_proto {

inline void PrintTo(const GpuTelemetry& gpu, std::ostream* os) {
  *os << to_json(gpu).dump();
}

inline void PrintTo(const XidEvent& event, std::ostream* os) {
  *os << to_json(event).dump();
}

}  // namespace gpurent::agent_proto
