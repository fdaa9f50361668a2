#include "model/nccl_variant.h"

#include <cctype>

#include "model/sample.h"

namespace arfit {

std::optional<NcclVariant> parse_nccl_variant(const std::string& strategy) {
  std::string s;
  for (char c : strategy) s += (c == '-' || c == ':' || c == '/') ? '_' : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (s.rfind("nccl_", 0) != 0) return std::nullopt;
  const std::string rest = s.substr(5);
  static const char* algos[] = {"collnet_direct", "collnet_chain", "nvls_tree", "nvls", "tree", "ring", "pat"};
  static const char* protos[] = {"ll128", "ll", "simple"};
  for (const char* a : algos) {
    const std::string as = a;
    if (rest.rfind(as + "_", 0) != 0) continue;
    const std::string p = rest.substr(as.size() + 1);
    for (const char* pr : protos)
      if (p == pr) return NcclVariant{strategy, as, p};
  }
  return std::nullopt;
}

bool nccl_runs_across_nodes(const std::string& strategy) {
  if (strategy == strategy::kNccl || strategy == strategy::kNcclSymmetric) return true;
  const std::optional<NcclVariant> v = parse_nccl_variant(strategy);
  return v && v->algorithm != "nvls";
}

}  // namespace arfit
