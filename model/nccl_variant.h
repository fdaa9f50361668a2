// NCCL's own strategies: `NCCL` (NCCL choosing), `NCCL_SYMMETRIC`, and forced algorithm/protocol variants named
// NCCL_<algorithm>_<protocol> (NCCL_ALGO / NCCL_PROTO runs, e.g. NCCL_RING_LL128). codegen's nccl-tuner writes
// rules for the variants; predict's across-nodes rule (model/model_set.cpp) asks which of them cross nodes.
#pragma once

#include <optional>
#include <string>

namespace arfit {

struct NcclVariant {
  std::string strategy;   // as in the model set
  std::string algorithm;  // tree|ring|collnet_direct|collnet_chain|nvls|nvls_tree|pat
  std::string protocol;   // ll|ll128|simple
};
// nullopt when the name is not NCCL_<algo>_<proto> (case-insensitive; '_', '-', ':' or '/' separate).
std::optional<NcclVariant> parse_nccl_variant(const std::string& strategy);

// Whether `strategy` is one of NCCL's own that runs across nodes by construction: NCCL, NCCL_SYMMETRIC, or a
// forced variant whose algorithm spans nodes (ring, tree, PAT, CollNet, NVLS+tree). Forced NVLS alone is not: it
// needs one NVLink domain (a node, or a multi-node NVLink rack), so like any other strategy it crosses nodes only
// where a machine measured it there.
bool nccl_runs_across_nodes(const std::string& strategy);

}  // namespace arfit
