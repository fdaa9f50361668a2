// The host-side parts of the descriptor (kernels/strategy.h): no CUDA, so bench/ plans with them everywhere.
#include <algorithm>

#include "kernels/strategy.h"
#include "model/bus_factor.h"

namespace arfit::kernels {

ByteCounts collective_byte_counts(Collective collective, std::int64_t count, int elem, int nranks) {
  const std::int64_t n = std::max(1, nranks);
  switch (collective) {
    case Collective::AllGather: return ByteCounts{count / n * elem, count * elem};
    case Collective::ReduceScatter: return ByteCounts{count * elem, count / n * elem};
    default: return ByteCounts{count * elem, count * elem};
  }
}

double StrategyDescriptor::bus_factor(int nranks) const { return arfit::bus_factor(collective, nranks); }

bool StrategyDescriptor::supports(FusionOp fusion) const {
  return std::find(fusions.begin(), fusions.end(), fusion) != fusions.end();
}

bool StrategyDescriptor::supports(const std::string& dtype) const {
  return std::find(dtypes.begin(), dtypes.end(), canonical_dtype(dtype)) != dtypes.end();
}

}  // namespace arfit::kernels
