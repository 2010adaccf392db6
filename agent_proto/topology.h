// GPU interconnect topology: the `nvidia-smi topo -m` parser and the matrices declared shapes
// imply.
#pragma once

#include <nlohmann/json.hpp>

#include <cstddef>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace gpurent::topology {

// The largest node we accept; bigger matrices are refused as implausible.
inline constexpr int kMaxGpus = 64;
// `topo -m` of a 64-GPU node with NICs is a few tens of KiB; more is not nvidia-smi output.
inline constexpr std::size_t kMaxTopoTextBytes = 256 * 1024;

// A GPU-to-GPU link kind exactly as `nvidia-smi topo -m` prints it: "X" (self), "NV<n>"
// (n = 1..99 bonded NVLinks), "PIX", "PXB", "PHB", "NODE", "SYS", and the legacy "SOC".
bool is_link_kind(std::string_view kind);
// "NV<n>".
bool is_nvlink(std::string_view kind);
// n for "NV<n>", else 0.
int nvlink_count(std::string_view kind);

struct Matrix {
  int gpus = 0;
  std::vector<std::vector<std::string>> links;  // gpus x gpus, links[i][i] == "X", symmetric

  // True when every pair of the given GPU indices is NVLink-connected (a single GPU or an
  // empty set: true). An index outside 0..gpus-1 makes it false; a repeated index is ignored.
  bool all_nvlink(const std::vector<int>& subset) const;

  bool operator==(const Matrix&) const = default;
};

// Bad topology input; what() is one human sentence, shown to admins in a 400.
class ParseError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Parses `nvidia-smi topo -m` output into the GPU x GPU matrix; NIC rows and columns and the
// affinity columns are dropped. Throws ParseError saying what is wrong, quoting nvidia-smi's
// first line when it printed an error instead of a matrix.
Matrix parse_topo_m(std::string_view text);

// How the GPUs of a node are declared to be connected, before its agent reports the real matrix.
enum class Interconnect { kNvswitch, kNvlinkPairs, kPcie };

// "nvswitch", "nvlink-pairs", "pcie".
std::string_view to_string(Interconnect shape);
std::optional<Interconnect> parse_interconnect(std::string_view name);

// The matrix a node gets from its declared shape until its agent reports the real one:
//  kNvswitch: every pair is `nvlink_kind` (e.g. "NV18" on Hopper HGX, "NV12" on Ampere).
//  kNvlinkPairs: GPUs (0,1), (2,3), ... are bridged with `nvlink_kind` (e.g. "NV4"); other
//    pairs are PCIe: "NODE" when both GPUs are in the same half of the node (index < gpus/2),
//    else "SYS".
//  kPcie: no NVLink: "NODE" within a half, "SYS" across halves (for 1-2 GPUs: "NODE");
//    `nvlink_kind` is not used.
// Throws std::invalid_argument for gpu_count < 1 or > kMaxGpus, an odd count with
// kNvlinkPairs, or an nvlink_kind that is not NV<n> where one is needed.
Matrix declared_matrix(Interconnect shape, int gpu_count, std::string_view nvlink_kind);

// {"gpus": N, "links": [["X","NV18",...],...]}.
nlohmann::json to_json(const Matrix& matrix);
// The reverse of to_json; validates like the parser and throws ParseError.
Matrix matrix_from_json(const nlohmann::json& json);

}  // namespace gpurent::topology
