// All-to-allv split generators: how the elements each rank sends are spread over the destinations.
//
// A grid's `splits` axis (--splits, or "splits" in a JSON spec) lists patterns; every all-to-allv case is
// one pattern at one size. Patterns (canonical spellings in brackets):
//   cyclic              rank i sends rank j a share 1 + ((i + j) mod n) of its elements: every rank sends and
//                       receives the same total, so all three effective sizes equal the size (the default,
//                       kept from earlier arbench versions)                                          [cyclic]
//   even                count / n to every rank: an all-to-all through MPI_Alltoallv / grouped send-recv [even]
//   dlrm:B:T:D:SEED     the DLRM embedding exchange (PARAM comms' all-to-allv file mode): T tables of
//                       dimension D, each on a rank drawn at random from SEED, batch B split evenly
//                       (floor(B/n) per rank); rank r sends floor(B/n)·T_r·D elements to every rank. The size
//                       axis does not apply: the tables set the size.                   [dlrm:2048:16:64:3]
//   zipf:EXP[:SEED]     destinations' popularity follows Zipf's law with exponent EXP over a seeded order
//                       of the ranks (MoE token routing to experts: a few ranks receive most); every rank
//                       sends the case's size                                                   [zipf:1.2:0]
//   hot:FRACTION[:RANK] every rank sends FRACTION of its elements to rank RANK (default 0), the rest evenly
//                       to the others (one rank receives most)                                  [hot:0.6:0]
// Each numeric field takes one value, a '/'-separated list (dlrm:1024/4096:16:64:1) or an integer range
// LO..HI (seeds: dlrm:2048:16:64:1..8); lists and ranges expand to one pattern per value.
//
// With n ranks, DLRM splits send unevenly and receive evenly, zipf and hot-spot splits send evenly and
// receive unevenly: the effective sizes (model/alltoallv.h) then differ (sum < max_of_sum < max_of_max as
// soon as one rank is busier than the mean), which is what lets `arfit eval --protocol alltoallv` tell the
// three modes apart. The recorded `splits` column is the DLRM "B,T0-T1-...,D" string for dlrm patterns and
// the byte matrix "M00-M01-.../M10-..." for the others (both parse back with parse_alltoallv_split).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bench/grid.h"
#include "kernels/strategy.h"  // ByteCounts (no MPI here: the split code also serves the spec fuzzer)

namespace arfit::bench {

struct SplitPattern {
  enum class Kind { Cyclic, Even, Dlrm, Zipf, HotSpot };
  Kind kind = Kind::Cyclic;
  std::int64_t batch = 0, tables = 0, dim = 0;  // dlrm
  std::uint64_t seed = 0;                       // dlrm, zipf
  double exponent = 0;                          // zipf
  double fraction = 0;                          // hot
  int hot_rank = 0;                             // hot

  // The size comes from the tables (dlrm), not from the grid's size axis.
  bool sized_by_tables() const { return kind == Kind::Dlrm; }
  std::string to_string() const;  // canonical: parse_split_patterns(to_string()) gives this pattern back
};

// Parses a comma-separated pattern list, expanding '/' lists and LO..HI ranges, in order, duplicates dropped.
// Throws GridError naming `option`.
std::vector<SplitPattern> parse_split_patterns(const std::string& text, const std::string& option);

using SplitCounts = std::vector<std::vector<std::int64_t>>;  // [i][j] = elements rank i sends to rank j

// Elements per (sender, destination) on n ranks; `count` is the mean number of elements a rank sends (ignored
// by dlrm). Rows are apportioned exactly (largest remainder), so every sized pattern's rows sum to `count`.
SplitCounts split_counts(const SplitPattern& p, std::int64_t count, int n);
// DLRM: tables per rank drawn from the seed (T tables, each on a uniformly random rank).
std::vector<std::int64_t> dlrm_tables_per_rank(const SplitPattern& p, int n);
// DLRM: elements a rank sends on average, floor(B/n)·T·D (the case's count).
std::int64_t dlrm_mean_count(const SplitPattern& p, int n);

// Descriptor::byte_counts of an all-to-allv: no rank sends or receives more than n times the mean (a dlrm
// split with every table on one rank; a hot spot receiving everything), which bounds the memory estimate.
kernels::ByteCounts alltoallv_byte_bound(std::int64_t count, int elem, int nranks);

// A case's split (Case::split, empty = cyclic) and the string its sample records in `splits`.
SplitCounts alltoallv_case_counts(const Case& c);
std::string alltoallv_recorded_splits(const Case& c);

}  // namespace arfit::bench
