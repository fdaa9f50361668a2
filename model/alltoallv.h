// all-to-allv: uneven per-rank splits reduced to an effective all-to-all size, so the all-to-all model
// (whose size is nccl-tests' per-rank buffer: bytes each rank sends, itself included) predicts them.
//
// Split strings:
//   "B,T0-T1-...-T(n-1),D"  the DLRM embedding exchange (PARAM comms' all-to-allv file mode): batch B split
//                           evenly over n ranks (floor(B/n) samples per rank, as the DLRM paper's code does),
//                           rank r owns T_r tables of dimension D, elements of `element_bytes` (default 4,
//                           fp32). Rank r sends floor(B/n)·T_r·D elements to every rank and receives
//                           floor(B/n)·T_j·D from every rank j.
//   "S0-S1-...-S(n-1)"      bytes each rank sends in total, spread evenly over the destinations.
//   "M00-M01-.../M10-M11-.../..."  the full matrix: M_ij = bytes rank i sends to rank j (self included), one
//                           '/'-separated row per sender (arbench's generated skewed and hot-spot splits).
// Effective sizes, normalised so that a uniform split gives the all-to-all's own size S:
//   sum         Σ_r sent_r / n                       (same total volume as a uniform all-to-all)
//   max_of_max  max_r max(sent_r, recv_r)            (the busiest direction of the busiest rank)
//   max_of_sum  max_r (sent_r + recv_r) / 2          (the busiest rank, both directions)
// The DLRM paper's own formulas (paper_effective_bytes) leave each rank's traffic to itself out and are not
// normalised: a uniform split gives S under `sum`, (n−1)/n·S under max_of_max and 2(n−1)/n·S under
// max_of_sum. arfit keeps them only as the seed baseline of `arfit eval --protocol alltoallv`.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace arfit {

enum class EffectiveMode { Sum, MaxOfMax, MaxOfSum };

std::string to_string(EffectiveMode m);           // "sum", "max_of_max", "max_of_sum"
EffectiveMode parse_effective_mode(const std::string& s);  // throws std::invalid_argument
const std::vector<EffectiveMode>& all_effective_modes();

// Per rank, what the effective sizes need of the byte matrix M (M_ij = bytes rank i sends to rank j): its row sums,
// column sums and diagonal. The matrix itself is not kept: the per-rank and DLRM forms give every rank one value
// for every destination, and an n x n matrix of them took 0.8 GB for 10,000 ranks (`predict --splits`; a 65,536-rank
// split fits in one argument).
struct AllToAllvSplit {
  std::vector<double> sent_bytes, received_bytes, self_bytes;  // row sums, column sums, diagonal (self included)
  int nranks() const { return static_cast<int>(sent_bytes.size()); }
  double sent(int r) const { return sent_bytes[r]; }
  double received(int r) const { return received_bytes[r]; }
  double self(int r) const { return self_bytes[r]; }
};

// Throws std::invalid_argument naming the problem.
AllToAllvSplit parse_alltoallv_split(const std::string& text, double element_bytes = 4);
double effective_alltoall_bytes(const AllToAllvSplit& split, EffectiveMode mode);
// The DLRM paper's effective sizes (see above): self traffic excluded, not normalised.
double paper_effective_bytes(const AllToAllvSplit& split, EffectiveMode mode);

// The matrix form of a split: bytes[i][j] = bytes rank i sends to rank j, rows joined by '/', entries by '-'.
// parse_alltoallv_split(format_alltoallv_matrix(m)) gives m back.
std::string format_alltoallv_matrix(const std::vector<std::vector<std::int64_t>>& bytes);

}  // namespace arfit
